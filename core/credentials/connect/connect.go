// Package connect is ssh's ProxyCommand inside the sandbox: an HTTP CONNECT to the session's
// proxy, carried on standard input and output. It is apart from package credentials so that
// the small helper that runs inside the wall links nothing but this and the runner.
package connect

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Arg is the hidden argument that runs the openworker binary as ssh's ProxyCommand
// inside the sandbox: `openworker __connect HOST PORT` makes an HTTP CONNECT to the session's
// proxy (from HTTPS_PROXY, with its token) and carries the connection on its standard input
// and output.
const Arg = "__connect"

// Connect is Arg's body. A refusal is one line on stderr that says which site and what
// to do, where ssh alone would only say "Connection closed". It returns the exit status.
func Connect(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "openworker: "+format+"\n", a...)
		return 1
	}
	if len(args) != 2 {
		return fail("usage: openworker %s HOST PORT (ssh's ProxyCommand inside a sandbox)", Arg)
	}
	port, err := strconv.Atoi(args[1])
	if err != nil || port < 1 || port > 65535 {
		return fail("%q is not a port", args[1])
	}
	target := net.JoinHostPort(strings.Trim(args[0], "[]"), strconv.Itoa(port))
	raw := ""
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"} {
		if raw = getenv(k); raw != "" {
			break
		}
	}
	if raw == "" {
		return fail("cannot reach %s: there is no proxy in this sandbox (HTTPS_PROXY is not set), and the sandbox reaches servers only through it", target)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fail("cannot reach %s: HTTPS_PROXY is not a proxy URL", target)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		return fail("cannot reach the session's proxy for %s: %v", target, err)
	}
	defer conn.Close()
	head := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if u.User != nil {
		pw, _ := u.User.Password()
		head += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw)) + "\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		return fail("cannot reach the session's proxy for %s: %v", target, err)
	}
	br := bufio.NewReader(conn)
	status, code, length, err := readAnswer(br)
	if err != nil {
		return fail("the session's proxy gave no answer for %s: %v", target, err)
	}
	if code != 200 {
		// The refusal's text is its body: as long as the answer says, or up to the proxy's
		// hang-up, waited for a second at most.
		if length < 0 {
			length = 4096
			_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		}
		body := make([]byte, min(length, 4096))
		n, _ := io.ReadFull(br, body)
		return fail("%s", refusalLine(target, status, string(body[:n])))
	}
	go func() {
		_, _ = io.Copy(conn, stdin)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, _ = io.Copy(stdout, br) // what the proxy read past its answer, then the rest
	return 0
}

// readAnswer reads the proxy's answer to the CONNECT up to its blank line: its status
// ("403 Forbidden"), code and Content-Length (-1 when it gives none). The helper that runs
// this links no HTTP stack for one answer's head: net/http and the TLS it brings are a fifth
// of a binary every sandboxed start pays for.
func readAnswer(br *bufio.Reader) (status string, code, length int, err error) {
	tp := textproto.NewReader(br)
	line, err := tp.ReadLine()
	if err != nil {
		return "", 0, 0, err
	}
	proto, status, ok := strings.Cut(line, " ")
	if !ok || !strings.HasPrefix(proto, "HTTP/1.") || len(status) < 3 {
		return "", 0, 0, fmt.Errorf("malformed answer %q", line)
	}
	if code, err = strconv.Atoi(status[:3]); err != nil || code < 100 {
		return "", 0, 0, fmt.Errorf("malformed answer %q", line)
	}
	head, err := tp.ReadMIMEHeader()
	if err != nil {
		return "", 0, 0, err
	}
	length = -1
	if v := head.Get("Content-Length"); v != "" {
		if length, err = strconv.Atoi(v); err != nil || length < 0 {
			return "", 0, 0, fmt.Errorf("malformed Content-Length %q", v)
		}
	}
	return status, code, length, nil
}

// refusalLine turns the proxy's refusal into the one line ssh's user reads.
func refusalLine(target, status, body string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(body), "\n")
	notListed := target + " is not on this session's allow list; "
	if hint, ok := strings.CutPrefix(line, notListed); ok {
		if rest, ok := strings.CutPrefix(hint, "allow it "); ok {
			return notListed + "ask for it or allow it " + rest
		}
		return notListed + "ask for it or allow it: " + hint
	}
	if line == "" {
		return "the session's proxy refused " + target + " (" + status + ")"
	}
	return line
}
