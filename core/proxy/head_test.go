package proxy

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReadRequest reads heads the proxy must accept alike however they are spelled, and
// refuses the forms on which it and an origin could disagree.
func TestReadRequest(t *testing.T) {
	const auth = "Basic b3BlbndvcmtlcjphYmNkZWZnaGlqa2xtbm9wcXJzdHV2"
	tests := []struct {
		name, head string
		status     int    // 0: accepted
		says       string // in the refusal
		method     string
		target     string
		auth       string
	}{
		{name: "connect", head: "CONNECT a.example:443 HTTP/1.1\r\nProxy-Authorization: " + auth + "\r\n\r\n",
			method: "CONNECT", target: "a.example:443", auth: auth},
		{name: "bare_lf", head: "CONNECT a.example:443 HTTP/1.1\nProxy-Authorization: " + auth + "\n\n",
			method: "CONNECT", target: "a.example:443", auth: auth},
		{name: "mixed_line_ends", head: "CONNECT a.example:443 HTTP/1.1\r\nproxy-authorization:" + auth + "  \n\r\n",
			method: "CONNECT", target: "a.example:443", auth: auth},
		{name: "http10", head: "CONNECT a.example:443 HTTP/1.0\r\n\r\n", method: "CONNECT", target: "a.example:443"},
		{name: "first_credentials_count", head: "CONNECT a.example:443 HTTP/1.1\r\nPROXY-AUTHORIZATION: " + auth + "\r\nProxy-Authorization: Basic eA==\r\n\r\n",
			method: "CONNECT", target: "a.example:443", auth: auth},
		{name: "connect_zero_length", head: "CONNECT a.example:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n", method: "CONNECT", target: "a.example:443"},
		{name: "forward", head: "POST http://a.example/x HTTP/1.1\r\nHost: a.example\r\nContent-Length: 2\r\n\r\nhi",
			method: "POST", target: "http://a.example/x"},
		{name: "folded", head: "CONNECT a.example:443 HTTP/1.1\r\nProxy-Authorization: Basic\r\n " + auth[6:] + "\r\n\r\n",
			status: 400, says: "folded"},
		{name: "space_before_colon", head: "CONNECT a.example:443 HTTP/1.1\r\nProxy-Authorization : " + auth + "\r\n\r\n",
			status: 400, says: "is not Name: value"},
		{name: "no_colon", head: "CONNECT a.example:443 HTTP/1.1\r\nX\r\n\r\n", status: 400, says: "is not Name: value"},
		{name: "control_byte", head: "CONNECT a.example:443 HTTP/1.1\r\nX: a\x00b\r\n\r\n", status: 400, says: "control character"},
		{name: "lone_cr", head: "CONNECT a.example:443 HTTP/1.1\r\nX: a\rb\r\n\r\n", status: 400, says: "control character"},
		{name: "two_hosts", head: "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n",
			status: 400, says: "more than one Host"},
		{name: "connect_body", head: "CONNECT a.example:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
			status: 400, says: "no Content-Length"},
		{name: "connect_chunked", head: "CONNECT a.example:443 HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n",
			status: 400, says: "no transfer-encoding"},
		{name: "conflicting_lengths", head: "POST http://a.example/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
			status: 400, says: "Content-Length"},
		{name: "http2", head: "CONNECT a.example:443 HTTP/2.0\r\n\r\n", status: 400, says: "not HTTP/1.1"},
		{name: "double_space", head: "CONNECT  a.example:443 HTTP/1.1\r\n\r\n", status: 400, says: "request line"},
		{name: "empty_line_first", head: "\r\nCONNECT a.example:443 HTTP/1.1\r\n\r\n", status: 400, says: "request line"},
		{name: "non_ascii_target", head: "CONNECT ä.example:443 HTTP/1.1\r\n\r\n", status: 400, says: "request line"},
		{name: "just_fits", head: "CONNECT a.example:443 HTTP/1.1\r\nX: " + strings.Repeat("a", MaxHeadBytes-len("CONNECT a.example:443 HTTP/1.1\r\nX: \r\n\r\n")) + "\r\n\r\n",
			method: "CONNECT", target: "a.example:443"},
		{name: "one_byte_over", head: "CONNECT a.example:443 HTTP/1.1\r\nX: " + strings.Repeat("a", MaxHeadBytes-len("CONNECT a.example:443 HTTP/1.1\r\nX: \r\n\r\n")+1) + "\r\n\r\n",
			status: 431, says: "larger than 32 KiB"},
		{name: "unfinished", head: "CONNECT a.example:443 HTTP/1.1\r\nX: 1\r\n", status: 400, says: "EOF"},
		{name: "nothing", head: "", status: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tt.head), MaxHeadBytes)
			req, status, msg := readRequest(br)
			if status != tt.status || !strings.Contains(msg, tt.says) {
				t.Fatalf("readRequest = %d %q; want %d saying %q", status, msg, tt.status, tt.says)
			}
			if tt.method == "" {
				if req != nil {
					t.Fatalf("readRequest accepted %+v", req)
				}
				return
			}
			if req.method != tt.method || req.target != tt.target || req.auth != tt.auth {
				t.Fatalf("readRequest = %s %s credentials %q; want %s %s %q", req.method, req.target, req.auth, tt.method, tt.target, tt.auth)
			}
			if (req.method == http.MethodConnect) != (req.http == nil) {
				t.Fatalf("a %s came with Go's reading %v; only requests to forward do", req.method, req.http)
			}
		})
	}
}

// TestReadRequestLeavesTheRest: what follows a head stays in the reader, for the tunnel or
// the body, and a kept-alive connection's next request is read from where the last ended.
func TestReadRequestLeavesTheRest(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader(
		"CONNECT a.example:443 HTTP/1.1\r\n\r\n\x16\x03\x01hello"), MaxHeadBytes)
	if req, status, msg := readRequest(br); req == nil {
		t.Fatalf("readRequest = %d %q", status, msg)
	}
	if rest, _ := io.ReadAll(br); string(rest) != "\x16\x03\x01hello" {
		t.Fatalf("after the head the reader has %q; want the client's first bytes", rest)
	}

	br = bufio.NewReaderSize(strings.NewReader(
		"POST http://a.example/ HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET http://a.example/b HTTP/1.1\r\n\r\n"), MaxHeadBytes)
	req, status, msg := readRequest(br)
	if req == nil {
		t.Fatalf("readRequest = %d %q", status, msg)
	}
	if body, _ := io.ReadAll(req.http.Body); string(body) != "abc" {
		t.Fatalf("body = %q", body)
	}
	if req, status, msg = readRequest(br); req == nil || req.target != "http://a.example/b" {
		t.Fatalf("second request = %+v %d %q", req, status, msg)
	}
}

// slowReader hands out its bytes one at a time, as a client writing a byte per segment.
type slowReader struct{ s string }

func (r *slowReader) Read(b []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	b[0], r.s = r.s[0], r.s[1:]
	return 1, nil
}

// TestReadRequestInPieces reads a head that arrives a byte at a time, and one that does not
// arrive within the head timeout.
func TestReadRequestInPieces(t *testing.T) {
	head := "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n"
	req, status, msg := readRequest(bufio.NewReaderSize(&slowReader{head}, MaxHeadBytes))
	if req == nil || req.target != "a.example:443" || req.size != len(head) {
		t.Fatalf("readRequest = %+v %d %q", req, status, msg)
	}
	c := &timeoutReader{}
	if _, status, _ := readRequest(bufio.NewReaderSize(c, MaxHeadBytes)); status != http.StatusRequestTimeout {
		t.Fatalf("a head that timed out = %d, want 408", status)
	}
}

// timeoutReader times out, as a connection whose read deadline passed.
type timeoutReader struct{}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func (*timeoutReader) Read([]byte) (int, error) { return 0, timeoutError{} }
