package seatbelt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeLog stands in for `log stream`: it waits, prints the header, then the fixture lines
// with a pause between, and keeps streaming until it is killed.
func fakeLog(t *testing.T, script string) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

func TestFollowerWaitsForReadyAndCollects(t *testing.T) {
	fixture, err := filepath.Abs(filepath.Join("testdata", "denials.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	exe := fakeLog(t, `sleep 0.3
head -n 1 "$1"
sleep 0.2
tail -n +2 "$1"
exec sleep 60
`)
	start := time.Now()
	f, err := startFollower(context.Background(), testMarker, exe, []string{fixture}, 5*time.Second, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("startFollower returned after %s, before the stream was ready", waited)
	}
	time.Sleep(400 * time.Millisecond) // the "command" runs
	got := f.Stop()
	if want := fixtureDenials(t); len(got) != len(want) {
		t.Errorf("collected %d denials, want %d", len(got), len(want))
	}
}

func TestFollowerNotAdmin(t *testing.T) {
	exe := fakeLog(t, `echo "log: Must be admin to run 'stream' command" >&2
exit 64
`)
	_, err := startFollower(context.Background(), testMarker, exe, nil, 5*time.Second, 0)
	if !errors.Is(err, ErrNotAdmin) {
		t.Fatalf("err = %v, want ErrNotAdmin", err)
	}
	line := NotReportedLine(err)
	if !strings.HasPrefix(line, "openworker sandbox: Seatbelt's denials are not reported for this run: reading the unified log needs an administrator account (log: Must be admin") {
		t.Errorf("line %q", line)
	}
}

func TestFollowerNeverReady(t *testing.T) {
	exe := fakeLog(t, "exec sleep 60\n")
	start := time.Now()
	_, err := startFollower(context.Background(), testMarker, exe, nil, 200*time.Millisecond, 0)
	if err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("err = %v, want a not-ready error", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("a silent stream held startFollower past its timeout")
	}
}

func TestFollowerExitsEarly(t *testing.T) {
	exe := fakeLog(t, "echo 'log: predicate is invalid' >&2\nexit 65\n")
	_, err := startFollower(context.Background(), testMarker, exe, nil, 5*time.Second, 0)
	if err == nil || !strings.Contains(err.Error(), "predicate is invalid") || errors.Is(err, ErrNotAdmin) {
		t.Fatalf("err = %v", err)
	}
}
