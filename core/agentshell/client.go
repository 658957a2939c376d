package agentshell

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// client speaks the few calls of the local API the shell makes, HTTP/1.1 on the daemon's
// socket, by hand: net/http would be most of this program's start.
type client struct {
	socket string
}

// The wire shapes the shell reads and sends: a subset of the local API's (core/apitype),
// which a test keeps in step with it.
type (
	sessionInfo struct {
		ID    string `json:"id"`
		Owner int    `json:"owner,omitempty"`
	}
	execRequest struct {
		Argv  []string `json:"argv,omitempty"`
		Dir   string   `json:"dir,omitempty"`
		Stdin bool     `json:"stdin,omitempty"`
		Apart bool     `json:"apart,omitempty"`
		Tag   string   `json:"tag,omitempty"`
		Env   []string `json:"env,omitempty"`
	}
	signalRequest struct {
		Signal string `json:"signal"`
		Tag    string `json:"tag,omitempty"`
	}
	blocked struct {
		Host   string `json:"host"`
		Port   int    `json:"port"`
		Reason string `json:"reason"`
	}
	result struct {
		ExitCode    int       `json:"exit_code"`
		TimedOut    bool      `json:"timed_out,omitempty"`
		Blocked     []blocked `json:"blocked,omitempty"`
		Interrupted string    `json:"interrupted,omitempty"`
		Error       string    `json:"error,omitempty"`
		Enforcement string    `json:"enforcement"`
	}
	streamMessage struct {
		Stream string  `json:"stream,omitempty"`
		Data   []byte  `json:"data,omitempty"`
		Result *result `json:"result,omitempty"`
		Error  string  `json:"error,omitempty"`
	}
	errorBody struct {
		Error string `json:"error"`
	}
)

// errNoDaemon is a socket nobody answers on.
var errNoDaemon = errors.New("OpenWorker's daemon is not running")

// apiError is an answer other than success, with the daemon's words.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

// response is an answer's status and its body, read as its framing says.
type response struct {
	status int
	body   io.Reader
	conn   net.Conn
}

func (c *client) dial() (net.Conn, error) {
	conn, err := net.DialTimeout("unix", c.socket, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("%w (%s: %v)", errNoDaemon, c.socket, err)
	}
	return conn, nil
}

// call sends a request whose body is in (JSON, or nil) and returns its answer; the caller
// closes resp.conn.
func (c *client) call(method, path string, in any) (*response, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, err
		}
	}
	conn, err := c.dial()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: openworker\r\nConnection: close\r\n", method, path)
	if in != nil {
		fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.Write(body)
	if _, err := conn.Write(b.Bytes()); err != nil {
		conn.Close()
		return nil, fmt.Errorf("the daemon hung up: %w", err)
	}
	resp, err := readResponse(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return resp, nil
}

// readResponse reads an answer's head and frames its body (chunked, or by its length).
func readResponse(conn net.Conn) (*response, error) {
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("the daemon hung up before it answered: %w", err)
	}
	f := strings.Fields(line)
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/1.") {
		return nil, fmt.Errorf("the daemon's answer is not HTTP: %.80q", line)
	}
	status, err := strconv.Atoi(f[1])
	if err != nil {
		return nil, fmt.Errorf("the daemon's answer has no status: %.80q", line)
	}
	chunked, length := false, int64(-1)
	for {
		h, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("the daemon hung up in its answer's head: %w", err)
		}
		h = strings.TrimRight(h, "\r\n")
		if h == "" {
			break
		}
		name, value, _ := strings.Cut(h, ":")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "transfer-encoding":
			chunked = strings.EqualFold(strings.TrimSpace(value), "chunked")
		case "content-length":
			length, _ = strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		}
	}
	resp := &response{status: status, conn: conn}
	switch {
	case chunked:
		resp.body = &chunkedReader{r: br}
	case length >= 0:
		resp.body = io.LimitReader(br, length)
	default:
		resp.body = br
	}
	return resp, nil
}

// failure is a non-success answer as an error, in the daemon's words.
func (r *response) failure() error {
	var e errorBody
	if err := json.NewDecoder(io.LimitReader(r.body, 64<<10)).Decode(&e); err != nil || e.Error == "" {
		return &apiError{status: r.status, msg: fmt.Sprintf("the daemon answered %d", r.status)}
	}
	return &apiError{status: r.status, msg: e.Error}
}

// chunkedReader reads an HTTP/1.1 chunked body.
type chunkedReader struct {
	r    *bufio.Reader
	left int64
	done bool
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	for c.left == 0 {
		if c.done {
			return 0, io.EOF
		}
		line, err := c.r.ReadString('\n')
		if err != nil {
			return 0, io.ErrUnexpectedEOF
		}
		size, _, _ := strings.Cut(strings.TrimRight(line, "\r\n"), ";")
		n, err := strconv.ParseInt(strings.TrimSpace(size), 16, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("a bad chunk size in the daemon's answer: %.40q", line)
		}
		if n == 0 {
			c.done = true
			return 0, io.EOF
		}
		c.left = n
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left == 0 && err == nil {
		// Each chunk ends with CRLF.
		if _, err := c.r.Discard(2); err != nil {
			return n, io.ErrUnexpectedEOF
		}
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// sessions lists the daemon's sessions.
func (c *client) sessions() ([]sessionInfo, error) {
	resp, err := c.call("GET", "/v1/sessions", nil)
	if err != nil {
		return nil, err
	}
	defer resp.conn.Close()
	if resp.status != 200 {
		return nil, resp.failure()
	}
	var out []sessionInfo
	if err := json.NewDecoder(resp.body).Decode(&out); err != nil {
		return nil, fmt.Errorf("the daemon's list of sessions cannot be read: %w", err)
	}
	return out, nil
}

// signal sends sig to the command tagged tag in session id.
func (c *client) signal(id, tag, sig string) error {
	resp, err := c.call("POST", "/v1/sessions/"+id+"/signal", signalRequest{Signal: sig, Tag: tag})
	if err != nil {
		return err
	}
	defer resp.conn.Close()
	if resp.status/100 != 2 {
		return resp.failure()
	}
	return nil
}

// exec runs req in session id, passing its output to onChunk as it comes, and streaming
// stdin to the command when it is not nil.
func (c *client) exec(id string, req execRequest, stdin io.Reader, onChunk func(stream string, data []byte)) (*result, error) {
	conn, err := c.dial()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	req.Stdin = stdin != nil
	head, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	path := "/v1/sessions/" + id + "/exec?stream=1"
	var b bytes.Buffer
	if stdin == nil {
		fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: openworker\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, len(head))
		b.Write(head)
	} else {
		// The body goes on with the command's standard input, in chunks, as it comes.
		fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: openworker\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", path)
		fmt.Fprintf(&b, "%x\r\n%s\n\r\n", len(head)+1, head)
	}
	if _, err := conn.Write(b.Bytes()); err != nil {
		return nil, fmt.Errorf("the daemon hung up: %w", err)
	}
	if stdin != nil {
		go pumpChunks(conn, stdin)
	}
	resp, err := readResponse(conn)
	if err != nil {
		return nil, err
	}
	if resp.status != 200 {
		return nil, resp.failure()
	}
	dec := json.NewDecoder(resp.body)
	for {
		var m streamMessage
		if err := dec.Decode(&m); err != nil {
			return nil, errors.New("the daemon stopped during the command without saying why (killed or crashed; its log may say more)")
		}
		switch {
		case m.Error != "":
			return nil, errors.New(m.Error)
		case m.Result != nil:
			return m.Result, nil
		default:
			onChunk(m.Stream, m.Data)
		}
	}
}

// pumpChunks copies r to the request's body in chunks until r ends, then ends the body. It
// stops when the connection does, once the command's answer has come.
func pumpChunks(w io.Writer, r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := fmt.Fprintf(w, "%x\r\n%s\r\n", n, buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			_, _ = io.WriteString(w, "0\r\n\r\n")
			return
		}
	}
}
