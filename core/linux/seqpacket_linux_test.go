package linux

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A peer that sends its last message and closes at once, as the builder does after its last
// report, can be seen to close before the message arrives: Linux checks the queue, then the
// close. A handshake that took that for the builder's end waited on a builder that was
// serving the runner, for good. The race is provoked here by a reader that asks again and
// again while the peer sends and closes; recvSeqpacket must always get the message first.
func TestSeqpacketMessageBeforeClose(t *testing.T) {
	const tries = 20000
	deadline := time.Now().Add(5 * time.Second)
	buf := make([]byte, 16)
	for i := 0; i < tries && time.Now().Before(deadline); i++ {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		must(t, err)
		ours, peer := fds[0], fds[1]
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			unix.Write(peer, []byte("last"))
			unix.Close(peer)
		}()
		n, _, err := recvSeqpacket(func() (int, int, error) {
			for {
				n, oobn, _, _, err := unix.Recvmsg(ours, buf, nil, 0)
				if !errors.Is(err, unix.EAGAIN) {
					return n, oobn, err
				}
			}
		})
		unix.Close(ours)
		if err != nil || string(buf[:n]) != "last" {
			t.Fatalf("try %d: read %q, %v; want the message sent before the close", i, buf[:n], err)
		}
	}

	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	unix.Close(fds[1])
	defer unix.Close(fds[0])
	if _, _, err := recvSeqpacket(func() (int, int, error) {
		n, oobn, _, _, err := unix.Recvmsg(fds[0], buf, nil, 0)
		return n, oobn, err
	}); err != io.EOF {
		t.Errorf("a close with nothing before it read as %v, want io.EOF", err)
	}
}

// A builder that closes its end of the setup socket without the last report, yet lives on,
// refuses the session and is ended: the handshake never waits on it without end.
func TestHandshakeEndsASilentBuilder(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	unix.Close(fds[1])
	f := os.NewFile(uintptr(fds[0]), "setup")
	c, err := net.FileConn(f)
	f.Close()
	must(t, err)
	defer c.Close()
	// A stand-in for the builder: alive, and never reporting.
	cmd := exec.Command("sleep", "60")
	must(t, cmd.Start())
	pr := &process{cmd: cmd, done: make(chan struct{})}
	go pr.wait()

	start := time.Now()
	err = pr.handshake(c.(*net.UnixConn))
	if err == nil || !strings.Contains(err.Error(), "hung up before the runner started") {
		t.Errorf("handshake = %v, want the session refused", err)
	}
	select {
	case <-pr.done:
	default:
		t.Fatal("the handshake returned with the builder still running")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the handshake took %s", took)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the builder ended with %v, want killed", cmd.ProcessState)
	}
}
