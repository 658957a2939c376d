package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// StdioTransport is the protocol over standard input and output as agent hosts and people
// drive it: one JSON-RPC message a line. Unlike the SDK's stream decoder it answers a line
// that is not JSON with -32700 and reads on; answers a call made before initialize with
// -32600 rather than an error without a code; sends no result for a call the client
// cancelled; and at the end of input answers the calls it has read before it ends (for
// `printf … | openworker mcp`), unless the reader of its output has gone.
type StdioTransport struct {
	In  io.ReadCloser
	Out io.WriteCloser
	// OnEOF, when set, is called as the input ends, before the calls read are answered.
	OnEOF func()
}

// maxLine bounds one message, as the SDK's own transport does.
const maxLine = sdk.DefaultMaxLineLength

// Connect implements sdk.Transport.
func (t *StdioTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &stdioConn{in: t.In, out: t.Out, onEOF: t.OnEOF, incoming: make(chan readResult), closed: make(chan struct{}),
		pending: map[string]bool{}, cancelled: map[string]bool{}, answered: make(chan struct{}, 1)}
	go c.readLoop()
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type stdioConn struct {
	onEOF    func()
	in       io.ReadCloser
	out      io.WriteCloser
	incoming chan readResult
	closed   chan struct{}
	once     sync.Once

	mu          sync.Mutex // the writes, and what follows
	initialized bool       // initialize was read
	pending     map[string]bool
	cancelled   map[string]bool
	answered    chan struct{} // a pending call was answered
}

func idKey(id jsonrpc.ID) string {
	b, _ := json.Marshal(id.Raw())
	return string(b)
}

func (c *stdioConn) readLoop() {
	r := bufio.NewReaderSize(c.in, 64<<10)
	for {
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 {
			if msg := c.take(line); msg != nil {
				select {
				case c.incoming <- readResult{msg: msg}:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if c.onEOF != nil {
					c.onEOF()
				}
				c.drain()
			}
			select {
			case c.incoming <- readResult{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// readLine reads one line, refusing one longer than maxLine.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > maxLine {
			return nil, errors.New("a message is longer than the limit of 16 MiB")
		}
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// take decodes one line and says what the SDK should read of it: nil when the transport
// answered it itself.
func (c *stdioConn) take(line []byte) jsonrpc.Message {
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		code, what := int64(jsonrpc.CodeParseError), "parse error: the line is not a JSON-RPC message: "
		if json.Valid(line) {
			code, what = jsonrpc.CodeInvalidRequest, "invalid request: "
		}
		c.writeRaw(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": what + err.Error()}})
		return nil
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return msg
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case req.Method == "initialize":
		c.initialized = true
	case req.Method == "notifications/cancelled":
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil && c.pending[idKey(id)] {
				c.cancelled[idKey(id)] = true
			}
		}
	case req.IsCall() && !c.initialized && req.Method != "ping":
		c.writeLocked(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "the server is not initialized: send initialize first"}})
		return nil
	}
	if req.IsCall() {
		c.pending[idKey(req.ID)] = true
	}
	return msg
}

// drain waits, at the end of input, until every call read has been answered, the reader of
// the output has gone, or the connection is closed.
func (c *stdioConn) drain() {
	for {
		c.mu.Lock()
		left := len(c.pending)
		c.mu.Unlock()
		if left == 0 || c.outputGone() {
			return
		}
		select {
		case <-c.answered:
		case <-c.closed:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// outputGone says whether nobody reads the output any more (a pipe whose reader closed).
func (c *stdioConn) outputGone() bool {
	f, ok := c.out.(*os.File)
	if !ok {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(f.Fd())}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *stdioConn) Write(_ context.Context, msg jsonrpc.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if resp, ok := msg.(*jsonrpc.Response); ok {
		key := idKey(resp.ID)
		if c.pending[key] {
			delete(c.pending, key)
			select {
			case c.answered <- struct{}{}:
			default:
			}
		}
		if c.cancelled[key] {
			// The client cancelled the call: it must get no result.
			delete(c.cancelled, key)
			return nil
		}
	}
	return c.writeLocked(msg)
}

func (c *stdioConn) writeLocked(msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	_, err = c.out.Write(append(b, '\n'))
	return err
}

func (c *stdioConn) writeRaw(v any) {
	b, _ := json.Marshal(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = c.out.Write(append(b, '\n'))
}

func (c *stdioConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.in.Close()
		c.out.Close()
	})
	return nil
}

func (c *stdioConn) SessionID() string { return "" }
