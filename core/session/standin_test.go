package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/credentials"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
)

func ghStandInSpec(f *fixture) Spec {
	os.MkdirAll(filepath.Join(f.home, ".config", "gh"), 0o700)
	os.WriteFile(filepath.Join(f.home, ".config", "gh", "hosts.yml"), []byte("github.com:\n    oauth_token: gho_realrealrealrealrealrealrealrealreal\n    user: octocat\n"), 0o600)
	return Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.Allowlist,
		Logins: credentials.Entries([]config.Credential{{Name: "gh", Secrets: config.SecretsStandIn, Enabled: true}})}
}

// A stand-in login gives the session's programs a bundle to trust (the system's roots and
// the machine's CA), named by each stack's variable; the CA is made in the state folder.
func TestStandInSessionTrustsTheMachineCA(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	s, err := f.m.Start(context.Background(), ghStandInSpec(f))
	if err != nil {
		t.Fatal(err)
	}
	defer s.End()
	r, err := s.Exec(runner.ExecArgs{Command: `for v in SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE GIT_SSL_CAINFO PIP_CERT NODE_EXTRA_CA_CERTS; do eval "echo $v=\$$v"; done`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(f.home, "state", CADir, "ca.pem"))
	if err != nil {
		t.Fatalf("the machine's CA was not made in the state folder: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(r.Stdout)), "\n") {
		name, path, _ := strings.Cut(line, "=")
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(b), string(ca)) {
			t.Errorf("%s=%q does not hold the machine's CA: %v", name, path, err)
		}
		if name != NodeTrustVar && strings.Count(string(b), "BEGIN CERTIFICATE") < 2 {
			t.Errorf("%s names a bundle without the system's roots", name)
		}
		if name == NodeTrustVar && strings.Count(string(b), "BEGIN CERTIFICATE") != 1 {
			t.Errorf("%s should hold the machine's CA alone, to add to Node's own roots", name)
		}
	}
}

// The CA cannot be made or read: the session is refused, saying why and what to do, and no
// login falls back to being copied.
func TestStandInSessionRefusedWithoutTheCA(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	os.WriteFile(filepath.Join(f.home, "state", CADir), []byte("not a folder"), 0o600)
	_, err := f.m.Start(context.Background(), ghStandInSpec(f))
	if err == nil {
		t.Fatal("a session with a stand-in login started without the CA")
	}
	for _, want := range []string{"the shared login gh keeps its secrets outside", "OpenWorker's certificate authority cannot be read", "is not a folder", "openworker credentials secrets gh copy"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nlacks %q", err, want)
		}
	}
	if des, _ := os.ReadDir(f.tmpRoot); len(des) != 0 {
		t.Fatalf("the refused session left %d private tmp folder(s), with the login's copy", len(des))
	}
}

// gh's copy sends gh's requests to the session's socket, which the session serves while it
// runs, in its private tmp.
func TestStandInGhSocketIsServed(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	s, err := f.m.Start(context.Background(), ghStandInSpec(f))
	if err != nil {
		t.Fatal(err)
	}
	defer s.End()
	r, err := s.Exec(runner.ExecArgs{Command: `sed -n 's/^http_unix_socket: //p' "$GH_CONFIG_DIR/config.yml"`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sock := strings.TrimSpace(string(r.Stdout))
	if sock != s.httpSocket() {
		t.Fatalf("gh's config.yml names %q, want the session's socket %q", sock, s.httpSocket())
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the socket is not served: %v", err)
	}
}

// With the network open on a Mac, connections do not pass OpenWorker: a stand-in login is
// said to be of no use there, with the ways out.
func TestStandInWithTheNetworkOpenOnAMac(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	for _, c := range []struct {
		enforcement sandbox.Enforcement
		network     policy.Network
		said        bool
	}{
		{sandbox.Seatbelt, policy.Open, true},
		{sandbox.Seatbelt, policy.Allowlist, false},
		{sandbox.Linux, policy.Open, false}, // the relay carries every connection
	} {
		s := &Session{m: f.m, tmp: t.TempDir(), Enforcement: c.enforcement, Network: c.network, logins: &credentials.Result{
			Entries:  []credentials.Copied{{Key: "gh", Secrets: config.SecretsStandIn}},
			StandIns: []credentials.StandIn{{Login: "gh", StandIn: "gho_standin", Real: "gho_real"}},
			Vars:     map[string]string{},
		}}
		if err := s.prepareStandIns(); err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(s.logins.Entries[0].Notes, "\n")
		if said := strings.Contains(notes, "nothing puts the real token in place of the stand-in"); said != c.said {
			t.Errorf("%s, %s network: notes %q", c.enforcement, c.network, notes)
		}
	}
}
