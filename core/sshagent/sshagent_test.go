package sshagent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/openworker/openworker/core/tstest"
)

// world is a person's ~/.ssh with one key without a passphrase (id_ed25519), one with a
// passphrase (id_locked) and a key in their own agent that is not in ~/.ssh (other).
type world struct {
	dir      string
	signer   ssh.Signer // id_ed25519
	locked   ssh.Signer // id_locked (the person's agent holds it)
	other    ssh.Signer // only in the person's agent
	upstream string
	hosts    map[string]ssh.Signer // host name → its host key
	kh       string
}

func newSigner(t testing.TB) (ssh.Signer, ed25519.PrivateKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, priv
}

func writeKey(t testing.TB, path string, priv ed25519.PrivateKey, passphrase string) {
	t.Helper()
	var b *pem.Block
	var err error
	if passphrase == "" {
		b, err = ssh.MarshalPrivateKey(priv, "")
	} else {
		b, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(b), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := ssh.NewSignerFromKey(priv)
	os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(s.PublicKey()), 0o644)
}

func newWorld(t testing.TB) *world {
	t.Helper()
	w := &world{dir: t.TempDir(), hosts: map[string]ssh.Signer{}}
	var priv ed25519.PrivateKey
	w.signer, priv = newSigner(t)
	writeKey(t, filepath.Join(w.dir, "id_ed25519"), priv, "")
	var lpriv ed25519.PrivateKey
	w.locked, lpriv = newSigner(t)
	writeKey(t, filepath.Join(w.dir, "id_locked"), lpriv, "secret")
	var opriv ed25519.PrivateKey
	w.other, opriv = newSigner(t)
	// The person's own agent holds the locked key and one that is not the login's.
	kr := agent.NewKeyring()
	kr.Add(agent.AddedKey{PrivateKey: lpriv, Comment: "locked"})
	kr.Add(agent.AddedKey{PrivateKey: opriv, Comment: "other"})
	w.upstream = filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", w.upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { agent.ServeAgent(kr, c); c.Close() }()
		}
	}()
	// known_hosts: github.com in plain, git.example.com:2222 hashed.
	var lines []string
	for _, h := range []string{"github.com", "[git.example.com]:2222", "gitlab.com"} {
		hk, _ := newSigner(t)
		w.hosts[h] = hk
		name := h
		if strings.HasPrefix(h, "[") {
			name = knownhosts.HashHostname(h)
		}
		lines = append(lines, name+" "+strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hk.PublicKey()))))
	}
	w.kh = filepath.Join(w.dir, "known_hosts")
	os.WriteFile(w.kh, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	return w
}

// asker is a card stand-in: it records each question and answers with allow.
type asker struct {
	mu    sync.Mutex
	asked []Question
	allow bool
}

func (a *asker) ask(_ context.Context, q Question) Decision {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, q)
	if a.allow {
		return Decision{Allowed: true}
	}
	return Decision{Why: "denied on the card"}
}

func (a *asker) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.asked)
}

type recorder struct {
	mu  sync.Mutex
	all []Record
}

func (r *recorder) record(x Record) {
	r.mu.Lock()
	r.all = append(r.all, x)
	r.mu.Unlock()
}

func (r *recorder) last() Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.all) == 0 {
		return Record{}
	}
	return r.all[len(r.all)-1]
}

func startAgent(t testing.TB, w *world, o Options) (*Agent, string) {
	t.Helper()
	keys, notes := LoadKeys(w.dir, w.upstream)
	if len(notes) > 0 {
		t.Logf("notes: %v", notes)
	}
	o.Keys, o.Upstream, o.KnownHosts = keys, w.upstream, []string{w.kh}
	a := New(o)
	sock := filepath.Join(t.TempDir(), "a.sock")
	if err := a.Listen(sock); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, sock
}

func dial(t testing.TB, sock string) agent.ExtendedAgent {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return agent.NewClient(c)
}

// bind sends a session-bind for host as OpenSSH does after its key exchange, and returns the
// session's identifier.
func bind(t testing.TB, c agent.ExtendedAgent, hostKey ssh.Signer) []byte {
	t.Helper()
	id := make([]byte, 32)
	rand.Read(id)
	sig, err := hostKey.Sign(rand.Reader, id)
	if err != nil {
		t.Fatal(err)
	}
	msg := ssh.Marshal(struct {
		HostKey, ID, Sig []byte
		Fwd              bool
	}{hostKey.PublicKey().Marshal(), id, ssh.Marshal(sig), false})
	if _, err := c.Extension("session-bind@openssh.com", msg); err != nil {
		t.Fatalf("session-bind: %v", err)
	}
	return id
}

// userAuthData is what ssh asks its agent to sign to log in as user with key.
func userAuthData(id []byte, key ssh.PublicKey, hostKey ssh.PublicKey) []byte {
	if hostKey == nil {
		return ssh.Marshal(struct {
			ID      []byte
			Type    byte
			User    string
			Service string
			Method  string
			Signed  bool
			Alg     string
			Key     []byte
		}{id, msgUserAuthRequest, "git", "ssh-connection", "publickey", true, key.Type(), key.Marshal()})
	}
	return ssh.Marshal(struct {
		ID      []byte
		Type    byte
		User    string
		Service string
		Method  string
		Signed  bool
		Alg     string
		Key     []byte
		HostKey []byte
	}{id, msgUserAuthRequest, "git", "ssh-connection", "publickey-hostbound-v00@openssh.com", true, key.Type(), key.Marshal(), hostKey.Marshal()})
}

func sshsig(namespace string) []byte {
	h := sha256.Sum256([]byte("tree 1234\n"))
	return append([]byte("SSHSIG"), ssh.Marshal(struct{ NS, Reserved, Alg, Hash string }{namespace, "", "sha256", string(h[:])})...)
}

func TestListOffersOnlyTheLoginsKeys(t *testing.T) {
	w := newWorld(t)
	_, sock := startAgent(t, w, Options{})
	keys, err := dial(t, sock).List()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, k := range keys {
		got[k.Comment] = ssh.FingerprintSHA256(k)
	}
	want := map[string]string{"id_ed25519": ssh.FingerprintSHA256(w.signer.PublicKey()), "id_locked": ssh.FingerprintSHA256(w.locked.PublicKey())}
	if len(got) != len(want) || got["id_ed25519"] != want["id_ed25519"] || got["id_locked"] != want["id_locked"] {
		t.Fatalf("listed %v, want %v (the person's agent's other key never)", got, want)
	}
}

func TestLoginSignsOnlyAfterBindAndCard(t *testing.T) {
	w := newWorld(t)
	ask := &asker{allow: true}
	rec := &recorder{}
	_, sock := startAgent(t, w, Options{Ask: ask.ask, Record: rec.record, Command: func() string { return "git push" }})
	pub := w.signer.PublicKey()

	t.Run("no_bind", func(t *testing.T) {
		c := dial(t, sock)
		_, err := c.Sign(pub, userAuthData(make([]byte, 32), pub, nil))
		if err == nil || ask.count() != 0 {
			t.Fatalf("signed a login with no session-bind: %v, %d cards", err, ask.count())
		}
		if r := rec.last(); r.Signed || !strings.Contains(r.Reason, "OpenSSH 8.9") || r.Command != "git push" {
			t.Errorf("the refusal recorded: %+v", r)
		}
	})
	t.Run("allowed_once_per_bind", func(t *testing.T) {
		c := dial(t, sock)
		hk := w.hosts["github.com"]
		id := bind(t, c, hk)
		data := userAuthData(id, pub, hk.PublicKey())
		sig, err := c.Sign(pub, data)
		if err != nil {
			t.Fatalf("sign for an allowed host: %v", err)
		}
		if err := pub.Verify(data, sig); err != nil {
			t.Fatalf("the signature does not verify: %v", err)
		}
		if ask.count() != 1 || ask.asked[0].Host != "github.com" || ask.asked[0].Key != "id_ed25519" {
			t.Fatalf("cards: %+v", ask.asked)
		}
		if q := ask.asked[0].Text(); q != "The coworker wants to sign in to github.com over SSH as you, with key id_ed25519 ("+ssh.FingerprintSHA256(pub)+")" {
			t.Errorf("card text %q", q)
		}
		if r := rec.last(); !r.Signed || r.Host != "github.com" || r.KeyFP != ssh.FingerprintSHA256(pub) {
			t.Errorf("recorded %+v", r)
		}
		if _, err := c.Sign(pub, data); err == nil {
			t.Fatal("a second signature for the same bind was made")
		}
		if _, err := c.Extension("session-bind@openssh.com", []byte{}); err == nil {
			t.Fatal("a malformed rebind was taken")
		}
	})
	t.Run("session_answer_kept", func(t *testing.T) {
		c := dial(t, sock)
		hk := w.hosts["github.com"]
		id := bind(t, c, hk)
		if _, err := c.Sign(pub, userAuthData(id, pub, nil)); err != nil {
			t.Fatal(err)
		}
		if ask.count() != 1 {
			t.Fatalf("asked again for a host and key allowed for the session: %d", ask.count())
		}
	})
	t.Run("other_host_asks_again", func(t *testing.T) {
		c := dial(t, sock)
		hk := w.hosts["gitlab.com"]
		id := bind(t, c, hk)
		if _, err := c.Sign(pub, userAuthData(id, pub, nil)); err != nil {
			t.Fatal(err)
		}
		if ask.count() != 2 || ask.asked[1].Host != "gitlab.com" {
			t.Fatalf("cards: %+v", ask.asked)
		}
	})
	t.Run("through_the_persons_agent", func(t *testing.T) {
		c := dial(t, sock)
		hk := w.hosts["github.com"]
		id := bind(t, c, hk)
		lp := w.locked.PublicKey()
		data := userAuthData(id, lp, nil)
		sig, err := c.Sign(lp, data)
		if err != nil {
			t.Fatalf("sign with the key the person's agent holds: %v", err)
		}
		if err := lp.Verify(data, sig); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("hashed_name", func(t *testing.T) {
		_, sock := startAgent(t, w, Options{Ask: ask.ask, Candidates: func() []string { return []string{"github.com:443", "git.example.com:2222"} }})
		c := dial(t, sock)
		hk := w.hosts["[git.example.com]:2222"]
		id := bind(t, c, hk)
		if _, err := c.Sign(pub, userAuthData(id, pub, nil)); err != nil {
			t.Fatal(err)
		}
		if q := ask.asked[len(ask.asked)-1]; q.Host != "[git.example.com]:2222" {
			t.Fatalf("a hashed known_hosts entry named %q", q.Host)
		}
	})
}

func TestRefusals(t *testing.T) {
	w := newWorld(t)
	ask := &asker{}
	rec := &recorder{}
	_, sock := startAgent(t, w, Options{Ask: ask.ask, Record: rec.record})
	pub := w.signer.PublicKey()
	t.Run("denied", func(t *testing.T) {
		c := dial(t, sock)
		id := bind(t, c, w.hosts["github.com"])
		if _, err := c.Sign(pub, userAuthData(id, pub, nil)); err == nil {
			t.Fatal("signed what the person denied")
		}
		if r := rec.last(); r.Signed || r.Host != "github.com" || !strings.Contains(r.Reason, "denied on the card") {
			t.Errorf("recorded %+v", r)
		}
	})
	t.Run("unknown_host", func(t *testing.T) {
		c := dial(t, sock)
		stranger, _ := newSigner(t)
		id := bind(t, c, stranger)
		n := ask.count()
		if _, err := c.Sign(pub, userAuthData(id, pub, nil)); err == nil || ask.count() != n {
			t.Fatal("signed for a host not in known_hosts, or asked")
		}
		if !strings.Contains(rec.last().Reason, "not in your known_hosts") {
			t.Errorf("recorded %+v", rec.last())
		}
	})
	t.Run("forged_bind", func(t *testing.T) {
		c := dial(t, sock)
		// The host key of github.com, a signature by another key.
		forger, _ := newSigner(t)
		id := make([]byte, 32)
		sig, _ := forger.Sign(rand.Reader, id)
		msg := ssh.Marshal(struct {
			HostKey, ID, Sig []byte
			Fwd              bool
		}{w.hosts["github.com"].PublicKey().Marshal(), id, ssh.Marshal(sig), false})
		if _, err := c.Extension("session-bind@openssh.com", msg); err == nil {
			t.Fatal("a bind the host key did not sign was taken")
		}
		if _, err := c.Sign(pub, userAuthData(id, pub, nil)); err == nil {
			t.Fatal("signed after a forged bind")
		}
	})
	t.Run("other_session", func(t *testing.T) {
		ok := &asker{allow: true}
		_, sock := startAgent(t, w, Options{Ask: ok.ask})
		c := dial(t, sock)
		bind(t, c, w.hosts["github.com"])
		other := make([]byte, 32)
		rand.Read(other)
		if _, err := c.Sign(pub, userAuthData(other, pub, nil)); err == nil || ok.count() != 0 {
			t.Fatal("signed a login for a session the connection is not bound to")
		}
	})
	t.Run("arbitrary_data", func(t *testing.T) {
		ok := &asker{allow: true}
		_, sock := startAgent(t, w, Options{Ask: ok.ask})
		c := dial(t, sock)
		bind(t, c, w.hosts["github.com"])
		if _, err := c.Sign(pub, []byte("any data at all")); err == nil || ok.count() != 0 {
			t.Fatal("signed arbitrary data")
		}
	})
	t.Run("key_not_offered", func(t *testing.T) {
		c := dial(t, sock)
		op := w.other.PublicKey()
		id := bind(t, c, w.hosts["github.com"])
		if _, err := c.Sign(op, userAuthData(id, op, nil)); err == nil {
			t.Fatal("signed with a key of the person's agent that the login does not have")
		}
	})
	t.Run("no_add_remove_lock", func(t *testing.T) {
		c := dial(t, sock)
		_, priv := newSigner(t)
		if err := c.Add(agent.AddedKey{PrivateKey: priv}); err == nil {
			t.Error("added a key")
		}
		if err := c.RemoveAll(); err == nil {
			t.Error("removed all keys")
		}
		if err := c.Lock([]byte("x")); err == nil {
			t.Error("locked the agent")
		}
		if keys, _ := c.List(); len(keys) != 2 {
			t.Errorf("after the refused requests, %d keys are listed", len(keys))
		}
	})
}

func TestSigningHasItsOwnCard(t *testing.T) {
	w := newWorld(t)
	ask := &asker{}
	_, sock := startAgent(t, w, Options{Ask: ask.ask})
	pub := w.signer.PublicKey()
	c := dial(t, sock)
	if _, err := c.Sign(pub, sshsig("git")); err == nil {
		t.Fatal("signed a commit the person denied")
	}
	if ask.count() != 1 || ask.asked[0].Kind != Signing || !strings.Contains(ask.asked[0].Text(), "sign a git commit or tag") {
		t.Fatalf("cards: %+v", ask.asked)
	}
	ask.allow = true
	data := sshsig("git")
	sig, err := c.Sign(pub, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Verify(data, sig); err != nil {
		t.Fatal(err)
	}
	// A session-bound login is not a signing allowance, nor the other way round.
	id := bind(t, c, w.hosts["github.com"])
	n := ask.count()
	if _, err := c.Sign(pub, userAuthData(id, pub, nil)); err != nil || ask.count() != n+1 || ask.asked[n].Kind != Login {
		t.Fatalf("the login after a signing allowance: %v, %+v", err, ask.asked)
	}
}

func TestAlwaysAllowedAsksNoCard(t *testing.T) {
	w := newWorld(t)
	ask := &asker{}
	fp := ssh.FingerprintSHA256(w.signer.PublicKey())
	_, sock := startAgent(t, w, Options{Ask: ask.ask, AllowedAlways: func(kind string, names []string, k, ns string) bool {
		return kind == Login && k == fp && len(names) > 0 && names[0] == "github.com"
	}})
	c := dial(t, sock)
	pub := w.signer.PublicKey()
	id := bind(t, c, w.hosts["github.com"])
	if _, err := c.Sign(pub, userAuthData(id, pub, nil)); err != nil || ask.count() != 0 {
		t.Fatalf("a login always allowed: %v, %d cards", err, ask.count())
	}
}

func TestIsPrivateKey(t *testing.T) {
	w := newWorld(t)
	for _, name := range []string{"id_ed25519", "id_locked"} {
		b, _ := os.ReadFile(filepath.Join(w.dir, name))
		if !IsPrivateKey(b) {
			t.Errorf("%s is not seen as a private key", name)
		}
	}
	for _, name := range []string{"id_ed25519.pub", "known_hosts"} {
		b, _ := os.ReadFile(filepath.Join(w.dir, name))
		if IsPrivateKey(b) {
			t.Errorf("%s is seen as a private key", name)
		}
	}
}

// BenchmarkSign is a login signature through the session's agent for a host allowed for the
// session, with the key in the person's own agent, next to the same signature straight from
// the person's agent: the difference is what the sandbox's agent costs.
func BenchmarkSign(b *testing.B) {
	w := newWorld(b)
	ask := &asker{allow: true}
	_, sock := startAgent(b, w, Options{Ask: ask.ask})
	lp := w.locked.PublicKey()
	hk := w.hosts["github.com"]
	b.Run("persons_agent", func(b *testing.B) {
		for b.Loop() {
			c, err := net.Dial("unix", w.upstream)
			if err != nil {
				b.Fatal(err)
			}
			ac := agent.NewClient(c)
			id := make([]byte, 32)
			rand.Read(id)
			if _, err := ac.Sign(lp, userAuthData(id, lp, nil)); err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
	b.Run("openworker_agent", func(b *testing.B) {
		for b.Loop() {
			c, err := net.Dial("unix", sock)
			if err != nil {
				b.Fatal(err)
			}
			ac := agent.NewClient(c)
			id := bind(b, ac, hk)
			if _, err := ac.Sign(lp, userAuthData(id, lp, nil)); err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
}

// The parsers read what a command inside the sandbox sends: any bytes at all.
func FuzzParsers(f *testing.F) {
	id := make([]byte, 32)
	f.Add(userAuthData(id, ed25519PublicForFuzz(), nil))
	f.Add(sshsig("git"))
	f.Add([]byte{0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		parseUserAuth(data)
		parseSSHSig(data)
		parseSessionBind(data)
	})
}

func ed25519PublicForFuzz() ssh.PublicKey {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	k, _ := ssh.NewPublicKey(pub)
	return k
}

// A command cannot make the core hold more than MaxConns connections, nor more than
// MaxRequest bytes for a request, whatever length it claims.
func TestBounds(t *testing.T) {
	w := newWorld(t)
	_, sock := startAgent(t, w, Options{})
	var held []net.Conn
	for range MaxConns {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		if _, err := agent.NewClient(c).List(); err != nil {
			t.Fatalf("connection %d: %v", len(held), err)
		}
	}
	extra, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	extra.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := agent.NewClient(extra).List(); err == nil {
		t.Fatalf("connection %d was served", MaxConns+1)
	}
	for _, c := range held {
		c.Close()
	}
	tstest.WaitFor(t, 5*time.Second, func() error {
		c, err := net.Dial("unix", sock)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = agent.NewClient(c).List()
		return err
	})

	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte{0x00, 0xff, 0xff, 0xff, 11}) // "16 MiB to come"
	// Closed at once, not left waiting (and holding room) for the rest.
	n, err := c.Read(make([]byte, 16))
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("an oversized request was not refused at once: %d bytes, %v", n, err)
	}
}

// A person's agent that does not answer (one waiting for them to confirm) does not hold up
// the session's end.
func TestCloseDoesNotWaitForThePersonsAgent(t *testing.T) {
	w := newWorld(t)
	keys, _ := LoadKeys(w.dir, w.upstream)
	hang := filepath.Join(t.TempDir(), "hang.sock")
	l, err := net.Listen("unix", hang)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- c
		}
	}()
	a := New(Options{Keys: keys, Upstream: hang, KnownHosts: []string{w.kh}, Ask: (&asker{allow: true}).ask})
	sock := filepath.Join(t.TempDir(), "a.sock")
	if err := a.Listen(sock); err != nil {
		t.Fatal(err)
	}
	c := dial(t, sock)
	lp := w.locked.PublicKey()
	signed := make(chan error, 1)
	go func() {
		id := bind(t, c, w.hosts["github.com"])
		_, err := c.Sign(lp, userAuthData(id, lp, nil))
		signed <- err
	}()
	var up net.Conn
	select {
	case up = <-accepted:
		defer up.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the person's agent was never asked")
	}
	closed := make(chan struct{})
	go func() { a.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits for the person's agent")
	}
	if err := <-signed; err == nil {
		t.Fatal("signed after the agent was closed")
	}
}

// ScanKeyFile looks through the whole file, a chunk at a time: a mark or a character across
// two chunks is seen as one, and anything that is not text stays out.
func TestScanKeyFile(t *testing.T) {
	pad := func(n int) string { return strings.Repeat("a", n) }
	// Where the first chunk ends: the scan reads a chunk and room for the longest mark.
	edge := scanChunk + len("PuTTY-User-Key-File") - 1
	for _, tc := range []struct {
		name, data string
		want       string // a part of why; "" for a file that may enter
	}{
		{"empty", "", ""},
		{"config", "Host box\n  User me\n", ""},
		{"large_text", strings.Repeat("github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 é\n", 50000), ""},
		{"character_across_chunks", pad(edge-1) + "é" + pad(10), ""},
		{"character_across_later_chunks", pad(edge+scanChunk-2) + "€" + pad(10), ""},
		{"key_at_start", "-----BEGIN OPENSSH PRIVATE KEY-----\n", "holds a private key"},
		{"key_after_a_chunk", pad(3*scanChunk) + "\n-----BEGIN EC PRIVATE KEY-----\n", "holds a private key"},
		{"mark_across_chunks", pad(edge-16) + "-----BEGIN PRIVATE KEY-----\n", "holds a private key"}, // "PRIVA" | "TE KEY"
		{"mark_across_later_chunks", pad(edge+scanChunk-7) + "PuTTY-User-Key-File-2\n", "PuTTY"},
		{"putty", pad(5000) + "\nPuTTY-User-Key-File-3: ssh-ed25519\n", "PuTTY"},
		{"nul_far_in", pad(2*scanChunk+7) + "\x00", "is not text"},
		{"invalid_utf8", pad(100) + "\xff\xfe" + pad(100), "is not text"},
		{"ends_inside_a_character", pad(scanChunk+3) + "\xc3", "is not text"},
		{"pkcs12_header", "\x30\x82\x0a\x00\x02\x01\x03\x30\x82\x09\xf0\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x07\x01" + "\x00", "PKCS#12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, err := ScanKeyFile(strings.NewReader(tc.data))
			if err != nil || (tc.want == "") != (why == "") || !strings.Contains(why, tc.want) {
				t.Errorf("ScanKeyFile = %q, %v; want %q", why, err, tc.want)
			}
		})
	}
	if _, err := ScanKeyFile(iotest.ErrReader(errors.New("EIO"))); err == nil {
		t.Error("a read error was not said")
	}
}
