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
