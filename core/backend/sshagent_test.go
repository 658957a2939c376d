package backend

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

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
	f := newFixture(t, "[[sandbox_credentials]]\nname = \"ssh\"\nkeys = \"agent\"\nenabled = true\n")
	f.b.opts.SSHCardWait = 300 * time.Millisecond
	home := f.b.m.UserHome()
	user, priv := newSSHSigner(t)
	b, _ := ssh.MarshalPrivateKey(priv, "")
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), pem.EncodeToMemory(b), 0o600)
	one, _ := newSSHSigner(t)
	two, _ := newSSHSigner(t)
	kh := "one.example " + string(ssh.MarshalAuthorizedKey(one.PublicKey())) + "two.example " + string(ssh.MarshalAuthorizedKey(two.PublicKey()))
	os.WriteFile(filepath.Join(home, ".ssh", "known_hosts"), []byte(kh), 0o644)
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
