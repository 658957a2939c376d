package seatbelt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

const otherMarker = "openworker-0000000000000000000000aa"

// standIn stands in for `log stream`: a script that prints log's header and then copies a FIFO
// the test writes kernel lines into, as the log would deliver them. Its Provoke writes the
// sentinel's line after lag, as the real log delivers a denial some time after it happened;
// a negative lag never delivers it. Lines given to late go out just before the sentinel's.
type standIn struct {
	t      testing.TB
	fifo   *os.File
	starts string // a file the script appends a line to each time it starts
	f      *LogFollower

	mu   sync.Mutex
	lag  time.Duration
	late [][]byte
}

func newStandIn(t testing.TB, script string) *standIn {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "log.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Read-write, so that opening never blocks and the stream's reader never sees EOF
	// between the test's writes.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	s := &standIn{t: t, fifo: w, starts: filepath.Join(dir, "starts")}
	if script == "" {
		script = `echo started >> "$2"
echo 'Filtering the log data using "processID == 0 AND eventMessage CONTAINS \"openworker-\""'
exec cat "$1"
`
	}
	exe := filepath.Join(dir, "log")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	s.f = &LogFollower{
		Command:     []string{exe, fifo, s.starts},
		Provoke:     s.provoke,
		SentinelDir: "/private/var/folders/xy/T",
		Ready:       5 * time.Second,
		Timeout:     5 * time.Second,
	}
	t.Cleanup(s.f.Close)
	return s
}

// kernelLine is a line as `log stream --style ndjson` prints a kernel Seatbelt denial.
func kernelLine(marker, process, op, target string) []byte {
	b, _ := json.Marshal(map[string]any{
		"eventType": "logEvent", "processImagePath": "/kernel", "processID": 0,
		"senderImagePath": "/System/Library/Extensions/Sandbox.kext/Contents/MacOS/Sandbox",
		"eventMessage":    "Sandbox: " + process + "(4242) deny(1) " + op + " " + target + "\n" + marker,
		"timestamp":       "2025-03-04 10:11:12.345678-0800",
	})
	return append(b, '\n')
}

func (s *standIn) write(line []byte) {
	if _, err := s.fifo.Write(line); err != nil {
		s.t.Error(err)
	}
}

func (s *standIn) deny(marker, op, target string) { s.write(kernelLine(marker, "cat", op, target)) }

func (s *standIn) setLag(d time.Duration) {
	s.mu.Lock()
	s.lag = d
	s.mu.Unlock()
}

func (s *standIn) provoke(_ context.Context, marker, target string) error {
	s.mu.Lock()
	lag, late := s.lag, s.late
	s.late = nil
	s.mu.Unlock()
	if lag < 0 {
		return nil
	}
	line := kernelLine(marker, "cat", "file-read-data", target)
	deliver := func() {
		for _, l := range late {
			s.write(l)
		}
		s.write(line)
	}
	if lag == 0 {
		deliver()
		return nil
	}
	go func() {
		time.Sleep(lag) // the log's delivery delay, simulated
		deliver()
	}()
	return nil
}

// denyLate has the next provoked sentinel's line preceded by this denial: it arrives while
// End waits, as late as it can and still before the sentinel.
func (s *standIn) denyLate(marker, op, target string) {
	s.mu.Lock()
	s.late = append(s.late, kernelLine(marker, "cat", op, target))
	s.mu.Unlock()
}

func (s *standIn) startCount() int {
	b, _ := os.ReadFile(s.starts)
	return strings.Count(string(b), "started")
}

func targets(ds []Denial) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Target)
	}
	return out
}

func TestWindowReadsInOrderUntilItsSentinel(t *testing.T) {
	s := newStandIn(t, "")
	w, err := s.f.Begin(context.Background(), testMarker)
	if err != nil {
		t.Fatal(err)
	}
	s.deny(testMarker, "file-read-data", "/Users/me/.ssh/id_ed25519")
	s.deny(otherMarker, "file-read-data", "/Users/me/other-session")
	// A sandboxed program logging a denial-shaped message itself is not the kernel.
	fake, _ := json.Marshal(map[string]any{"processImagePath": "/bin/cat", "processID": 99,
		"eventMessage": "Sandbox: cat(1) deny(1) file-read-data /invented\n" + testMarker})
	s.write(append(fake, '\n'))
	s.deny(testMarker, "network-outbound", "93.184.216.34:443")
	ds, err := w.End(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/Users/me/.ssh/id_ed25519", "93.184.216.34:443"}
	if got := targets(ds); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("denials %q, want %q (in order, without the sentinel, other sessions' or invented ones)", got, want)
	}
}

func TestWindowsBackToBackShareOneStream(t *testing.T) {
	s := newStandIn(t, "")
	ctx := context.Background()
	for i, target := range []string{"/Users/me/first", "/Users/me/second", "/Users/me/third"} {
		w, err := s.f.Begin(ctx, testMarker)
		if err != nil {
			t.Fatal(err)
		}
		s.deny(testMarker, "file-read-data", target)
		ds, err := w.End(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := targets(ds); len(got) != 1 || got[0] != target {
			t.Errorf("command %d: denials %q, want only %s", i+1, got, target)
		}
	}
	if n := s.startCount(); n != 1 {
		t.Errorf("the stream was started %d times for three commands, want once", n)
	}
}

func TestTwoSessionsAtOnce(t *testing.T) {
	s := newStandIn(t, "")
	ctx := context.Background()
	w1, err := s.f.Begin(ctx, testMarker)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := s.f.Begin(ctx, otherMarker)
	if err != nil {
		t.Fatal(err)
	}
	s.deny(otherMarker, "file-write-create", "/Users/me/b")
	s.deny(testMarker, "file-write-create", "/Users/me/a")
	d1, err1 := w1.End(ctx)
	d2, err2 := w2.End(ctx)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if g1, g2 := targets(d1), targets(d2); len(g1) != 1 || g1[0] != "/Users/me/a" || len(g2) != 1 || g2[0] != "/Users/me/b" {
		t.Errorf("session one got %q, session two %q", g1, g2)
	}
}

// TestWindowWaitsForASlowStream: End waits for the sentinel, however late the log delivers it
// within the timeout, and a denial delivered before the sentinel is still the command's.
func TestWindowWaitsForASlowStream(t *testing.T) {
	s := newStandIn(t, "")
	s.setLag(300 * time.Millisecond)
	w, err := s.f.Begin(context.Background(), testMarker)
	if err != nil {
		t.Fatal(err)
	}
	// Delivered late, but before the sentinel: by the stand-in itself, in the order a log
	// would deliver them, not by a timer racing its lag.
	s.denyLate(testMarker, "file-read-data", "/Users/me/late")
	start := time.Now()
	ds, err := w.End(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("End returned after %s, before the sentinel was delivered", waited)
	}
	if got := targets(ds); len(got) != 1 || got[0] != "/Users/me/late" {
		t.Errorf("denials %q, want the late one", got)
	}
}

func TestWindowTimesOutWithoutItsSentinel(t *testing.T) {
	s := newStandIn(t, "")
	s.f.Timeout = 200 * time.Millisecond
	s.setLag(-1)
	w, err := s.f.Begin(context.Background(), testMarker)
	if err != nil {
		t.Fatal(err)
	}
	s.deny(testMarker, "file-read-data", "/Users/me/seen")
	ds, err := w.End(context.Background())
	if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "did not deliver the sentinel") {
		t.Fatalf("err = %v, want ErrIncomplete for the missing sentinel", err)
	}
	if got := targets(ds); len(got) != 1 || got[0] != "/Users/me/seen" {
		t.Errorf("denials %q, want what was read", got)
	}
}

// TestLostStream: the stream dies during a command. End says the report may be incomplete
// instead of waiting out its timeout, and the next command starts a new stream.
func TestLostStream(t *testing.T) {
	s := newStandIn(t, "")
	s.f.Timeout = time.Minute // End must notice the loss, not time out
	s.setLag(-1)
	ctx := context.Background()
	w, err := s.f.Begin(ctx, testMarker)
	if err != nil {
		t.Fatal(err)
	}
	s.deny(testMarker, "file-read-data", "/Users/me/before")
	// A generous bound: the machine may be busy.
	tstest.WaitFor(t, 30*time.Second, func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.denials) != 1 {
			return fmt.Errorf("the window holds %d denials, want the one written before the stream was killed", len(w.denials))
		}
		return nil
	})
	s.f.mu.Lock()
	s.f.cur.cmd.Process.Kill()
	s.f.mu.Unlock()
	start := time.Now()
	ds, err := w.End(ctx)
	if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "stream ended") {
		t.Fatalf("err = %v, want ErrIncomplete for the lost stream", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Error("End waited for its timeout after the stream was lost")
	}
	if got := targets(ds); len(got) != 1 || got[0] != "/Users/me/before" {
		t.Errorf("denials %q", got)
	}
	s.setLag(0)
	w, err = s.f.Begin(ctx, testMarker)
	if err != nil {
		t.Fatal(err)
	}
	s.deny(testMarker, "file-read-data", "/Users/me/after")
	if ds, err := w.End(ctx); err != nil || len(ds) != 1 || ds[0].Target != "/Users/me/after" {
		t.Fatalf("after a restart: %v %v", targets(ds), err)
	}
	if n := s.startCount(); n != 2 {
		t.Errorf("stream started %d times, want twice", n)
	}
}

func TestFollowerNotAdmin(t *testing.T) {
	s := newStandIn(t, `echo started >> "$2"
echo "log: Must be admin to run 'stream' command" >&2
exit 64
`)
	_, err := s.f.Begin(context.Background(), testMarker)
	if !errors.Is(err, ErrNotAdmin) {
		t.Fatalf("err = %v, want ErrNotAdmin", err)
	}
	line := notReported(err).Error()
	if !strings.HasPrefix(line, "Seatbelt's denials are not reported for this run: reading the unified log needs an administrator account (log: Must be admin") {
		t.Errorf("line %q", line)
	}
	if _, err := s.f.Begin(context.Background(), testMarker); !errors.Is(err, ErrNotAdmin) {
		t.Fatalf("second command: err = %v", err)
	}
	if n := s.startCount(); n != 1 {
		t.Errorf("a refused stream was started %d times for two commands, want once", n)
	}
}

func TestFollowerNeverReady(t *testing.T) {
	s := newStandIn(t, "exec sleep 60\n")
	s.f.Ready = 200 * time.Millisecond
	start := time.Now()
	_, err := s.f.Begin(context.Background(), testMarker)
	if err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("err = %v, want a not-ready error", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("a silent stream held Begin past its timeout")
	}
}

func TestFollowerExitsEarly(t *testing.T) {
	s := newStandIn(t, "echo 'log: predicate is invalid' >&2\nexit 65\n")
	_, err := s.f.Begin(context.Background(), testMarker)
	if err == nil || !strings.Contains(err.Error(), "predicate is invalid") || errors.Is(err, ErrNotAdmin) {
		t.Fatalf("err = %v", err)
	}
}

func TestFollowerRefusesForeignMarkers(t *testing.T) {
	s := newStandIn(t, "")
	if _, err := s.f.Begin(context.Background(), "someone-else-5f0c2a9e41b7"); err == nil {
		t.Fatal("a marker the stream does not ask for was accepted")
	}
}

func TestIdleStreamStops(t *testing.T) {
	s := newStandIn(t, "")
	s.f.IdleStop = 100 * time.Millisecond
	w, err := s.f.Begin(context.Background(), testMarker)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.End(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.f.mu.Lock()
	cur := s.f.cur
	s.f.mu.Unlock()
	tstest.WaitFor(t, 30*time.Second, func() error {
		if !cur.ended() {
			return errors.New("the idle stream did not stop")
		}
		return nil
	})
	// The next command starts a new stream.
	w, err = s.f.Begin(context.Background(), testMarker)
	if err != nil {
		t.Fatal(err)
	}
	s.deny(testMarker, "file-read-data", "/Users/me/x")
	if ds, err := w.End(context.Background()); err != nil || len(ds) != 1 {
		t.Fatalf("after the idle stop: %v %v", targets(ds), err)
	}
	if n := s.startCount(); n != 2 {
		t.Errorf("stream started %d times, want twice", n)
	}
}

// BenchmarkWindow is the reporting cost one command adds with the stream already running:
// open a window, provoke the sentinel (here, the stand-in writes its line at once), read it
// back. On a Mac the provocation (a sandbox-exec of /bin/cat) and the log's delivery of one
// line come on top.
func BenchmarkWindow(b *testing.B) {
	s := newStandIn(b, "")
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w, err := s.f.Begin(ctx, testMarker)
		if err != nil {
			b.Fatal(err)
		}
		s.deny(testMarker, "file-read-data", "/Users/me/x")
		if _, err := w.End(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
