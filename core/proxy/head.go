package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// The proxy reads every request head itself, strictly, before anything else looks at it. A
// CONNECT needs nothing more: only its target and Proxy-Authorization matter, and
// http.ReadRequest would build a URL, a header map and a textproto reader for every tunnel. A
// request to forward is handed to http.ReadRequest afterwards, for its body framing; by then
// the head is known to be whole, within MaxHeadBytes and free of the forms (folded lines,
// space before a colon, stray control bytes) on which two parsers could disagree.

// request is one request the proxy read.
type request struct {
	method string
	target string // the request-target as sent
	auth   string // the first Proxy-Authorization value
	size   int    // bytes of head, blank line included
	// http is Go's reading of a request to forward, with its body; nil for CONNECT.
	http *http.Request
}

// readerPool holds the readers heads are read with. Each has room for a whole head; a tunnel
// gives its reader back once it starts, and a connection that forwards requests keeps its
// reader for their bodies and the next head.
var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, MaxHeadBytes) }}

func getReader(r io.Reader) *bufio.Reader {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

func putReader(br *bufio.Reader) {
	br.Reset(nil)
	readerPool.Put(br)
}

var errHeadTooLarge = errors.New("request head too large")

// readRequest reads one request from br, whose buffer must hold MaxHeadBytes. It returns the
// request, or the status and text to answer with (status 0: say nothing, the client went
// away). The body of a request to forward, and the bytes behind a CONNECT, are left in br.
func readRequest(br *bufio.Reader) (*request, int, string) {
	n, err := headLen(br)
	switch {
	case err == errHeadTooLarge:
		return nil, http.StatusRequestHeaderFieldsTooLarge,
			"the request head is larger than " + strconv.Itoa(MaxHeadBytes>>10) + " KiB; send fewer or shorter headers"
	case err == nil:
	case n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)):
		return nil, 0, ""
	case isTimeout(err):
		return nil, http.StatusRequestTimeout, "the request head did not arrive within the time allowed; send the whole request at once"
	default:
		return nil, http.StatusBadRequest, "the request could not be read (" + err.Error() + "); " + notAProxyRequest
	}
	raw, _ := br.Peek(n)
	r, why := parseHead(string(raw))
	if why != "" {
		return nil, http.StatusBadRequest, "the request head is malformed: " + why + "; " + notAProxyRequest
	}
	if r.method == http.MethodConnect {
		br.Discard(n)
		return r, 0, ""
	}
	// The head is buffered whole, so Go reads exactly it and nothing of the body.
	if r.http, err = http.ReadRequest(br); err != nil {
		return nil, http.StatusBadRequest, "the request could not be read (" + err.Error() + "); " + notAProxyRequest
	}
	return r, 0, ""
}

// headLen returns the length of the request head at the start of br, blank line included,
// reading until it is buffered whole. A head of more than MaxHeadBytes is errHeadTooLarge. On
// other errors it returns how many bytes had arrived.
func headLen(br *bufio.Reader) (int, error) { return headLenWithin(br, MaxHeadBytes) }

// headLenWithin is headLen for a head of at most limit bytes (a response's), which br's
// buffer must hold.
func headLenWithin(br *bufio.Reader, limit int) (int, error) {
	line := 0 // where the line being looked for starts
	for {
		buf, _ := br.Peek(br.Buffered())
		for {
			i := bytes.IndexByte(buf[line:], '\n')
			if i < 0 {
				break
			}
			end := line + i + 1
			// An empty line ends the head; as the first line it is a malformed request line,
			// which parseHead reports.
			if i == 0 || i == 1 && buf[line] == '\r' {
				return end, nil
			}
			line = end
		}
		if len(buf) >= limit {
			return 0, errHeadTooLarge
		}
		if _, err := br.Peek(len(buf) + 1); err != nil && br.Buffered() == len(buf) {
			return len(buf), err
		}
	}
}

// parseHead parses a whole head, returning the request or what is wrong with it. Lines end
// with CRLF or LF. It accepts only what RFC 9112 allows a request head to be, and no folded
// header lines, which a proxy may reject rather than unfold.
func parseHead(head string) (*request, string) {
	r := &request{size: len(head)}
	line, rest := nextLine(head)
	method, rest0, ok1 := strings.Cut(line, " ")
	target, version, ok2 := strings.Cut(rest0, " ")
	if !ok1 || !ok2 || !isToken(method) || !isTarget(target) {
		return nil, "the request line " + strconv.Quote(line) + " is not METHOD TARGET HTTP/1.1"
	}
	if version != "HTTP/1.1" && version != "HTTP/1.0" {
		return nil, "the request line ends with " + strconv.Quote(version) + ", not HTTP/1.1"
	}
	r.method, r.target = method, target
	connect := method == http.MethodConnect
	hosts, auths := 0, 0
	for {
		line, rest = nextLine(rest)
		if line == "" {
			return r, ""
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, "a header line begins with white space (a folded line); send each header on one line"
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !isToken(name) {
			return nil, "the header line " + strconv.Quote(line) + " is not Name: value"
		}
		value = strings.Trim(value, " \t")
		if !isFieldValue(value) {
			return nil, "the header " + name + " has a control character in its value"
		}
		switch {
		case strings.EqualFold(name, "Proxy-Authorization"):
			if auths++; auths == 1 {
				r.auth = value
			}
		case strings.EqualFold(name, "Host"):
			if hosts++; hosts > 1 {
				return nil, "the request has more than one Host header"
			}
		case connect && (strings.EqualFold(name, "Transfer-Encoding") ||
			strings.EqualFold(name, "Content-Length") && value != "0"):
			// What follows a CONNECT is the tunnel's; a body would leave the client and the
			// proxy disagreeing about where the tunnel starts.
			return nil, "a CONNECT request has no body, so no " + name + " header"
		}
	}
}

// nextLine splits the first line off s, without its line ending.
func nextLine(s string) (line, rest string) {
	line, rest, _ = strings.Cut(s, "\n")
	return strings.TrimSuffix(line, "\r"), rest
}

// isToken reports whether s is an RFC 9110 token: a method or a header name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// isTarget reports whether s could be a request-target: visible ASCII, at least one byte.
func isTarget(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// isFieldValue reports whether s, trimmed, is a field value: no control characters but tab.
func isFieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
