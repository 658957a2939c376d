package proxy

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// hostScript is a host's side of a TLS 1.3 connection after its handshake, written record by
// record with keys of its own: what the proxy's record layer must read, whatever shape the
// host gives its records.
type hostScript struct {
	t    *testing.T
	conn net.Conn
	keys *trafficKeys
}

// sealed is a record of type typ holding content and pad bytes of padding.
func (h *hostScript) sealed(typ byte, content []byte, pad int) []byte {
	rec := appendRecord(nil, typ, content, pad)
	if err := h.keys.seal(rec); err != nil {
		h.t.Fatal(err)
	}
	return rec
}

func (h *hostScript) send(recs ...[]byte) {
	if _, err := h.conn.Write(bytes.Join(recs, nil)); err != nil {
		h.t.Log("the host's write:", err)
	}
}

// data sends b in records of the sizes given, in turn, each with a little padding.
func (h *hostScript) data(b []byte, sizes ...int) {
	for i := 0; len(b) > 0; i++ {
		k := min(len(b), sizes[i%len(sizes)])
		h.send(h.sealed(contentAppData, b[:k], min(i%3, maxPlaintext-k)))
		b = b[k:]
	}
}

// handshakeMsg is a post-handshake message of type typ.
func handshakeMsg(typ byte, body []byte) []byte {
	return append(handshakeHeader(typ, len(body)), body...)
}

// keyUpdate sends a KeyUpdate and moves to the next keys.
func (h *hostScript) keyUpdate(requested bool) {
	var r byte
	if requested {
		r = 1
	}
	h.send(h.sealed(contentHS, handshakeMsg(hsKeyUpdate, []byte{r}), 0))
	if err := h.keys.update(); err != nil {
		h.t.Fatal(err)
	}
}

// ticket sends a NewSessionTicket (RFC 8446 §4.6.1): lifetime, age add, a nonce, the ticket, no
// extensions.
func (h *hostScript) ticket() {
	body := []byte{0, 0, 0x0e, 0x10, 1, 2, 3, 4, 1, 9, 0, 200}
	body = append(body, bytes.Repeat([]byte{7}, 200)...)
	h.send(h.sealed(contentHS, handshakeMsg(hsSessionTicket, append(body, 0, 0)), 5))
}

// scriptedHost serves TLS 1.3 on loopback with a certificate for name from the rig's public
// CA; its TLS stack does the handshake and reads each request, and answer writes what goes
// back, record by record. It returns the host's address.
func (r *standInRig) scriptedHost(name string, answer func(h *hostScript, req *http.Request)) string {
	r.t.Helper()
	leaf, err := r.public.Leaf(name)
	if err != nil {
		r.t.Fatal(err)
	}
	// The connection is closed by Serve, not by the TLS stack, whose close_notify would be
	// sealed with keys left behind.
	l := tstest.Serve(r.t, func(c net.Conn) {
		var secret serverSecret
		tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{*leaf}, MinVersion: tls.VersionTLS13,
			SessionTicketsDisabled: true, KeyLogWriter: &secret})
		if tc.Handshake() != nil {
			return
		}
		keys, err := newTrafficKeys(tc.ConnectionState().CipherSuite, secret.secret)
		if err != nil {
			r.t.Error(err)
			return
		}
		h := &hostScript{t: r.t, conn: c, keys: keys}
		br := bufio.NewReader(tc)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			r.mu.Lock()
			r.seen[name] = append(r.seen[name], req.Header.Get("Authorization"))
			r.mu.Unlock()
			answer(h, req)
		}
	})
	r.s.net.route(name, 443, l.Addr().String())
	return l.Addr().String()
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// The keys, sealing, padding and key updates of the record layer agree with crypto/tls's:
// a host that writes its records with them is read by crypto/tls as a client.
func TestRecordLayerAgreesWithCryptoTLS(t *testing.T) {
	r := newStandInRig(t)
	want := randomBytes(70000)
	addr := r.scriptedHost("example.test", func(h *hostScript, req *http.Request) {
		h.ticket()
		h.send(h.sealed(contentAppData, want[:100], 300), h.sealed(contentAppData, nil, 0))
		h.keyUpdate(true)
		h.data(want[100:50000], 16384, 1, 999)
		h.keyUpdate(false)
		h.data(want[50000:], 4096)
	})
	pool := x509.NewCertPool()
	pool.AddCert(r.public.Certificate())
	c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "example.test", RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: example.test\r\n\r\n")
	got := make([]byte, len(want))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("crypto/tls read %v; the bytes match: %v", err, bytes.Equal(got, want))
	}
}

// What a host sends after the handshake is read whatever its records' shape — padding, empty
// records, session tickets, key updates between the records of a body — and the sandbox gets
// every answer whole: bodies of known length (passed record by record), chunked ones, and one
// that ends where the host closes the connection, after them on the same connection.
func TestStandInAnswersWhateverTheHostsRecords(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	body := randomBytes(300 << 10)
	r.scriptedHost("api.github.com", func(h *hostScript, req *http.Request) {
		switch req.URL.Path {
		case "/known":
			h.ticket()
			h.send(h.sealed(contentAppData, []byte("HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"), 40))
			h.data(body[:1], 1)
			h.send(h.sealed(contentAppData, nil, 10))
			h.data(body[1:100000], 16384, 3, 16000)
			h.keyUpdate(true)
			h.ticket()
			h.data(body[100000:], 16384, 16384, 777)
		case "/chunked":
			h.data([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), 5)
			for b := body; len(b) > 0; {
				k := min(len(b), 50000)
				h.data(fmt.Appendf(nil, "%x\r\n%s\r\n", k, b[:k]), 16384, 100)
				b = b[k:]
			}
			h.keyUpdate(false)
			h.data([]byte("0\r\n\r\n"), 2)
		default:
			// Until the host closes, as many do, without TLS's close_notify.
			h.data([]byte("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nlast."), 16384)
			h.conn.(*net.TCPConn).CloseWrite()
		}
	})
	c := r.client(true)
	for _, path := range []string{"/known", "/chunked", "/known", "/last"} {
		_, got, err := r.get(c, "https://api.github.com"+path, "token "+ghStandIn)
		want := string(body)
		if path == "/last" {
			want = "last."
		}
		if err != nil || got != want {
			t.Fatalf("%s: %v; %d bytes, want %d (equal: %v)", path, err, len(got), len(want), got == want)
		}
	}
	for _, a := range r.saw("api.github.com") {
		if a != "token "+ghReal {
			t.Fatalf("a request reached the host with %q", a)
		}
	}
}

// Bytes a host sends past the end of a body of known length, in the body's last record, are
// not passed as part of that body: the sandbox's next request reads them as the host's next
// answer, as it would without the proxy.
func TestStandInBodyEndsWhereItsLengthSays(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	body := randomBytes(40000)
	r.scriptedHost("api.github.com", func(h *hostScript, req *http.Request) {
		if req.URL.Path != "/first" {
			return // the answer was sent already
		}
		h.send(h.sealed(contentAppData, []byte("HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"), 0))
		h.data(body[:32768], 16384)
		h.send(h.sealed(contentAppData, append(append([]byte{}, body[32768:]...), "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext"...), 0))
	})
	c := r.client(true)
	if _, got, err := r.get(c, "https://api.github.com/first", "token "+ghStandIn); err != nil || got != string(body) {
		t.Fatalf("first: %v, %d bytes of %d (equal: %v)", err, len(got), len(body), got == string(body))
	}
	if _, got, err := r.get(c, "https://api.github.com/second", "token "+ghStandIn); err != nil || got != "next" {
		t.Fatalf("second: %v, %q", err, got)
	}
}

// A record from the host that does not decrypt (changed on the way) ends the connection: the
// sandbox gets the body up to it, nothing of it or after it, and an error, not a short body
// taken for whole.
func TestStandInRecordThatDoesNotDecryptEndsTheConnection(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	body := randomBytes(100000)
	r.scriptedHost("api.github.com", func(h *hostScript, req *http.Request) {
		h.send(h.sealed(contentAppData, []byte("HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"), 0))
		h.data(body[:2*16384], 16384)
		bad := h.sealed(contentAppData, body[2*16384:3*16384], 0)
		bad[100] ^= 1
		h.send(bad)
		h.data(body[3*16384:], 16384)
	})
	c := r.client(true)
	_, got, err := r.get(c, "https://api.github.com/", "token "+ghStandIn)
	if err == nil || len(got) > 2*16384 || got != string(body[:len(got)]) {
		t.Fatalf("got %d bytes (a prefix of the body: %v), error %v; want at most %d and an error", len(got), got == string(body[:len(got)]), err, 2*16384)
	}
}

// keyLog keeps a handshake's secrets by their key log label.
type keyLog map[string][]byte

func (k keyLog) Write(line []byte) (int, error) {
	var label, random string
	var secret []byte
	if _, err := fmt.Sscanf(string(line), "%s %s %x", &label, &random, &secret); err == nil {
		k[label] = secret
	}
	return len(line), nil
}

// Once the proxy writes the sandbox's records itself, the sandbox side's TLS stack writes
// nothing (its records would be sealed with keys and sequence numbers already used): a
// program that asks for a key update gets the proxy's, before the next answer, and its
// connection goes on under the new keys.
func TestStandInProgramAsksForAKeyUpdate(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	r.origin("api.github.com", nil, nil)
	raw, resp := rawConnect(t, r.s.p.Addrs()[0].String(), "api.github.com:443", basic(User, r.s.tok))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	pool := x509.NewCertPool()
	pool.AddCert(r.machine.Certificate())
	secrets := keyLog{}
	rawBr := bufio.NewReader(raw)
	// The program's TLS stack does the handshake and sends the first request; the rest is
	// read and written here, record by record, to see what the proxy sends.
	tc := tls.Client(bufferedConn{raw, &recordAtATime{r: rawBr}}, &tls.Config{ServerName: "api.github.com", RootCAs: pool,
		KeyLogWriter: secrets, MinVersion: tls.VersionTLS13, NextProtos: []string{"http/1.1"}})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	suite := tc.ConnectionState().CipherSuite
	mine, err := newTrafficKeys(suite, secrets["CLIENT_TRAFFIC_SECRET_0"])
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := newTrafficKeys(suite, secrets["SERVER_TRAFFIC_SECRET_0"])
	if err != nil {
		t.Fatal(err)
	}
	first := theirs.secret
	request := "GET / HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: token " + ghStandIn + "\r\n\r\n"
	io.WriteString(tc, request) // one record
	mine.seq = 1
	answers := bufio.NewReader(&hostRecords{src: rawBr, keys: theirs})
	read := func() string {
		t.Helper()
		resp, err := http.ReadResponse(answers, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(); got != "hello from api.github.com over HTTP/1.1" {
		t.Fatalf("first answer: %q", got)
	}
	h := &hostScript{t: t, conn: raw, keys: mine}
	h.keyUpdate(true)
	h.send(h.sealed(contentAppData, []byte(request), 0))
	if got := read(); got != "hello from api.github.com over HTTP/1.1" {
		t.Fatalf("answer after the key update: %q", got)
	}
	if bytes.Equal(theirs.secret, first) {
		t.Fatal("the proxy sent no KeyUpdate of its own")
	}
}

// A host that speaks only TLS 1.2 is read by crypto/tls, as before: bodies of every shape
// arrive whole.
func TestStandInHostOnTLS12(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	body := randomBytes(1<<20 + 7)
	leaf, _ := r.public.Leaf("api.github.com")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/known" {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		w.Write(body)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}, MaxVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	r.s.net.route("api.github.com", 443, srv.Listener.Addr().String())
	c := r.client(true)
	for _, path := range []string{"/known", "/chunked", "/known"} {
		if _, got, err := r.get(c, "https://api.github.com"+path, "token "+ghStandIn); err != nil || got != string(body) {
			t.Fatalf("%s: %v, %d bytes of %d", path, err, len(got), len(body))
		}
	}
}

// Bodies of known length arrive whole at every length around a record's, from a host that
// writes them in pieces of odd sizes, many on one connection.
func TestStandInBodiesOfEveryLength(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	body := randomBytes(3 << 20)
	r.origin("api.github.com", nil, func(w http.ResponseWriter, req *http.Request) {
		n, _ := strconv.Atoi(req.URL.Query().Get("n"))
		piece, _ := strconv.Atoi(req.URL.Query().Get("piece"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		for b := body[:n]; len(b) > 0; {
			k := min(len(b), piece)
			w.Write(b[:k])
			w.(http.Flusher).Flush()
			b = b[k:]
		}
	})
	c := r.client(true)
	for _, n := range []int{0, 1, 16383, 16384, 16385, 65536, 300001, 3 << 20} {
		for _, piece := range []int{1000, 16384, 1 << 20} {
			url := "https://api.github.com/?n=" + strconv.Itoa(n) + "&piece=" + strconv.Itoa(piece)
			if _, got, err := r.get(c, url, "token "+ghStandIn); err != nil || got != string(body[:n]) {
				t.Fatalf("%d bytes in pieces of %d: %v, got %d (equal: %v)", n, piece, err, len(got), got == string(body[:n]))
			}
		}
	}
}

// A program that keeps TLS sessions to resume them (curl, OpenSSL's and Go's clients with a
// session cache) is answered: no ticket is sent on the sandbox's side, whose records the
// proxy counts from the first after the handshake.
func TestStandInProgramThatResumesSessions(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	r.origin("api.github.com", nil, nil)
	c := r.client(true)
	tr := c.Transport.(*http.Transport)
	tr.TLSClientConfig.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	for i := range 2 {
		if _, got, err := r.get(c, "https://api.github.com/", "token "+ghStandIn); err != nil || got != "hello from api.github.com over HTTP/1.1" {
			t.Fatalf("connection %d: %v, %q", i, err, got)
		}
		tr.CloseIdleConnections()
	}
}

// writtenConn keeps what is written to it.
type writtenConn struct {
	net.Conn
	got bytes.Buffer
}

func (w *writtenConn) Write(p []byte) (int, error) { return w.got.Write(p) }

// FuzzHostRecords gives the host side's record layer any sequence of records, sealed with its
// keys (type, length, content, as the input spells them): it never panics; what it reads is
// the content of the application-data records, in order, up to the first it refuses; and
// what it passes as a body of n bytes reaches the sandbox's side as records that open, with
// that side's keys, to the same content.
func FuzzHostRecords(f *testing.F) {
	f.Add([]byte("\x17\x00\x05hello\x17\x00\x00\x16\x00\x05\x18\x00\x00\x01\x00\x17\x00\x03abc"), int64(4))
	f.Add([]byte("\x16\x00\x18\x04\x00\x00\x14\x00\x00\x0e\x10\x01\x02\x03\x04\x01\x09\x00\x03abc\x00\x00\x17\x00\x02ok\x15\x00\x02\x01\x00"), int64(2))
	f.Add(append([]byte("\x17\x40\x01"), make([]byte, 16385)...), int64(16385))
	secret := bytes.Repeat([]byte{9}, 32)
	f.Fuzz(func(t *testing.T, spec []byte, n int64) {
		keys, err := newTrafficKeys(tls.TLS_AES_128_GCM_SHA256, secret)
		if err != nil {
			t.Fatal(err)
		}
		var stream, want []byte
		for len(spec) >= 3 {
			typ, k := max(spec[0], 1), min(int(spec[1])<<8|int(spec[2]), len(spec)-3) // 0 would read as padding
			content := spec[3 : 3+k]
			spec = spec[3+k:]
			rec := appendRecord(nil, typ, content, 0)
			keys.seal(rec)
			stream = append(stream, rec...)
			if typ == contentAppData {
				want = append(want, content...)
			}
		}
		read := func(b []byte, suite uint16, secret []byte) *hostRecords {
			k, err := newTrafficKeys(suite, secret)
			if err != nil {
				t.Fatal(err)
			}
			return &hostRecords{src: bufio.NewReader(bytes.NewReader(b)), keys: k}
		}
		got, _ := io.ReadAll(read(stream, tls.TLS_AES_128_GCM_SHA256, secret))
		if !bytes.HasPrefix(want, got) {
			t.Fatalf("read %q, not a prefix of the content %q", got, want)
		}
		n = min(max(n, 0), int64(len(want))+1)
		sandboxSecret := bytes.Repeat([]byte{3}, 48)
		sandboxKeys, _ := newTrafficKeys(tls.TLS_AES_256_GCM_SHA384, sandboxSecret)
		out := &writtenConn{}
		h := read(stream, tls.TLS_AES_128_GCM_SHA256, secret)
		s := &sandboxRecords{raw: out, batch: &batchConn{}, host: h, keys: sandboxKeys, upBr: bufio.NewReader(bytes.NewReader(nil))}
		passErr := h.passBody(s, &lengthEnd{left: n})
		sent, err := io.ReadAll(read(out.got.Bytes(), tls.TLS_AES_256_GCM_SHA384, sandboxSecret))
		if (passErr == nil) != (len(sent) == int(n)) || len(sent) > len(got) || !bytes.HasPrefix(want, sent) || (err != nil && err != io.ErrUnexpectedEOF) {
			t.Fatalf("the sandbox's side got %q (%v; passing: %v), want %q", sent, err, passErr, want[:n])
		}
	})
}

// goneConn is a sandbox's side that is gone.
type goneConn struct{ net.Conn }

func (goneConn) Write(p []byte) (int, error) { return 0, net.ErrClosed }

// A body whose sandbox side is gone stops passing, with the error, whichever goroutine wrote.
func TestPassBodyToASandboxThatIsGone(t *testing.T) {
	secret := bytes.Repeat([]byte{9}, 32)
	keys, _ := newTrafficKeys(tls.TLS_AES_128_GCM_SHA256, secret)
	h := &hostScript{t: t, keys: keys}
	var stream []byte
	for range 64 {
		stream = append(stream, h.sealed(contentAppData, make([]byte, maxPlaintext), 0)...)
	}
	for _, n := range []int64{100, 64 * maxPlaintext} {
		hostKeys, _ := newTrafficKeys(tls.TLS_AES_128_GCM_SHA256, secret)
		host := &hostRecords{src: bufio.NewReader(bytes.NewReader(stream)), keys: hostKeys}
		sandboxKeys, _ := newTrafficKeys(tls.TLS_AES_128_GCM_SHA256, secret)
		s := &sandboxRecords{raw: goneConn{}, batch: &batchConn{}, host: host, keys: sandboxKeys, upBr: bufio.NewReader(bytes.NewReader(nil))}
		if err := host.passBody(s, &lengthEnd{left: n}); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("%d bytes to a sandbox that is gone: %v", n, err)
		}
	}
}

// A chunked body passes as the host framed it — extensions, trailer fields and all — and
// ends where its framing does: what follows in the same record is the next answer.
func TestStandInChunkedBodyPassesAsFramed(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	big := randomBytes(70000)
	r.scriptedHost("api.github.com", func(h *hostScript, req *http.Request) {
		switch req.URL.Path {
		case "/trailer":
			h.send(h.sealed(contentAppData, []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"+
				"5;name=\"a value\"\r\nhello\r\n6\r\n world\r\n0\r\nX-Checksum: abc\r\n\r\n"+
				"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext"), 0))
		case "/big":
			h.data([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), 100)
			h.data(append(append(fmt.Appendf(nil, "%X\r\n", len(big)), big...), "\r\n0\r\n\r\n"...), 16384, 16384, 1)
		}
	})
	c := r.client(true)
	req, _ := http.NewRequest("GET", "https://api.github.com/trailer", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "hello world" || resp.Trailer.Get("X-Checksum") != "abc" {
		t.Fatalf("got %q (%v), trailer %v", body, err, resp.Trailer)
	}
	if _, got, err := r.get(c, "https://api.github.com/next", ""); err != nil || got != "next" {
		t.Fatalf("the answer after the chunked one: %q, %v", got, err)
	}
	if _, got, err := r.get(c, "https://api.github.com/big", ""); err != nil || got != string(big) {
		t.Fatalf("a big chunk: %d bytes, %v", len(got), err)
	}
}

// A chunked body framed in a way a program could read otherwise than the proxy does ends the
// connection: the program never gets it as a whole answer.
func TestStandInChunkedBodyFramedOddlyEndsTheConnection(t *testing.T) {
	for name, body := range map[string]string{
		"bare LF":             "5\nhello\r\n0\r\n\r\n",
		"space after a size":  "5 \r\nhello\r\n0\r\n\r\n",
		"not hexadecimal":     "x5\r\nhello\r\n0\r\n\r\n",
		"no CRLF after data":  "5\r\nhelloXX0\r\n\r\n",
		"sixteen digits":      "0000000000000005\r\nhello\r\n0\r\n\r\n",
		"folded trailer line": "5\r\nhello\r\n0\r\nX-A: 1\r\n continued\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			r := newStandInRig(t, "api.github.com:443")
			r.scriptedHost("api.github.com", func(h *hostScript, req *http.Request) {
				h.send(h.sealed(contentAppData, []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"+body), 0))
			})
			if _, got, err := r.get(r.client(true), "https://api.github.com/", ""); err == nil {
				t.Fatalf("the program read %q as a whole answer", got)
			}
		})
	}
}

// FuzzChunkedEnd checks the chunked framing the proxy passes against Go's HTTP reader, as a
// program reads it: wherever the proxy says a body ends, Go reads a whole body that ends
// there too.
func FuzzChunkedEnd(f *testing.F) {
	for _, s := range []string{"5\r\nhello\r\n0\r\n\r\nrest", "a;x=y\r\n0123456789\r\n0\r\nA: b\r\n\r\n", "0\r\n\r\n", "5\nhello\r\n0\r\n\r\n"} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, b []byte, split int) {
		var c chunkedEnd
		split = min(max(split, 0), len(b))
		k1, err := c.take(b[:split])
		n := k1
		if err == nil && !c.ended() {
			var k2 int
			k2, err = c.take(b[split:])
			n += k2
		}
		if err != nil || !c.ended() {
			return
		}
		br := bufio.NewReader(bytes.NewReader(append([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), b...)))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(resp.Body); err != nil {
			t.Fatalf("the proxy ends the body at %d; Go cannot read it: %v", n, err)
		}
		if rest := br.Buffered(); rest != len(b)-n {
			t.Fatalf("the proxy ends the body at %d, Go at %d", n, len(b)-rest)
		}
	})
}
