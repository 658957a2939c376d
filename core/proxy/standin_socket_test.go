package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// socketClient is what gh does with http_unix_socket: every connection, whatever https URL
// it is for, is one to the socket, and the requests on it are plain HTTP.
func (r *standInRig) socketClient() (*http.Client, string) {
	r.t.Helper()
	path := filepath.Join(r.t.TempDir(), "https.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		r.t.Fatal(err)
	}
	go r.s.p.ServeSocket(l)
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
	tr := &http.Transport{DialContext: dial, DialTLSContext: dial, DisableKeepAlives: true}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}, path
}

func TestStandInSocketReplacesOnItsHostAndNowhereElse(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443", "gist.github.com:443", "forged.github.com:443")
	r.origin("api.github.com", nil, nil)
	r.origin("gist.github.com", nil, nil)
	// An origin whose certificate the proxy does not trust: the machine's own CA is not one
	// the real hosts are verified against.
	r.origin("forged.github.com", r.machine, nil)
	c, _ := r.socketClient()

	resp, body, err := r.get(c, "https://api.github.com/user", "token "+ghStandIn)
	if err != nil || resp.StatusCode != 200 || body != "hello from api.github.com over HTTP/1.1" {
		t.Fatalf("the login's host: %v %v %q", resp, err, body)
	}
	if saw := r.saw("api.github.com"); len(saw) != 1 || saw[0] != "token "+ghReal {
		t.Fatalf("the login's host saw %q, want the real token", saw)
	}

	// Another allowed host is reached, with the worthless stand-in.
	resp, body, err = r.get(c, "https://gist.github.com/", "token "+ghStandIn)
	if err != nil || resp.StatusCode != 200 || body != "hello from gist.github.com over HTTP/1.1" {
		t.Fatalf("another allowed host: %v %v %q", resp, err, body)
	}
	if saw := r.saw("gist.github.com"); len(saw) != 1 || saw[0] != "token "+ghStandIn {
		t.Fatalf("another host saw %q, want the stand-in", saw)
	}

	// A host not on the list is refused as through the proxy, and nothing is sent to it.
	resp, body, err = r.get(c, "https://paste.example/", "token "+ghStandIn)
	if err != nil || resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Proxy-Error") != BlockedByAllowlist {
		t.Fatalf("a host not on the list: %v %v %q", resp, err, body)
	}

	// A real host whose certificate does not verify gets no request.
	resp, body, err = r.get(c, "https://forged.github.com/", "token "+ghStandIn)
	if err != nil || resp.StatusCode != http.StatusBadGateway || resp.Header.Get("X-Proxy-Error") != BlockedBadCertificate ||
		!strings.Contains(body, "did not verify") {
		t.Fatalf("a host whose certificate does not verify: %v %v %q", resp, err, body)
	}
	if saw := r.saw("forged.github.com"); len(saw) != 0 {
		t.Fatalf("a host whose certificate does not verify got requests: %q", saw)
	}

	r.mu.Lock()
	subs := strings.Join(r.subs, " ")
	r.mu.Unlock()
	if subs != "gh@api.github.com" {
		t.Errorf("substitutions told: %q", subs)
	}
	var refused []string
	for _, ref := range r.refused() {
		refused = append(refused, ref.Host+" "+ref.Header)
	}
	if got := strings.Join(refused, ", "); got != "paste.example "+BlockedByAllowlist+", forged.github.com "+BlockedBadCertificate {
		t.Errorf("refusals: %s", got)
	}
}

// A connection of the socket carries requests to the host its first one named, no other:
// the real secret can never follow a second request to another host.
func TestStandInSocketConnectionKeepsToItsHost(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443", "gist.github.com:443")
	r.origin("api.github.com", nil, nil)
	r.origin("gist.github.com", nil, nil)
	_, path := r.socketClient()
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	io.WriteString(nc, "GET /user HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: token "+ghStandIn+"\r\n\r\n"+
		"GET / HTTP/1.1\r\nHost: gist.github.com\r\nAuthorization: token "+ghStandIn+"\r\n\r\n")
	br := bufio.NewReader(nc)
	for i, want := range []int{200, http.StatusMisdirectedRequest} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("answer %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
	if saw := r.saw("gist.github.com"); len(saw) != 0 {
		t.Fatalf("the second host got %q", saw)
	}
	if saw := r.saw("api.github.com"); len(saw) != 1 {
		t.Fatalf("the first host got %q", saw)
	}
}

// What a proxy client would send is not carried by the socket, which says what it is for.
func TestStandInSocketRefusesProxyRequests(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	r.origin("api.github.com", nil, nil)
	_, path := r.socketClient()
	for _, head := range []string{
		"CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\n\r\n",
		"GET https://api.github.com/user HTTP/1.1\r\nHost: api.github.com\r\n\r\n",
	} {
		nc, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(nc, head)
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		nc.Close()
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%q: %v %v", head, resp, err)
		}
	}
	if saw := r.saw("api.github.com"); len(saw) != 0 {
		t.Fatalf("the host got %q", saw)
	}
}
