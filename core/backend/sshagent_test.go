package backend

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/openworker/openworker/core/apitype"
	"github.com/openworker/openworker/core/approvals"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/tstest"
)

func newSSHSigner(t *testing.T) (ssh.Signer, ed25519.PrivateKey) {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, priv
}

// newSSHWorld is a backend whose ssh login's keys stay outside: a key without a passphrase in
// ~/.ssh, and servers of the given names in known_hosts, with their host keys.
func newSSHWorld(t *testing.T, cardWait time.Duration, names ...string) (*fixture, ssh.Signer, map[string]ssh.Signer) {
	t.Helper()
	f := newFixture(t, "[[sandbox_credentials]]\nname = \"ssh\"\nkeys = \"agent\"\nenabled = true\n")
	f.b.opts.SSHCardWait = cardWait
	home := f.b.m.UserHome()
	user, priv := newSSHSigner(t)
	b, _ := ssh.MarshalPrivateKey(priv, "")
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), pem.EncodeToMemory(b), 0o600)
	servers := map[string]ssh.Signer{}
	var kh string
	for _, name := range names {
		servers[name], _ = newSSHSigner(t)
		kh += name + " " + string(ssh.MarshalAuthorizedKey(servers[name].PublicKey()))
	}
	os.WriteFile(filepath.Join(home, ".ssh", "known_hosts"), []byte(kh), 0o644)
	return f, user, servers
}

// sshLogin binds a new connection to the agent at sock to the server hostKey, as OpenSSH
// does, and asks for the signature that logs in to it with key.
func sshLogin(t *testing.T, sock string, hostKey ssh.Signer, key ssh.PublicKey) error {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := agent.NewClient(c)
	id := make([]byte, 32)
	rand.Read(id)
	sig, _ := hostKey.Sign(rand.Reader, id)
	if _, err := a.Extension("session-bind@openssh.com", ssh.Marshal(struct {
		HostKey, ID, Sig []byte
		Fwd              bool
	}{hostKey.PublicKey().Marshal(), id, ssh.Marshal(sig), false})); err != nil {
		t.Fatalf("session-bind: %v", err)
	}
	_, err = a.Sign(key, ssh.Marshal(struct {
		ID                    []byte
		Type                  byte
		User, Service, Method string
		Signed                bool
		Alg                   string
		Key                   []byte
	}{id, 50, "git", "ssh-connection", "publickey", true, key.Type(), key.Marshal()}))
	return err
}

// TestSSHCardWaitAndAnswers: a signature waits for its card, and is refused when the wait
// ends with the card still up; the card's later answer holds for the session's next login;
// Always keeps the host and key with the ssh entry in the settings file, and the next session
// signs without a card.
func TestSSHCardWaitAndAnswers(t *testing.T) {
	f, user, servers := newSSHWorld(t, 300*time.Millisecond, "one.example", "two.example")
	one, two := servers["one.example"], servers["two.example"]
	fp := ssh.FingerprintSHA256(user.PublicKey())

	s, _ := f.start(t)
	r, err := s.Exec(runner.ExecArgs{Command: `printf %s "$SSH_AUTH_SOCK"`}, nil)
	if err != nil || len(r.Stdout) == 0 {
		t.Fatalf("SSH_AUTH_SOCK: %q %v", r.Stdout, err)
	}
	sock := string(r.Stdout)

	start := time.Now()
	if err := sshLogin(t, sock, one, user.PublicKey()); err == nil {
		t.Fatal("signed with no answer")
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("the signature did not wait for its card (%v)", d)
	}
	cards := f.b.Cards()
	if len(cards) != 1 || cards[0].Kind != string(approvals.SSHLogin) || cards[0].Site != "one.example" || !strings.Contains(cards[0].Reason, "with key id_ed25519 ("+fp+")") {
		t.Fatalf("the card after the wait: %+v", cards)
	}
	// The next command's output says why ssh failed.
	if r, _ := s.Exec(runner.ExecArgs{Command: "true"}, nil); !strings.Contains(string(r.Stderr), "was not answered within 300ms") {
		t.Errorf("the refusal is not said: %q", r.Stderr)
	}
	if _, err := f.b.Answer(cards[0].ID, "session"); err != nil {
		t.Fatal(err)
	}
	if err := sshLogin(t, sock, one, user.PublicKey()); err != nil || len(f.b.Cards()) != 0 {
		t.Fatalf("after Allow for this session: %v, %d cards", err, len(f.b.Cards()))
	}

	done := make(chan error, 1)
	go func() { done <- sshLogin(t, sock, two, user.PublicKey()) }()
	tstest.WaitFor(t, 5*time.Second, func() error {
		if len(f.b.Cards()) != 1 {
			return os.ErrNotExist
		}
		return nil
	})
	if _, err := f.b.Answer(f.b.Cards()[0].ID, "always"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("after Always allow: %v", err)
	}
	text, _ := os.ReadFile(f.settings)
	if !strings.Contains(string(text), `agent_logins = ["two.example `+fp+`"]`) {
		t.Fatalf("Always allow is not kept with the entry:\n%s", text)
	}
	s2, err := f.b.Start(context.Background(), Request{Writable: []string{f.project}})
	if err != nil {
		t.Fatal(err)
	}
	r, _ = s2.Exec(runner.ExecArgs{Command: `printf %s "$SSH_AUTH_SOCK"`}, nil)
	if err := sshLogin(t, string(r.Stdout), two, user.PublicKey()); err != nil || len(f.b.Cards()) != 0 {
		t.Fatalf("a host always allowed, in a new session: %v, %d cards", err, len(f.b.Cards()))
	}
	if err := sshLogin(t, string(r.Stdout), one, user.PublicKey()); err == nil {
		t.Fatal("a host allowed for another session only was signed for")
	}
	audit, _ := os.ReadFile(f.audit)
	for _, want := range []string{`"type":"ssh.signed"`, `"type":"ssh.refused"`, `"host":"two.example"`, `"key":"` + fp + `"`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("the audit trail has no %s", want)
		}
	}
	// The answer that allowed a signature is recorded before the signature.
	answered, signed := -1, -1
	for i, line := range strings.Split(string(audit), "\n") {
		switch {
		case answered < 0 && strings.Contains(line, `"type":"card.answered"`) && strings.Contains(line, "two.example"):
			answered = i
		case signed < 0 && strings.Contains(line, `"type":"ssh.signed"`) && strings.Contains(line, `"host":"two.example"`):
			signed = i
		}
	}
	if answered < 0 || signed < 0 || answered > signed {
		t.Errorf("card.answered at line %d, the ssh.signed it allowed at line %d; want the answer first:\n%s", answered, signed, audit)
	}
}

// sshSign asks the agent at sock to sign data for namespace with key, as ssh-keygen -Y sign
// (git's commit signing) does.
func sshSign(t *testing.T, sock string, key ssh.PublicKey, namespace string) error {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := sha256.Sum256([]byte("the data"))
	_, err = agent.NewClient(c).Sign(key, append([]byte("SSHSIG"), ssh.Marshal(struct{ NS, Reserved, Alg, Hash string }{namespace, "", "sha256", string(h[:])})...))
	return err
}

// TestSSHAnswerKeepsItsKind: an answer to a signing card (what a signature is for, its
// namespace) never lets a login to a server of the same name sign, nor an answer to a login
// card a signature for a namespace of the server's name: each asks on a card of its own kind,
// for the session and always alike.
func TestSSHAnswerKeepsItsKind(t *testing.T) {
	// A server per case: an Always answer holds for the cases after it.
	f, user, servers := newSSHWorld(t, 30*time.Second, "one.example", "two.example", "three.example", "four.example", "five.example")
	fp := ssh.FingerprintSHA256(user.PublicKey())
	login := func(name string) func(string) error {
		return func(sock string) error { return sshLogin(t, sock, servers[name], user.PublicKey()) }
	}
	sign := func(name string) func(string) error {
		return func(sock string) error { return sshSign(t, sock, user.PublicKey(), name) }
	}

	var last string // the last session's ID
	newSock := func(t *testing.T) string {
		s, _ := f.start(t)
		last = s.ID
		r, err := s.Exec(runner.ExecArgs{Command: `printf %s "$SSH_AUTH_SOCK"`}, nil)
		if err != nil || len(r.Stdout) == 0 {
			t.Fatalf("SSH_AUTH_SOCK: %q %v", r.Stdout, err)
		}
		return string(r.Stdout)
	}
	// onCard runs step, which must put up a card of kind want for name, answers it, and
	// says what step came to.
	onCard := func(t *testing.T, sock string, step func(string) error, want approvals.Kind, name, answer string) error {
		done := make(chan error, 1)
		go func() { done <- step(sock) }()
		var card CardInfo
		tstest.WaitFor(t, 10*time.Second, func() error {
			select {
			case err := <-done:
				t.Fatalf("signed or refused without a card (want a %s card for %s): %v", want, name, err)
			default:
			}
			cards := f.b.Cards()
			if len(cards) != 1 {
				return os.ErrNotExist
			}
			card = cards[0]
			return nil
		})
		if approvals.Kind(card.Kind) != want || card.Site != name {
			t.Fatalf("the card is %s for %s, want %s for %s", card.Kind, card.Site, want, name)
		}
		if _, err := f.b.Answer(card.ID, answer); err != nil {
			t.Fatal(err)
		}
		return <-done
	}
	// ask answers first's card, then finds that second puts up a card of its own kind.
	ask := func(t *testing.T, name, answer string, first, second approvals.Kind) {
		steps := map[approvals.Kind]func(string) error{approvals.SSHLogin: login(name), approvals.SSHSigning: sign(name)}
		sock := newSock(t)
		if err := onCard(t, sock, steps[first], first, name, answer); err != nil {
			t.Fatalf("after %s: %v", answer, err)
		}
		if err := onCard(t, sock, steps[second], second, name, "deny"); err == nil {
			t.Fatal("signed after deny")
		}
	}
	t.Run("signing_then_login", func(t *testing.T) { ask(t, "one.example", "session", approvals.SSHSigning, approvals.SSHLogin) })
	t.Run("login_then_signing", func(t *testing.T) { ask(t, "two.example", "session", approvals.SSHLogin, approvals.SSHSigning) })
	t.Run("always_signing_then_login", func(t *testing.T) { ask(t, "three.example", "always", approvals.SSHSigning, approvals.SSHLogin) })
	t.Run("always_login_then_signing", func(t *testing.T) { ask(t, "four.example", "always", approvals.SSHLogin, approvals.SSHSigning) })
	t.Run("access_and_audit", func(t *testing.T) {
		// The session's Access list and the audit trail say each answer's kind.
		ask(t, "five.example", "session", approvals.SSHSigning, approvals.SSHLogin)
		a, err := f.b.Access(last)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []apitype.SSHAnswer{
			{Kind: apitype.SSHSigning, Name: "five.example", Key: fp, Source: SessionOnly},
			{Kind: apitype.SSHSigning, Name: "three.example", Key: fp, Source: FromSettings},
			{Kind: apitype.SSHLogin, Name: "four.example", Key: fp, Source: FromSettings},
		} {
			if !slices.Contains(a.SSH, want) {
				t.Errorf("the session's Access has no %s (%s): %+v", want, want.Source, a.SSH)
			}
		}
		if slices.ContainsFunc(a.SSH, func(x apitype.SSHAnswer) bool { return x.Name == "five.example" && x.Kind == apitype.SSHLogin }) {
			t.Errorf("a login to five.example is in Access, which only signing was allowed for: %+v", a.SSH)
		}
		trail, _ := os.ReadFile(f.audit)
		for _, want := range []string{
			`"type":"ssh.answered","session":"` + last + `","summary":"signing","by":"a card","outcome":"allowed for the session","host":"five.example","key":"` + fp + `"`,
			`"type":"ssh.answered","session":"` + last + `","summary":"login","by":"a card","outcome":"denied for the session","host":"five.example"`,
			`"type":"ssh.signed","session":"` + last + `","summary":"signing"`,
			`"summary":"login","by":"a card","outcome":"always allowed","host":"four.example"`,
		} {
			if !strings.Contains(string(trail), want) {
				t.Errorf("the audit trail has no %s", want)
			}
		}
	})
	t.Run("always_both", func(t *testing.T) {
		// three.example is always allowed to sign for: its login is asked, and Always keeps it
		// too, beside the signing answer of the same text.
		if err := onCard(t, newSock(t), login("three.example"), approvals.SSHLogin, "three.example", "always"); err != nil {
			t.Fatal(err)
		}
		sock := newSock(t)
		if login("three.example")(sock) != nil || sign("three.example")(sock) != nil || len(f.b.Cards()) != 0 {
			t.Fatal("a new session asks again for what was always allowed")
		}
	})

	// Both Always answers for three.example are kept, each in its own list, though their text
	// is the same.
	text, _ := os.ReadFile(f.settings)
	lists := map[string]string{}
	for _, line := range strings.Split(string(text), "\n") {
		if k, v, ok := strings.Cut(line, " = "); ok {
			lists[k] = v
		}
	}
	for _, list := range []string{"agent_signing", "agent_logins"} {
		if !strings.Contains(lists[list], `"three.example `+fp+`"`) {
			t.Errorf("the settings file's %s does not keep three.example:\n%s", list, text)
		}
	}
}
