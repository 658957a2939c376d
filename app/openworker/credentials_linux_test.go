package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// sshServer is a throwaway sshd on 127.0.0.1 with its own host key, config and a bare git
// repository, for the sandbox's ssh and git to reach through the session's proxy.
type sshServer struct {
	port    int
	hostKey string // the host's public key line
	repo    string // a bare repository with one commit
}

// startSSHD starts sshd in the foreground (-D -e) with a config of its own (-f). The user's
// key pair is made in ~/.ssh of the world's home, as ssh-keygen would.
func startSSHD(t *testing.T, w *world) *sshServer {
	t.Helper()
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/sshd"); serr != nil {
			t.Skip("sshd is not installed (Debian: openssh-server); the ssh-through-the-proxy test needs it")
		}
		sshd = "/usr/sbin/sshd"
	}
	if os.Geteuid() != 0 {
		t.Skip("the loopback sshd logs in the user it runs as, which needs root")
	}
	dir := t.TempDir()
	run := func(name string, args ...string) string {
		t.Helper()
		c := exec.Command(name, args...)
		c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "host_key"))
	if _, err := os.Stat(filepath.Join(w.home, ".ssh", "id_test")); err != nil {
		// A second server for the same person takes the key the first made.
		run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "openworker-test", "-f", filepath.Join(w.home, ".ssh", "id_test"))
	}
	pub, _ := os.ReadFile(filepath.Join(w.home, ".ssh", "id_test.pub"))
	os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600)
	work := filepath.Join(dir, "work")
	run("git", "init", "-q", "-b", "main", work)
	os.WriteFile(filepath.Join(work, "README"), []byte("cloned through the proxy\n"), 0o644)
	run("git", "-C", work, "add", "README")
	run("git", "-C", work, "commit", "-q", "-m", "first")
	s := &sshServer{repo: filepath.Join(dir, "repo.git")}
	run("git", "clone", "-q", "--bare", work, s.repo)
	hk, _ := os.ReadFile(filepath.Join(dir, "host_key.pub"))
	s.hostKey = strings.Join(strings.Fields(string(hk))[:2], " ")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := filepath.Join(dir, "sshd_config")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PidFile %s
`, s.port, filepath.Join(dir, "host_key"), filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"))), 0o600)
	// sshd refuses to start without its privilege separation folder, which its service
	// makes at boot.
	os.MkdirAll("/run/sshd", 0o755)
	// Read while sshd writes it.
	var logs syncBuffer
	c := exec.Command(sshd, "-D", "-e", "-f", cfg)
	c.Stdout, c.Stderr = &logs, &logs
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
		if t.Failed() {
			t.Logf("sshd's log:\n%s", logs.String())
		}
	})
	tstest.WaitFor(t, 10*time.Second, func() error {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port))
		if err != nil {
			return fmt.Errorf("sshd is not listening: %v\n%s", err, logs.String())
		}
		conn.Close()
		return nil
	})
	return s
}

// homeSnapshot is every file under root with its bytes, mode and modification time.
func homeSnapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		st, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		v := fmt.Sprintf("%v %d", st.Mode(), st.ModTime().UnixNano())
		if st.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			v += " " + string(b)
		}
		out[p] = v
		return nil
	})
	return out
}

// TestSharedLoginsInASession: ssh keys and the GitHub CLI shared on purpose are copied into
// a real sandbox owner-only, with their variables; git clones over ssh through the session's
// proxy with the copied key and no agent, once the loopback server is allowed, and says in
// one line why it cannot before; the copies go with the session, also when its daemon is
// killed; the originals are untouched.
func TestSharedLoginsInASession(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	w.homeOutsideTmp()
	w.state = filepath.Join(w.home, ".local", "state", "openworker")
	srv := startSSHD(t, w)
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	target := fmt.Sprintf("127.0.0.1:%d", srv.port)
	ssh := filepath.Join(w.home, ".ssh")
	os.WriteFile(filepath.Join(ssh, "known_hosts"), []byte(fmt.Sprintf("[127.0.0.1]:%d %s\n", srv.port, srv.hostKey)), 0o644)
	// The person's own config: a Host block with HostName and Port, which still applies.
	os.WriteFile(filepath.Join(ssh, "config"), []byte(fmt.Sprintf("Host gitbox\n  HostName 127.0.0.1\n  Port %d\n  User %s\n", srv.port, me.Username)), 0o644)
	os.WriteFile(filepath.Join(w.home, "notes.txt"), []byte("not shared"), 0o600)
	os.Symlink(filepath.Join(w.home, "notes.txt"), filepath.Join(ssh, "leak"))
	// gh as it is on a Mac: the token in the keychain, which a stand-in gh on PATH prints.
	os.MkdirAll(filepath.Join(w.home, ".config", "gh"), 0o700)
	os.WriteFile(filepath.Join(w.home, ".config", "gh", "hosts.yml"), []byte("github.com:\n    users:\n        octocat:\n    git_protocol: ssh\n    user: octocat\n"), 0o600)
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "gh"), []byte("#!/bin/sh\n[ \"$*\" = \"auth token --hostname github.com\" ] && echo gho_standin0123456789\n"), 0o755)
	for i, kv := range w.env {
		if strings.HasPrefix(kv, "PATH=") {
			w.env[i] = "PATH=" + bin + ":" + strings.TrimPrefix(kv, "PATH=")
		}
	}
	// A file or folder of the person's own.
	os.MkdirAll(filepath.Join(w.home, ".config", "tool"), 0o755)
	os.WriteFile(filepath.Join(w.home, ".config", "tool", "tool.toml"), []byte("region = \"north\"\n"), 0o644)
	// An agent of the person's: never inside.
	w.env = append(w.env, "SSH_AUTH_SOCK="+filepath.Join(w.home, "agent.sock"))
	w.settings("sandbox_provider = \"linux\"\n")
	// The daemon keeps its own state in this home: compare the logins' files only.
	shared := []string{ssh, filepath.Join(w.home, ".config", "gh"), filepath.Join(w.home, ".config", "tool"), filepath.Join(w.home, "notes.txt")}
	before := map[string]string{}
	for _, p := range shared {
		for k, v := range homeSnapshot(t, p) {
			before[k] = v
		}
	}

	d, stop := w.daemon()
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	out, errs, code := w.run("credentials", "list")
	if code != 0 || !strings.Contains(out, "nothing (add a CLI's login") || !strings.Contains(out, "found (token in the keychain)") {
		t.Fatalf("credentials list: %d %s %s", code, out, errs)
	}
	// The keys copied, as the product page describes (a new ssh entry keeps them outside
	// unless told to copy).
	for _, args := range [][]string{{"ssh", "--copy"}, {"gh", "--copy"}} {
		if out, errs, code := w.run(append([]string{"credentials", "add"}, args...)...); code != 0 {
			t.Fatalf("credentials add %s: %d %s %s", args, code, out, errs)
		}
	}
	if out, errs, code := w.run("credentials", "add-path", "~/.config/tool", "--label", "configuration", "--host", "api.tool.example:443", "--var", "TOOL_CONFIG"); code != 0 {
		t.Fatalf("credentials add-path: %d %s %s", code, out, errs)
	}
	out, _, _ = w.run("credentials", "list")
	if !strings.Contains(out, "[on ] ~/.config/tool") || !strings.Contains(out, "TOOL_CONFIG  hosts: api.tool.example:443") {
		t.Errorf("credentials list after add-path:\n%s", out)
	}
	if !strings.Contains(out, "[on ] ssh") || !strings.Contains(out, "github.com:22") {
		t.Errorf("credentials list after add:\n%s", out)
	}

	id, errs, code := w.run("session", "start", "--rw", w.project)
	id = strings.TrimSpace(id)
	if code != 0 || id == "" {
		t.Fatalf("session start: %d %s", code, errs)
	}
	tmp := w.sessionTmp(id)
	exec := func(cmd string) (string, string, int) {
		t.Helper()
		return w.run("session", "exec", id, cmd)
	}
	out, errs, code = exec(`echo "agent=${SSH_AUTH_SOCK-none}"; echo "gh=$GH_CONFIG_DIR"; echo "git_ssh=$GIT_SSH_COMMAND"; stat -c '%a %n' "$HOME/.ssh" "$HOME/.ssh/id_test" "$HOME/.ssh/config" "$HOME/.ssh/known_hosts" "$GH_CONFIG_DIR/hosts.yml"; ls -a "$HOME/.ssh"; grep oauth_token "$GH_CONFIG_DIR/hosts.yml"; echo "tool=$TOOL_CONFIG"; cat "$TOOL_CONFIG/tool.toml"`)
	if code != 0 {
		t.Fatalf("inside: %d %s %s", code, out, errs)
	}
	for _, want := range []string{
		"agent=none\n", "gh=" + filepath.Join(tmp, "home", ".config", "gh") + "\n",
		"git_ssh='" + sshPath(t) + "' -F '" + filepath.Join(tmp, "home", ".ssh-openworker", "config") + "'\n",
		"700 " + filepath.Join(tmp, "home", ".ssh") + "\n", "600 " + filepath.Join(tmp, "home", ".ssh", "id_test") + "\n",
		"600 " + filepath.Join(tmp, "home", ".config", "gh", "hosts.yml") + "\n", "oauth_token: gho_standin0123456789",
		"tool=" + filepath.Join(tmp, "home", ".config", "tool") + "\nregion = \"north\"\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inside the session, no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "leak") {
		t.Errorf("a symlink out of ~/.ssh was followed:\n%s", out)
	}
	out, _, _ = w.run("access", id)
	if !strings.Contains(out, "github.com:22  (shared login)") || !strings.Contains(out, "api.github.com:443  (shared login)") || !strings.Contains(out, "~/.ssh/leak is a symlink to") {
		t.Errorf("access list:\n%s", out)
	}

	// Not on the list: ssh says so in one line of ours.
	out, errs, code = exec("git ls-remote gitbox:" + srv.repo)
	refusal := "openworker: " + target + " is not on this session's allow list; ask for it or allow it"
	if code == 0 || !strings.Contains(errs, refusal) {
		t.Fatalf("git ls-remote to a site not allowed: %d %q, want the line %q", code, errs, refusal)
	}
	// One line from ssh's ProxyCommand (the CLI adds its own summary of blocked sites).
	if n := strings.Count(errs, refusal); n != 1 {
		t.Errorf("the refusal is given %d times, want once:\n%s", n, errs)
	}
	// Allowed by its literal loopback entry: the running session takes it at once.
	if out, errs, code := w.run("sites", "add", target); code != 0 {
		t.Fatalf("sites add: %d %s %s", code, out, errs)
	}
	out, errs, code = exec("git ls-remote gitbox:" + srv.repo)
	if code != 0 || !strings.Contains(out, "refs/heads/main") {
		t.Fatalf("git ls-remote over ssh through the proxy: %d %q %s", code, out, errs)
	}
	out, errs, code = exec("git clone -q gitbox:" + srv.repo + " " + filepath.Join(w.project, "clone") + " && cat " + filepath.Join(w.project, "clone", "README"))
	if code != 0 || out != "cloned through the proxy\n" {
		t.Fatalf("git clone over ssh through the proxy: %d %q %s", code, out, errs)
	}
	// A plain ssh, which reads ~/.ssh/config from the account's real home, finds the
	// session's config through the wrapper first on PATH.
	out, errs, code = exec("ssh gitbox echo hello from sshd; command -v ssh")
	if code != 0 || !strings.HasPrefix(out, "hello from sshd\n"+filepath.Join(tmp, "home", ".ssh-openworker", "bin", "ssh")) {
		t.Errorf("plain ssh through the proxy: %d %q %s", code, out, errs)
	}
	// Switched off: the running session keeps it; the next session has no copy.
	if out, errs, code := w.run("credentials", "disable", "ssh"); code != 0 || !strings.Contains(out, "[off] ssh") {
		t.Fatalf("credentials disable: %d %s %s", code, out, errs)
	}
	if out, _, _ := exec(`test -f "$HOME/.ssh/id_test" && echo kept`); out != "kept\n" {
		t.Errorf("the running session lost its copy: %q", out)
	}
	id2, errs, code := w.run("session", "start", "--rw", w.project)
	id2 = strings.TrimSpace(id2)
	if code != 0 {
		t.Fatalf("second session: %s", errs)
	}
	if out, _, _ := w.run("session", "exec", id2, `ls -a "$HOME"; echo "git_ssh=$GIT_SSH_COMMAND"`); strings.Contains(out, ".ssh") || !strings.Contains(out, "git_ssh=\n") {
		t.Errorf("a login switched off was copied:\n%s", out)
	}
	tmp2 := w.sessionTmp(id2)

	if _, errs, code := w.run("session", "end", id); code != 0 {
		t.Fatalf("end: %s", errs)
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Errorf("the copies in %s are left after the session ended", tmp)
	}

	if out, errs, code := w.run("credentials", "remove", "~/.config/tool"); code != 0 || strings.Contains(out, "~/.config/tool") {
		t.Errorf("credentials remove: %d %s %s", code, out, errs)
	}

	// A killed daemon's copies go at the next start.
	if _, errs, code := w.run("credentials", "enable", "ssh"); code != 0 {
		t.Fatalf("credentials enable: %s", errs)
	}
	id3, errs, code := w.run("session", "start", "--rw", w.project)
	id3 = strings.TrimSpace(id3)
	if code != 0 {
		t.Fatalf("third session: %s", errs)
	}
	tmp3 := w.sessionTmp(id3)
	if _, err := os.Stat(filepath.Join(tmp3, "home", ".ssh", "id_test")); err != nil {
		t.Fatalf("no copy in the third session: %v", err)
	}
	d.Process.Signal(syscall.SIGKILL)
	d.Wait()
	stopped = true
	_, stop2 := w.daemon()
	defer stop2()
	for _, p := range []string{tmp2, tmp3} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the private home %s of a killed daemon's session is left after the next start", p)
		}
	}

	// The audit trail says which logins each session had.
	if out, _, _ := w.run("audit", "--session", id); !strings.Contains(out, "shared logins: ssh (") || !strings.Contains(out, "gh (") {
		t.Errorf("the audit trail does not name the shared logins:\n%s", out)
	}

	// openworker run starts its sandbox with the same shared logins.
	out, errs, code = w.run("run", "--rw", w.project, "--", "sh", "-c", `stat -c %a "$HOME/.ssh/id_test"; git ls-remote gitbox:`+srv.repo)
	if code != 0 || !strings.HasPrefix(out, "600\n") || !strings.Contains(out, "refs/heads/main") {
		t.Errorf("openworker run with the shared ssh login: %d %q %s", code, out, errs)
	}

	// The originals: every byte, mode and modification time as it was.
	after := map[string]string{}
	for _, p := range shared {
		for k, v := range homeSnapshot(t, p) {
			after[k] = v
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d files before, %d after", len(before), len(after))
	}
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s changed:\n before %q\n after  %q", p, v, after[p])
		}
	}
}

func sshPath(t *testing.T) string {
	p, err := exec.LookPath("ssh")
	if err != nil {
		t.Skip("no ssh client (Debian: openssh-client)")
	}
	return p
}

// TestCredentialsListSaysWhatStaysOut: with the ssh login's keys kept outside, credentials
// list says which files of ~/.ssh no session gets and why, a key after a certificate chain
// (here in DER) included, with the daemon and without it.
func TestCredentialsListSaysWhatStaysOut(t *testing.T) {
	w := newWorld(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(key)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	var bundle []byte
	for len(bundle) < 5<<10 {
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		bundle = append(bundle, der...)
	}
	if err := os.WriteFile(filepath.Join(w.home, ".ssh", "client.der"), append(bundle, pkcs8...), 0o600); err != nil {
		t.Fatal(err)
	}
	w.settings("[[sandbox_credentials]]\nname = \"ssh\"\nkeys = \"agent\"\nenabled = true\n")
	check := func(how string) {
		out, errs, code := w.run("credentials", "list")
		for _, want := range []string{"left out: ~/.ssh/client.der holds a private key (DER, PKCS#8); it stays outside", "left out: ~/.ssh/id_ed25519 holds a private key"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("credentials list (%s) does not say %q: exit %d\n%s%s", how, want, code, out, errs)
			}
		}
	}
	check("the settings file")
	_, stop := w.daemon()
	defer stop()
	check("the daemon")
}
