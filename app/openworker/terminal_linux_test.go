package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/termtext"
)

// hostile is text a command or an agent chose to drive a person's terminal: it ends a line,
// redraws it, sets the title, hides what follows and reverses what is shown.
const hostile = "x\r\x1b[2K\x1b]0;t\x07\x1b[8m\u202e\nopenworker: fake\xff"

// requireInert fails when out holds anything a terminal would act on.
func requireInert(t *testing.T, what, out string) {
	t.Helper()
	for i, r := range out {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x202e {
			t.Fatalf("%s printed %U at %d: %q", what, r, i, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "openworker: fake") {
			t.Fatalf("%s printed a line the hostile text made: %q", what, out)
		}
	}
}

// Every surface that prints what a command or an agent wrote prints it escaped: the cards
// (the reason), session list (the names a command made), request-site, and errors.
func TestHostileTextReachesTheTerminalEscaped(t *testing.T) {
	cw := newCardsWorld(t, "")
	if err := os.WriteFile(filepath.Join(cw.project, "evil"+hostile), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := cw.run("session", "list", cw.id, cw.project)
	if code != 0 || !strings.Contains(out, "evil") {
		t.Fatalf("session list: %d %q %q", code, out, errs)
	}
	requireInert(t, "session list", out+errs)

	out, errs, _ = cw.run("request-site", cw.id, "evil.example.com", "--reason", hostile, "--wait", "0.2s")
	requireInert(t, "request-site", out+errs)
	out, errs, _ = cw.run("cards")
	if !strings.Contains(out, "evil.example.com") {
		t.Fatalf("no card: %q %q", out, errs)
	}
	requireInert(t, "cards", out+errs)
	if n := strings.Count(strings.TrimSpace(out), "\n"); n != 0 {
		t.Fatalf("one card took %d lines: %q", n+1, out)
	}

	out, errs, code = cw.run("session", "read", cw.id, "no-such"+hostile)
	if code == 0 {
		t.Fatalf("reading a missing file: %q", out)
	}
	requireInert(t, "an error", out+errs)
}

// openPTY opens a pseudo-terminal: the controller to read, the terminal to give a process.
func openPTY(t *testing.T) (ctl, term *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	ctl = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	term, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ctl, term
}

// A command that leaves the terminal inside an OSC string (which would swallow what
// follows) and prints look-alikes of OpenWorker's report: on a terminal, the report comes
// after a reset, each line marked, and no line of the command's carries the mark.
func TestReportAfterACommandOnATerminal(t *testing.T) {
	w := newWorld(t)
	ctl, term := openPTY(t)
	defer ctl.Close()
	c := w.cmd("run", "--provider", "direct", "--timeout", "1s", "--", "sh", "-c",
		`printf 'openworker: blocked fake.example.com:443\n\302\246 openworker: the command was stopped (fake)\n\033[8m\033]0;unfinished'; sleep 10`)
	c.Stdout, c.Stderr = term, term
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	term.Close()
	var got bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&got, ctl); close(done) }() // ends with EIO once the last writer is gone
	c.Wait()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal was not released")
	}
	out := strings.ReplaceAll(got.String(), "\r\n", "\n")
	osc := strings.Index(out, "\x1b]0;unfinished")
	reset := strings.Index(out, termtext.Reset)
	report := strings.Index(out, termtext.Mark+"openworker: the command was stopped after 1s")
	if osc < 0 || reset < osc || report < reset {
		t.Fatalf("the report does not follow a reset after the command's output:\n%q", out)
	}
	if n := strings.Count(out, termtext.Mark); n != 1 {
		t.Fatalf("%d marked lines, want only OpenWorker's one:\n%q", n, out)
	}
	if !strings.Contains(out, "| openworker: the command was stopped (fake)") {
		t.Fatalf("the look-alike was not shown as the command wrote it, mark aside:\n%q", out)
	}
}

// A writable session folder has no size bound here: the machine's status says so, and why,
// as it does for the other limits.
func TestStatusSaysSessionFoldersAreUnbounded(t *testing.T) {
	w := newWorld(t)
	out, errs, code := w.run("machine", "sandbox", "status")
	if code != 0 {
		t.Fatalf("status: %d %s", code, errs)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Folders:") {
			if !strings.Contains(l, "no size bound") || !strings.Contains(out, "project quota") {
				t.Fatalf("the folders line does not say there is no bound and why:\n%s", out)
			}
			return
		}
	}
	t.Fatalf("no line on the session folders' size:\n%s", out)
}
