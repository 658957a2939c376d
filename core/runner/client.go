package runner

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"

	"github.com/openworker/openworker/core/internal/wire"
)

// Client is the core's end of the runner connection. Calls are serialised: the runner
// carries out one tool call at a time. Signal and Stdin may be sent while a call runs.
type Client struct {
	mu sync.Mutex // one call at a time, from its send to its answer
	in *reader

	wmu    sync.Mutex // writes, the call IDs, and broken
	conn   io.ReadWriteCloser
	nextID uint64
	broken error
}

// NewClient wraps the core's end of the socketpair.
func NewClient(conn io.ReadWriteCloser) *Client {
	return &Client{conn: conn, in: newReader(conn)}
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

// Receive waits for the result of the call Send sent. onAck, when set, is told how many
// bytes of the command's streamed standard input were taken.
func (c *Client) Receive(req *Request, onChunk func(stream string, data []byte), onAck func(n int64)) (*Result, error) {
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
	defer c.wmu.Unlock()
	if c.broken == nil {
		c.broken = fmt.Errorf("%w: %v", ErrGone, err)
	}
	return c.broken
}

func (c *Client) receive(req *Request, onChunk func(stream string, data []byte), onAck func(int64)) (*Result, error) {
	c.wmu.Lock()
	broken := c.broken
	c.wmu.Unlock()
	if broken != nil {
		return nil, broken
	}
	for {
		msg, err := c.in.next()
		var r *Response
		if err == nil {
			r, err = decodeResponse(msg)
		}
		if err != nil {
			return nil, c.fail(err)
		}
		if r.ID != req.ID {
			return nil, c.fail(fmt.Errorf("answer to call %d while waiting for %d", r.ID, req.ID))
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
