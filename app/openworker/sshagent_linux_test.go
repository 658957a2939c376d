package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/openworker/openworker/core/tstest"
)

// background runs the binary in the background; done is closed once it exits, with its
// output and status in the returned values.
type background struct {
	done           chan struct{}
	out, errs      bytes.Buffer
	code           int
	startErr, wErr error
}

func (w *world) background(args ...string) *background {
	b := &background{done: make(chan struct{})}
	c := w.cmd(args...)
	c.Stdout, c.Stderr = &b.out, &b.errs
	if err := c.Start(); err != nil {
		w.t.Fatalf("starting openworker %v: %v", args, err)
	}
	go func() {
		defer close(b.done)
		b.wErr = c.Wait()
		if ee, ok := b.wErr.(*exec.ExitError); ok {
			b.code = ee.ExitCode()
		}
	}()
	return b
}

func (b *background) wait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(d):
		t.Fatalf("the command did not end within %v", d)
	}
}

// TestSSHKeysThroughTheAgent: with the ssh login shared "through OpenWorker", no private key
// byte enters the sandbox (its home, tmp, environment, any process's memory inside); git
// clones and pushes over ssh through the session's proxy once the person allowed the host on
// a card, and waits for the card until then; a second server with the same key asks again,
// and Deny refuses it; a command talking to the agent directly sees only the login's public
// key and gets no signature for arbitrary data or a server nobody allowed; every signature
// and refusal is in the audit trail; switched to copy, the keys are copied as before.
func TestSSHKeysThroughTheAgent(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	w.homeOutsideTmp()
	w.state = filepath.Join(w.home, ".local", "state", "openworker")
	srv := startSSHD(t, w)
	srv2 := startSSHD(t, w)
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dotSSH := filepath.Join(w.home, ".ssh")
	name1, name2 := fmt.Sprintf("[127.0.0.1]:%d", srv.port), fmt.Sprintf("[127.0.0.1]:%d", srv2.port)
	// The first server by name, the second hashed, as HashKnownHosts writes it.
	os.WriteFile(filepath.Join(dotSSH, "known_hosts"), []byte(name1+" "+srv.hostKey+"\n"+knownhosts.HashHostname(name2)+" "+srv2.hostKey+"\n"), 0o644)
	os.WriteFile(filepath.Join(dotSSH, "config"), []byte(fmt.Sprintf("Host gitbox\n  HostName 127.0.0.1\n  Port %d\n  User %s\nHost gitbox2\n  HostName 127.0.0.1\n  Port %d\n  User %s\n",
		srv.port, me.Username, srv2.port, me.Username)), 0o644)
	w.settings(fmt.Sprintf("sandbox_provider = \"linux\"\nsandbox_network_hosts = [\"127.0.0.1:%d\", \"127.0.0.1:%d\"]\n", srv.port, srv2.port))

	// What would give the key away: its seed, and a line of its file.
	keyFile, _ := os.ReadFile(filepath.Join(dotSSH, "id_test"))
	raw, err := ssh.ParseRawPrivateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	seed := raw.(*ed25519.PrivateKey).Seed()
	line := strings.Split(string(keyFile), "\n")[2]
	pubText, _ := os.ReadFile(filepath.Join(dotSSH, "id_test.pub"))
	pub, _, _, _, _ := ssh.ParseAuthorizedKey(pubText)
	fp := ssh.FingerprintSHA256(pub)

	probe := filepath.Join(w.project, "agentprobe")
	build := exec.Command("go", "build", "-o", probe, "./testdata/agentprobe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building agentprobe: %v\n%s", err, out)
	}

	_, stop := w.daemon()
	defer stop()
	if out, errs, code := w.run("credentials", "add", "ssh", "--agent"); code != 0 || !strings.Contains(out, "keys: stay outside") {
		t.Fatalf("credentials add ssh --agent: %d %s %s", code, out, errs)
	}
	id, errs, code := w.run("session", "start", "--rw", w.project)
	id = strings.TrimSpace(id)
	if code != 0 || id == "" {
		t.Fatalf("session start: %d %s", code, errs)
	}
	tmp := w.sessionTmp(id)
	inside := func(cmd string) (string, string, int) {
		t.Helper()
		return w.run("session", "exec", id, cmd)
	}

	t.Run("no_private_key_inside", func(t *testing.T) {
		out, errs, code := inside(`echo "sock=$SSH_AUTH_SOCK"; test -S "$SSH_AUTH_SOCK" && echo socket; ls -a "$HOME/.ssh"`)
		if code != 0 || !strings.Contains(out, "sock="+filepath.Join(tmp, "ssh-agent.sock")+"\nsocket\n") {
			t.Fatalf("inside: %d %q %s", code, out, errs)
		}
		for _, f := range []string{"id_test.pub", "known_hosts", "config"} {
			if !strings.Contains(out, "\n"+f+"\n") {
				t.Errorf("%s was not copied:\n%s", f, out)
			}
		}
		for _, f := range []string{"id_test", "id_ed25519"} {
			if strings.Contains(out, "\n"+f+"\n") {
				t.Errorf("the private key %s was copied:\n%s", f, out)
			}
		}
		// Through a shell with a process beside the probe, so that there is memory to read
		// besides the probe's own and the runner's (a plain command starts without a shell).
		out, errs, code = inside(fmt.Sprintf("sleep 30 & %s scan %s %s; kill $!", probe, hex.EncodeToString(seed), hex.EncodeToString([]byte(line))))
		if code != 0 || strings.Contains(out, "FOUND") || !strings.Contains(out, "found 0") || strings.Contains(out, "memory (0 bytes)") || strings.Contains(out, "scanned 0 files") {
			t.Fatalf("looking for the private key inside: %d %q %s", code, out, errs)
		}
		// The runner (the sandbox's first process) is looked at too: unreadable, or read.
		if !strings.Contains(out, "not readable: /proc/1:") && !strings.Contains(out, "reading /proc/1 (") {
			t.Errorf("the runner's memory was not looked at:\n%s", out)
		}
		t.Logf("inside: %s", strings.TrimSpace(out))
	})

	t.Run("direct_to_the_agent", func(t *testing.T) {
		out, errs, code := inside(probe + " list")
		if code != 0 || out != fp+" id_test\n" {
			t.Fatalf("the keys offered inside: %d %q %s (want only %s id_test)", code, out, errs, fp)
		}
		out, errs, _ = inside(probe + " attack")
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasSuffix(l, " refused") {
				t.Errorf("a request the agent must refuse: %q\n%s", l, errs)
			}
		}
		if n := strings.Count(out, " refused"); n != 6 {
			t.Errorf("%d refusals, want 6:\n%s", n, out)
		}
		if cards, _, _ := w.run("cards"); strings.Contains(cards, id) {
			t.Errorf("an attack raised a card:\n%s", cards)
		}
	})

	t.Run("clone_waits_for_the_card", func(t *testing.T) {
		clone := w.background("session", "exec", id, "git clone -q gitbox:"+srv.repo+" clone && cat clone/README")
		card := w.cardFor(name1)
		cards, _, _ := w.run("cards")
		if want := "The coworker wants to sign in to " + name1 + " over SSH as you, with key id_test (" + fp + ")"; !strings.Contains(cards, want) {
			t.Errorf("the card does not say %q:\n%s", want, cards)
		}
		select {
		case <-clone.done:
			t.Fatalf("the clone ended before the card was answered: %d %s %s", clone.code, clone.out.String(), clone.errs.String())
		case <-time.After(time.Second):
		}
		if out, errs, code := w.run("answer", card, "session"); code != 0 {
			t.Fatalf("answer: %d %s %s", code, out, errs)
		}
		clone.wait(t, 30*time.Second)
		if clone.code != 0 || clone.out.String() != "cloned through the proxy\n" {
			t.Fatalf("git clone over ssh through the agent: %d %q %s", clone.code, clone.out.String(), clone.errs.String())
		}
	})

	t.Run("push_allowed_for_the_session", func(t *testing.T) {
		out, errs, code := inside("cd " + filepath.Join(w.project, "clone") + " && git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m 'pushed from the sandbox' && git push -q origin HEAD:main")
		if code != 0 {
			t.Fatalf("git push: %d %s %s", code, out, errs)
		}
		log, err := exec.Command("git", "-C", srv.repo, "log", "-1", "--format=%s", "main").Output()
		if err != nil || string(log) != "pushed from the sandbox\n" {
			t.Fatalf("the bare repository's main: %q %v", log, err)
		}
		if cards, _, _ := w.run("cards"); strings.Contains(cards, id) {
			t.Errorf("a host and key allowed for the session asked again:\n%s", cards)
		}
	})

	t.Run("push_u_in_the_persons_clone_sets_its_upstream", func(t *testing.T) {
		// The clone is the person's in a session started after it: its settings are
		// read-only inside, and git push -u over ssh still leaves the upstream set.
		id2, errs, code := w.run("session", "start", "--rw", w.project)
		id2 = strings.TrimSpace(id2)
		if code != 0 {
			t.Fatalf("session start: %s", errs)
		}
		defer w.run("session", "end", id2)
		push := w.background("session", "exec", id2, "cd "+filepath.Join(w.project, "clone")+" && git checkout -q -b topic && git push -q -u origin topic")
		w.run("answer", w.cardFor(name1), "session")
		push.wait(t, 30*time.Second)
		if push.code != 0 {
			t.Fatalf("git push -u: %d %s %s", push.code, push.out.String(), push.errs.String())
		}
		clone := filepath.Join(w.project, "clone")
		for key, want := range map[string]string{"branch.topic.remote": "origin", "branch.topic.merge": "refs/heads/topic"} {
			if got, _ := exec.Command("git", "-C", clone, "config", "--get", key).Output(); strings.TrimSpace(string(got)) != want {
				t.Errorf("%s = %q, want %q\n%s", key, got, want, push.errs.String())
			}
		}
		if !strings.Contains(push.errs.String(), "set topic's upstream to origin/topic") {
			t.Errorf("the line after the command does not say it:\n%s", push.errs.String())
		}
	})

	t.Run("commit_signing_has_its_own_card", func(t *testing.T) {
		sign := "cd " + filepath.Join(w.project, "clone") + " && git -c user.name=t -c user.email=t@example.com -c gpg.format=ssh -c user.signingkey=\"$HOME/.ssh/id_test.pub\" commit -q -S --allow-empty -m signed && git cat-file -p HEAD"
		commit := w.background("session", "exec", id, sign)
		card := w.cardFor("sign a git commit or tag")
		w.run("answer", card, "deny")
		commit.wait(t, 30*time.Second)
		if commit.code == 0 || !strings.Contains(commit.errs.String(), "signing data for \"git\" with id_test was not allowed") {
			t.Fatalf("a commit signature the person denied: %d %q %s", commit.code, commit.out.String(), commit.errs.String())
		}
		// A denied signature takes nothing from the login allowed for the session.
		if out, errs, code := inside("git ls-remote gitbox:" + srv.repo); code != 0 || !strings.Contains(out, "refs/heads/main") {
			t.Fatalf("the login after a denied signature: %d %s %s", code, out, errs)
		}
	})

	t.Run("second_host_asks_again_and_deny_refuses", func(t *testing.T) {
		ls := w.background("session", "exec", id, "git ls-remote gitbox2:"+srv2.repo)
		card := w.cardFor(name2) // its known_hosts entry is hashed: named through the allow list
		w.run("answer", card, "deny")
		ls.wait(t, 30*time.Second)
		if ls.code == 0 || !strings.Contains(ls.errs.String(), "openworker: the SSH agent refused to sign: signing in to "+name2+" with id_test was not allowed") {
			t.Fatalf("a denied host: %d %q %s", ls.code, ls.out.String(), ls.errs.String())
		}
		start := time.Now()
		out, errs, code := inside("git ls-remote gitbox2:" + srv2.repo)
		if code == 0 || time.Since(start) > 20*time.Second || !strings.Contains(errs, "denied for this session") {
			t.Fatalf("a host denied for the session, asked again: %d %q %s", code, out, errs)
		}
	})

	t.Run("audit", func(t *testing.T) {
		out, _, _ := w.run("audit", "--session", id)
		for _, want := range []string{"ssh.signed  " + id, "host " + name1 + "  key " + fp + "  command git clone", "ssh.refused  " + id, "host " + name2, "neither an SSH login", "OpenSSH 8.9", "not in your known_hosts"} {
			if !strings.Contains(out, want) {
				t.Errorf("the audit trail has no %q:\n%s", want, out)
			}
		}
	})

	t.Run("always_allow_is_kept", func(t *testing.T) {
		// openworker run has no card to show: it signs only what is always allowed.
		out, errs, code := w.run("run", "--rw", w.project, "--", "git", "ls-remote", "gitbox:"+srv.repo)
		if code == 0 || !strings.Contains(errs, "no card can be shown for this command (openworker run)") {
			t.Fatalf("openworker run before Always allow: %d %q %s", code, out, errs)
		}
		if strings.Contains(errs, "refused by OpenWorker's SSH agent") {
			t.Errorf("the agent library's log line reached the terminal:\n%s", errs)
		}
		id3, errs, code := w.run("session", "start", "--rw", w.project)
		id3 = strings.TrimSpace(id3)
		if code != 0 {
			t.Fatalf("session start: %s", errs)
		}
		ls := w.background("session", "exec", id3, "git ls-remote gitbox:"+srv.repo)
		w.run("answer", w.cardFor(name1), "always")
		ls.wait(t, 30*time.Second)
		if ls.code != 0 {
			t.Fatalf("after Always allow: %d %s", ls.code, ls.errs.String())
		}
		w.run("session", "end", id3)
		text, _ := os.ReadFile(filepath.Join(w.home, ".config", "openworker", "config.toml"))
		if !strings.Contains(string(text), `agent_logins = ["`+name1+` `+fp+`"]`) {
			t.Fatalf("Always allow is not kept with the ssh entry:\n%s", text)
		}
		if out, errs, code := w.run("credentials", "list"); code != 0 || !strings.Contains(out, "always allowed: login to "+name1+" with "+fp) {
			t.Errorf("credentials list: %s %s", out, errs)
		}
		out, errs, code = w.run("run", "--rw", w.project, "--", "git", "ls-remote", "gitbox:"+srv.repo)
		if code != 0 || !strings.Contains(out, "refs/heads/main") {
			t.Fatalf("openworker run after Always allow: %d %q %s", code, out, errs)
		}
	})

	t.Run("copy_mode", func(t *testing.T) {
		if out, errs, code := w.run("credentials", "ssh-keys", "copy"); code != 0 || !strings.Contains(out, "keys: copied into the sandbox") {
			t.Fatalf("credentials ssh-keys copy: %d %s %s", code, out, errs)
		}
		id2, errs, code := w.run("session", "start", "--rw", w.project)
		id2 = strings.TrimSpace(id2)
		if code != 0 {
			t.Fatalf("session start: %s", errs)
		}
		out, errs, code := w.run("session", "exec", id2, `echo "agent=${SSH_AUTH_SOCK-none}"; stat -c %a "$HOME/.ssh/id_test"; git ls-remote gitbox:`+srv.repo)
		if code != 0 || !strings.HasPrefix(out, "agent=none\n600\n") || !strings.Contains(out, "refs/heads/main") {
			t.Fatalf("copy mode: %d %q %s", code, out, errs)
		}
		// The same search finds the copied key: it would have found one in agent mode.
		out, errs, _ = w.run("session", "exec", id2, fmt.Sprintf("%s scan %s %s", probe, hex.EncodeToString(seed), hex.EncodeToString([]byte(line))))
		if !strings.Contains(out, "FOUND in "+filepath.Join(w.sessionTmp(id2), "home", ".ssh", "id_test")) {
			t.Errorf("the search does not find the copied key:\n%s %s", out, errs)
		}
		w.run("session", "end", id2)
	})

	w.run("session", "end", id)
	tstest.WaitFor(t, 10*time.Second, func() error {
		if _, err := os.Stat(tmp); err == nil {
			return fmt.Errorf("%s is left after the session ended", tmp)
		}
		return nil
	})
}

// TestSSHCardThroughMCPForm: in an agent's session with nothing showing cards, the SSH card
// is put to the agent's client as a form once the command has ended (the command is not kept
// waiting a minute for a card nobody sees); the person's answer comes back with the command's
// result, and the command run again signs in.
func TestSSHCardThroughMCPForm(t *testing.T) {
	for _, rev := range mcpRevisions {
		t.Run("revision_"+strings.ReplaceAll(rev+"current", "-", ""), func(t *testing.T) {
			w := newWorld(t)
			requireSandbox(t, w)
			w.homeOutsideTmp()
			w.state = filepath.Join(w.home, ".local", "state", "openworker")
			srv := startSSHD(t, w)
			me, _ := user.Current()
			name := fmt.Sprintf("[127.0.0.1]:%d", srv.port)
			dotSSH := filepath.Join(w.home, ".ssh")
			os.WriteFile(filepath.Join(dotSSH, "known_hosts"), []byte(name+" "+srv.hostKey+"\n"), 0o644)
			os.WriteFile(filepath.Join(dotSSH, "config"), []byte(fmt.Sprintf("Host gitbox\n  HostName 127.0.0.1\n  Port %d\n  User %s\n", srv.port, me.Username)), 0o644)
			w.settings(fmt.Sprintf("sandbox_network_hosts = [\"127.0.0.1:%d\"]\n\n[[sandbox_credentials]]\nname = \"ssh\"\nkeys = \"agent\"\nenabled = true\n", srv.port))
			var asked []string
			m := w.connectMCP(rev, &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				asked = append(asked, req.Params.Message)
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "session"}}, nil
			}})
			start := time.Now()
			res, text := m.call("run_command", map[string]any{"command": "git ls-remote gitbox:" + srv.repo})
			var r RunCommandResultForTest
			structured(t, res, &r)
			if len(asked) != 1 || !strings.Contains(asked[0], "sign in to "+name+" over SSH as you, with key id_test") {
				t.Fatalf("the client was asked %q; result %s", asked, text)
			}
			if r.ExitCode == 0 || !strings.Contains(r.Notice, "The person allowed the SSH signature (session): run the command again.") {
				t.Fatalf("the held result: %s", text)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("the command waited %v for a card nobody could see", d)
			}
			res, text = m.call("run_command", map[string]any{"command": "git ls-remote gitbox:" + srv.repo})
			structured(t, res, &r)
			if r.ExitCode != 0 || !strings.Contains(r.Stdout, "refs/heads/main") || len(asked) != 1 {
				t.Fatalf("after the answer: %s (asked %d times)", text, len(asked))
			}
		})
	}
}

// RunCommandResultForTest is the part of run_command's structured result the tests read.
type RunCommandResultForTest struct {
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Notice   string `json:"notice"`
}
