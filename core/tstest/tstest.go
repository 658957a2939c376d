// Package tstest holds what the tests of several packages share. WaitFor is their one way to
// wait for an observable condition: it polls a check until it passes or a bound runs out,
// instead of sleeping a fixed time. Nothing but tests imports it.
package tstest

import (
	"testing"
	"time"
)

// WaitFor calls check until it returns nil, and fails t with check's last error once
// within has passed. The first call is at once; then the wait between calls grows from
// 1 ms to 50 ms, so a condition that holds soon is seen soon.
func WaitFor(t testing.TB, within time.Duration, check func() error) {
	t.Helper()
	if err := Poll(within, check); err != nil {
		t.Fatalf("waited %v: %v", within, err)
	}
}

// Poll is WaitFor without a test: it returns check's last error once within has passed.
func Poll(within time.Duration, check func() error) error {
	deadline := time.Now().Add(within)
	pause := time.Millisecond
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(pause)
		pause = min(pause*2, 50*time.Millisecond)
	}
}
