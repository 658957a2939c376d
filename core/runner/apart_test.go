package runner

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startServerOn is startServer on a given kind of connection: a socketpair the server can
// poll (as inside a Linux wall), or a pipe another goroutine reads.
func startServerOn(t *testing.T, dir string, polled bool) *Client {
	t.Helper()
	if !polled {
		return startServer(t, dir)
	}
	t.Chdir(dir)
	t.Setenv("TMPDIR", t.TempDir())
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := os.NewFile(uintptr(fds[0]), "core"), os.NewFile(uintptr(fds[1]), "runner")
	s := NewServer(Config{Dir: dir, Env: os.Environ()})
	done := make(chan error, 1)
	go func() { done <- s.Serve(b) }()
	c := NewClient(a)
	t.Cleanup(func() {
		c.Close()
		b.Close()
		<-done
	})
	return c
}

func eachServer(t *testing.T, test func(t *testing.T, c *Client, dir string)) {
	for _, polled := range []bool{false, true} {
		name := "read_by_a_goroutine"
		if polled {
			name = "polled"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			test(t, startServerOn(t, dir, polled), dir)
		})
	}
}

// A command started apart runs while the shell's own command runs, and its answer comes
// while that one still runs: an agent host's background server does not hold up its next
// command, nor does a command of the shell's hold up an agent's.
func TestApartRunsBesideTheShell(t *testing.T) {
	eachServer(t, func(t *testing.T, c *Client, dir string) {
		fifo := filepath.Join(dir, "go")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		// The shell's command waits until the apart one has run.
		long := &Request{Tool: ToolExec, Exec: &ExecArgs{Command: "read x < go; echo shell-done $x"}}
		if err := c.Send(long); err != nil {
			t.Fatal(err)
		}
		longDone := make(chan *Result, 1)
		go func() {
			r, err := c.Receive(long, nil, nil)
			if err != nil {
				t.Error(err)
			}
			longDone <- r
		}()
		var chunks []string
		apart := &Request{Tool: ToolExec, Exec: &ExecArgs{Command: "cd /; echo apart-$PWD; echo released > " + fifo, Apart: true, Dir: dir, Stream: true, Env: []string{"EXTRA=x1"}}}
		if err := c.SendApart(apart); err != nil {
			t.Fatal(err)
		}
		r, err := c.Receive(apart, func(stream string, data []byte) { chunks = append(chunks, string(data)) }, nil)
		if err != nil || r.ExitCode != 0 || string(r.Stdout) != "apart-/\n" {
			t.Fatalf("apart: %+v %v", r, err)
		}
		if strings.Join(chunks, "") != "apart-/\n" {
			t.Fatalf("streamed %q", chunks)
		}
		select {
		case lr := <-longDone:
			if string(lr.Stdout) != "shell-done released\n" {
				t.Fatalf("the shell's command said %q", lr.Stdout)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the shell's command did not end after the apart one released it")
		}
		// The apart command's cd is its own; its variable too.
		if r := exec1(t, c, "echo $PWD ${EXTRA:-none}"); strings.TrimSpace(string(r.Stdout)) != dir+" none" {
			t.Fatalf("the shell's state after an apart command: %q", r.Stdout)
		}
	})
}

// Several apart commands run at once, each with its own answer; a signal reaches the one it
// names, and a running apart command does not keep the shell's calls waiting.
func TestApartCommandsAreEachTheirOwn(t *testing.T) {
	eachServer(t, func(t *testing.T, c *Client, dir string) {
		server := &Request{Tool: ToolExec, Exec: &ExecArgs{Command: "trap 'echo stopped; exit 7' TERM; touch up; while :; do sleep 0.02; done", Apart: true, Dir: dir}}
		if err := c.SendApart(server); err != nil {
			t.Fatal(err)
		}
		serverDone := make(chan *Result, 1)
		go func() {
			r, err := c.Receive(server, nil, nil)
			if err != nil {
				t.Error(err)
			}
			serverDone <- r
		}()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(dir, "up")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the apart command did not start")
			}
		}
		// The shell and other apart commands go on meanwhile.
		for i := 0; i < 3; i++ {
			if r := exec1(t, c, "echo shell"); string(r.Stdout) != "shell\n" {
				t.Fatalf("%q", r.Stdout)
			}
			a := &Request{Tool: ToolExec, Exec: &ExecArgs{Argv: []string{"echo", "two"}, Apart: true}}
			if err := c.SendApart(a); err != nil {
				t.Fatal(err)
			}
			if r, err := c.Receive(a, nil, nil); err != nil || string(r.Stdout) != "two\n" {
				t.Fatalf("%+v %v", r, err)
			}
		}
		if err := c.Signal(server, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-serverDone:
			if r.ExitCode != 7 || string(r.Stdout) != "stopped\n" {
				t.Fatalf("the signalled command: %+v", r)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the signal did not reach the apart command")
		}
	})
}

// Only an exec that says so runs apart.
func TestSendApartTakesOnlyApartExecs(t *testing.T) {
	c := NewClient(&net.TCPConn{})
	if err := c.SendApart(&Request{Tool: ToolExec, Exec: &ExecArgs{Command: "true"}}); err == nil {
		t.Fatal("SendApart sent an exec of the shell's")
	}
}
