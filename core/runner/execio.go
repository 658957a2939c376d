package runner

import (
	"os"
	"sync"
	"syscall"
	"time"
)

// execIO is what reaches a running exec besides its arguments: signals for its command's
// process group, and its standard input when that is streamed. Both may come before the
// command has started (they are kept until it has) and after it has ended (they are dropped).
type execIO struct {
	id   uint64
	send func(*Response)

	mu      sync.Mutex
	cond    *sync.Cond
	pgid    int // the command's process group once started; 0 before
	ended   bool
	pending []syscall.Signal
	// Streamed standard input: what came and was not yet written to the pipe.
	stream bool
	queue  [][]byte
	eof    bool
	w      *os.File
	done   chan struct{} // the pipe's writer has finished
	// pump, when set, takes the connection's messages for this command until its process
	// pid has exited (the polling server); without it another goroutine reads them.
	pump func(pid int) error
}

func newExecIO(id uint64, stream bool, send func(*Response)) *execIO {
	x := &execIO{id: id, send: send, stream: stream}
	x.cond = sync.NewCond(&x.mu)
	return x
}

// signal sends sig to the command's process group, or keeps it for when the command starts.
func (x *execIO) signal(sig syscall.Signal) {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case x.ended:
	case x.pgid == 0:
		x.pending = append(x.pending, sig)
	default:
		_ = syscall.Kill(-x.pgid, sig)
	}
}

// feed queues a piece of standard input for the pipe's writer.
func (x *execIO) feed(data []byte, eof bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ended || x.eof {
		return
	}
	if len(data) > 0 {
		x.queue = append(x.queue, data)
	}
	x.eof = eof
	x.cond.Signal()
}

// stdin returns the command's standard input when it is streamed: the read end of a pipe
// whose write end a goroutine fills from what feed queues. Call before the command starts.
func (x *execIO) stdin() (*os.File, error) {
	if x == nil || !x.stream {
		return nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	x.w, x.done = w, make(chan struct{})
	go x.write()
	return r, nil
}

// write copies what feed queues into the pipe and acknowledges every piece, written or
// dropped (once the command stopped reading), so that the core sends more only as the
// command takes it. It ends at EOF, or when the command has ended.
func (x *execIO) write() {
	defer close(x.done)
	defer x.w.Close()
	broken := false
	for {
		x.mu.Lock()
		for len(x.queue) == 0 && !x.eof && !x.ended {
			x.cond.Wait()
		}
		if len(x.queue) == 0 || x.ended {
			x.mu.Unlock()
			return
		}
		data := x.queue[0]
		x.queue = x.queue[1:]
		x.mu.Unlock()
		if !broken {
			if _, err := x.w.Write(data); err != nil {
				broken = true // the command closed its input or ended: drop the rest
			}
		}
		x.send(&Response{ID: x.id, Stream: "ack", Ack: int64(len(data))})
	}
}

// started records the command's process group and delivers the signals that came before.
func (x *execIO) started(pgid int) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.pgid = pgid
	for _, sig := range x.pending {
		_ = syscall.Kill(-pgid, sig)
	}
	x.pending = nil
}

// finish is called once the command has ended, before its result is sent: no signal or
// input reaches it after, and no acknowledgement of its input follows the result. A write
// that a background process holding the pipe keeps blocked is cut short.
func (x *execIO) finish() {
	if x == nil {
		return
	}
	x.mu.Lock()
	x.ended = true
	x.cond.Signal()
	x.mu.Unlock()
	if x.w != nil {
		_ = x.w.SetWriteDeadline(time.Now())
		<-x.done
	}
}
