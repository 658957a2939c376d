package connect

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/proxy"
	"github.com/openworker/openworker/core/tstest"
)

// echo is a loopback server that answers each connection with what it reads.
func echo(t *testing.T) (host string, port int) {
	t.Helper()
	l := tstest.Serve(t, func(c net.Conn) { io.Copy(c, c) })
	a := l.Addr().(*net.TCPAddr)
	return a.IP.String(), a.Port
}

func TestConnectThroughTheProxy(t *testing.T) {
	host, port := echo(t)
	target := net.JoinHostPort(host, strconv.Itoa(port))
	px, err := proxy.New(proxy.Options{Token: proxy.NewToken()})
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	pport, err := px.ListenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HTTPS_PROXY": px.URL(pport)}
	run := func(stdin string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Connect([]string{host, strconv.Itoa(port)}, func(k string) string { return env[k] }, strings.NewReader(stdin), &out, &errb)
		return code, out.String(), errb.String()
	}

	t.Run("not_allowed", func(t *testing.T) {
		code, out, errs := run("SSH-2.0-test\r\n")
		want := "openworker: " + target + " is not on this session's allow list; ask for it or allow it for this session or in Settings ▸ Sandbox ▸ Choose sites…\n"
		if code != 1 || out != "" || errs != want {
			t.Errorf("got %d %q %q, want one line %q", code, out, errs, want)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		e, _ := hosts.Parse(target)
		px.SetAllowList([]hosts.Entry{e})
		code, out, errs := run("SSH-2.0-test\r\nbytes after\n")
		if code != 0 || out != "SSH-2.0-test\r\nbytes after\n" || errs != "" {
			t.Errorf("got %d %q %q", code, out, errs)
		}
	})
	t.Run("wrong_token", func(t *testing.T) {
		env["HTTPS_PROXY"] = "http://openworker:wrong-token-0123456789@127.0.0.1:" + strconv.Itoa(pport)
		code, _, errs := run("")
		if code != 1 || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "openworker: ") {
			t.Errorf("got %d %q", code, errs)
		}
	})
	t.Run("no_proxy", func(t *testing.T) {
		delete(env, "HTTPS_PROXY")
		code, _, errs := run("")
		if code != 1 || !strings.Contains(errs, "there is no proxy in this sandbox") {
			t.Errorf("got %d %q", code, errs)
		}
	})
}

// A proxy's answer is read by hand (the helper links no HTTP stack): refusals with and
// without a length, and answers that are not HTTP, each end in one line.
func TestConnectReadsTheAnswer(t *testing.T) {
	for _, tc := range []struct{ name, answer, want string }{
		{"refusal", "HTTP/1.1 403 Forbidden\r\nContent-Length: 31\r\n\r\nx.test:22 is blocked by policy\nsecond line", "openworker: x.test:22 is blocked by policy\n"},
		{"refusal_until_hangup", "HTTP/1.0 502 Bad Gateway\r\n\r\nno route to x.test\n", "openworker: no route to x.test\n"},
		{"refusal_without_text", "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n", "openworker: the session's proxy refused x.test:22 (407 Proxy Authentication Required)\n"},
		{"not_http", "SSH-2.0-OpenSSH\r\n", `openworker: the session's proxy gave no answer for x.test:22: malformed answer "SSH-2.0-OpenSSH"` + "\n"},
		{"bad_length", "HTTP/1.1 403 Forbidden\r\nContent-Length: -4\r\n\r\n", `openworker: the session's proxy gave no answer for x.test:22: malformed Content-Length "-4"` + "\n"},
		{"hung_up", "HTTP/1.1 200 Connection", "openworker: the session's proxy gave no answer for x.test:22: EOF\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tstest.Serve(t, func(c net.Conn) {
				defer c.Close()
				io.WriteString(c, tc.answer)
			})
			env := map[string]string{"HTTPS_PROXY": "http://" + l.Addr().String()}
			var out, errb bytes.Buffer
			code := Connect([]string{"x.test", "22"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errb)
			if code != 1 || out.Len() != 0 || errb.String() != tc.want {
				t.Errorf("got %d %q %q, want %q", code, out.String(), errb.String(), tc.want)
			}
		})
	}
}
