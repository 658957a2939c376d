package seatbelt

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// FollowGrace is how long Stop waits for the log's late lines after a command ends.
const FollowGrace = 500 * time.Millisecond

// followReady is how long a follower waits for `log stream` to be ready.
const followReady = 10 * time.Second

// Follower collects one run's denials from the unified log while its command runs.
type Follower struct {
	cmd     *exec.Cmd
	marker  string
	grace   time.Duration
	mu      sync.Mutex
	denials []Denial
	read    chan struct{} // closed when stdout is drained
}

// ErrNotAdmin says that the log refused to stream: reading it needs an administrator.
var ErrNotAdmin = errors.New("reading the unified log needs an administrator account")

// startFollower starts name with args, a `log stream --style ndjson` or a stand-in, and returns
// once its first line (the stream's "Filtering the log data ..." header) has arrived, so that
// no denial of a command started afterwards can be missed.
func startFollower(ctx context.Context, marker, name string, args []string, ready, grace time.Duration) (*Follower, error) {
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	f := &Follower{cmd: cmd, marker: marker, grace: grace, read: make(chan struct{})}
	first := make(chan struct{})
	go f.collect(out, first)
	timer := time.NewTimer(ready)
	defer timer.Stop()
	select {
	case <-first:
		return f, nil
	case <-f.read:
		// The stream ended before its header: it refused to run.
		cmd.Wait()
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(strings.ToLower(msg), "admin") {
			return nil, fmt.Errorf("%w (%s)", ErrNotAdmin, msg)
		}
		return nil, fmt.Errorf("%s ended before it was ready: %s", name, describeExit(cmd, msg))
	case <-timer.C:
	case <-ctx.Done():
	}
	cmd.Process.Kill()
	<-f.read
	cmd.Wait()
	return nil, fmt.Errorf("%s was not ready within %s", name, ready)
}

func (f *Follower) collect(r io.Reader, first chan<- struct{}) {
	defer close(f.read)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	signalled := false
	for sc.Scan() {
		if !signalled {
			signalled = true
			close(first)
		}
		if d, ok := ParseLogLine(sc.Bytes(), f.marker); ok {
			f.mu.Lock()
			f.denials = append(f.denials, d)
			f.mu.Unlock()
		}
	}
	io.Copy(io.Discard, r) // a line too long for the scanner must not block the stream
}

// Stop waits a short grace for late lines, ends the stream and returns every denial it saw.
func (f *Follower) Stop() []Denial {
	time.Sleep(f.grace)
	f.cmd.Process.Kill()
	<-f.read
	f.cmd.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Denial(nil), f.denials...)
}

func describeExit(cmd *exec.Cmd, msg string) string {
	state := "no exit status"
	if cmd.ProcessState != nil {
		state = cmd.ProcessState.String()
	}
	if msg == "" {
		return state
	}
	return state + ": " + msg
}
