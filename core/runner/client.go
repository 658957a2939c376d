package runner

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/openworker/openworker/core/internal/wire"
)

// Client is the core's end of the runner connection. Calls are serialised: the runner
// carries out one tool call at a time.
type Client struct {
	mu     sync.Mutex
	conn   io.ReadWriteCloser
	in     *reader
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
	return c.receive(req, onChunk)
}

// Send sends req without waiting for its result, which Receive then waits for; no other
// call may come between the two. A call sent before the runner is running waits in the
// connection until it reads it.
func (c *Client) Send(req *Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.send(req)
}

// Receive waits for the result of the call Send sent.
func (c *Client) Receive(req *Request, onChunk func(stream string, data []byte)) (*Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.receive(req, onChunk)
}

func (c *Client) send(req *Request) error {
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

func (c *Client) receive(req *Request, onChunk func(stream string, data []byte)) (*Result, error) {
	if c.broken != nil {
		return nil, c.broken
	}
	for {
		msg, err := c.in.next()
		var r *Response
		if err == nil {
			r, err = decodeResponse(msg)
		}
		if err != nil {
			c.broken = fmt.Errorf("%w: %v", ErrGone, err)
			return nil, c.broken
		}
		if r.ID != req.ID {
			c.broken = fmt.Errorf("%w: answer to call %d while waiting for %d", ErrGone, r.ID, req.ID)
			return nil, c.broken
		}
		if r.Stream != "" {
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
