package runner

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"

	"github.com/openworker/openworker/core/internal/wire"
)

// Client is the core's end of the runner connection. The runner carries out the shell's
// calls one at a time, and Call, Send and Receive keep to that; a command started beside the
// shell (ExecArgs.Apart) is sent and received with SendApart and Receive while others run.
// Signal and Stdin may be sent while a call runs.
//
// The connection is read by whichever caller waits for an answer and finds nobody reading:
// a message for another call is left in that call's box. With one call at a time that is a
// plain read, as fast as it was before there could be more.
type Client struct {
	mu sync.Mutex // one call of the shell's at a time, from its send to its answer
	in *reader

	wmu    sync.Mutex // writes, the call IDs, and broken
	conn   io.ReadWriteCloser
	nextID uint64
	broken error

	bmu     sync.Mutex // boxes and reading
	more    *sync.Cond // a box got a message, or the connection is free to read
	boxes   map[uint64]*box
	reading bool // a caller is reading the connection
}

// box holds the messages read for a call while another caller was reading.
type box struct{ q []*Response }

// NewClient wraps the core's end of the socketpair.
func NewClient(conn io.ReadWriteCloser) *Client {
	c := &Client{conn: conn, in: newReader(conn), boxes: map[uint64]*box{}}
	c.more = sync.NewCond(&c.bmu)
	return c
}

// ErrGone is returned when the runner has exited or the connection broke.
var ErrGone = errors.New("the tool runner is gone")

// Call sends req and waits for its result. Output chunks, when the call streams, go to
// onChunk as they come.
func (c *Client) Call(req *Request, onChunk func(stream string, data []byte)) (*Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.send(req); err != nil {
		return nil, err
	}
	return c.receive(req, onChunk, nil)
}

// Send sends req without waiting for its result, which Receive then waits for; no other
// call may come between the two. A call sent before the runner is running waits in the
// connection until it reads it.
func (c *Client) Send(req *Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.send(req)
}

// SendApart sends an exec that runs beside the shell (req.Exec.Apart), whose result Receive
// then waits for, while the shell's calls and other such execs go on.
func (c *Client) SendApart(req *Request) error {
	if req.Tool != ToolExec || req.Exec == nil || !req.Exec.Apart {
		return errors.New("runner: SendApart takes an exec that runs apart")
	}
	return c.send(req)
}

// Receive waits for the result of the call Send or SendApart sent. onAck, when set, is told
// how many bytes of the command's streamed standard input were taken.
func (c *Client) Receive(req *Request, onChunk func(stream string, data []byte), onAck func(n int64)) (*Result, error) {
	if req.Exec != nil && req.Exec.Apart {
		return c.receive(req, onChunk, onAck)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.receive(req, onChunk, onAck)
}

// Signal sends sig to the process group of the command that the exec call started. It
// does not wait: the exec's answer says how the command ended.
func (c *Client) Signal(call *Request, sig syscall.Signal) error {
	return c.control(&Request{Tool: ToolSignal, Sig: &SignalArgs{Call: call.ID, Signal: int(sig)}})
}

// Stdin sends a piece of the standard input of the command that the exec call started;
// eof closes it.
func (c *Client) Stdin(call *Request, data []byte, eof bool) error {
	return c.control(&Request{Tool: ToolStdin, In: &StdinArgs{Call: call.ID, Data: data, EOF: eof}})
}

func (c *Client) control(req *Request) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.write(req)
}

func (c *Client) send(req *Request) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.write(req)
}

// write sends req with the next ID; c.wmu is held.
func (c *Client) write(req *Request) error {
	if c.broken != nil {
		return c.broken
	}
	c.nextID++
	req.ID = c.nextID
	if req.Tool != ToolSignal && req.Tool != ToolStdin {
		// Its answers are awaited; a box is ready for them before they can come.
		c.bmu.Lock()
		c.boxes[req.ID] = &box{}
		c.bmu.Unlock()
	}
	msg := req.encode()
	if len(msg) > maxMessage {
		// Refused here, whole: the runner would hang up on it.
		return fmt.Errorf("the call is %d bytes, more than the runner takes (%d MiB); write the file in parts", len(msg), maxMessage>>20)
	}
	if err := wire.WriteFrame(c.conn, msg); err != nil {
		c.broken = fmt.Errorf("%w: %v", ErrGone, err)
		return c.broken
	}
	return nil
}

func (c *Client) fail(err error) error {
	c.wmu.Lock()
	if c.broken == nil {
		c.broken = fmt.Errorf("%w: %v", ErrGone, err)
	}
	broken := c.broken
	c.wmu.Unlock()
	// Every caller waiting for its box learns it.
	c.bmu.Lock()
	c.more.Broadcast()
	c.bmu.Unlock()
	return broken
}

func (c *Client) brokenErr() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.broken
}

// next returns the next message for req: one another caller left in its box, or one it
// reads itself when nobody else reads. A message for another call is left in that call's
// box; one for no call awaited means the runner is broken or lying.
func (c *Client) next(req *Request) (*Response, error) {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	b := c.boxes[req.ID]
	if b == nil {
		return nil, fmt.Errorf("runner: call %d is not awaited", req.ID)
	}
	for {
		if len(b.q) > 0 {
			r := b.q[0]
			b.q = b.q[1:]
			return r, nil
		}
		if err := c.brokenErr(); err != nil {
			return nil, err
		}
		if c.reading {
			c.more.Wait()
			continue
		}
		c.reading = true
		c.bmu.Unlock()
		msg, err := c.in.next()
		var r *Response
		if err == nil {
			r, err = decodeResponse(msg)
		}
		c.bmu.Lock()
		c.reading = false
		c.more.Broadcast() // another caller may read now, or has a message
		if err != nil {
			c.bmu.Unlock()
			err = c.fail(err)
			c.bmu.Lock()
			return nil, err
		}
		if r.ID == req.ID {
			return r, nil
		}
		other := c.boxes[r.ID]
		if other == nil {
			c.bmu.Unlock()
			err = c.fail(fmt.Errorf("an answer to call %d, which no one awaits, while waiting for %d", r.ID, req.ID))
			c.bmu.Lock()
			return nil, err
		}
		other.q = append(other.q, r)
	}
}

// done forgets req's box once its last message has come.
func (c *Client) done(req *Request) {
	c.bmu.Lock()
	delete(c.boxes, req.ID)
	c.bmu.Unlock()
}

func (c *Client) receive(req *Request, onChunk func(stream string, data []byte), onAck func(int64)) (*Result, error) {
	defer c.done(req)
	if err := c.brokenErr(); err != nil {
		return nil, err
	}
	for {
		r, err := c.next(req)
		if err != nil {
			return nil, err
		}
		switch {
		case r.Stream == "ack":
			if onAck != nil {
				onAck(r.Ack)
			}
			continue
		case r.Stream != "":
			if onChunk != nil {
				onChunk(r.Stream, r.Data)
			}
			continue
		}
		if r.Error != "" {
			return nil, &ToolError{Msg: r.Error}
		}
		if r.Result == nil {
			return &Result{}, nil
		}
		return r.Result, nil
	}
}

// Close hangs up; the runner exits when it sees EOF.
func (c *Client) Close() error { return c.conn.Close() }

// ToolError is a tool call that the runner carried out and that failed (a file not found,
// a permission denied by the wall).
type ToolError struct{ Msg string }

func (e *ToolError) Error() string { return e.Msg }
