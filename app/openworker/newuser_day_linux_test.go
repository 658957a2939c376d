package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// What a new user meets over a working day with the real binary: tools broken outside,
// advice that must fit the session's state, interrupted waits, typos.

// pathFirst puts dir first on the world's PATH.
func (w *world) pathFirst(dir string) {
	for i, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			w.env[i] = "PATH=" + dir + ":" + v
		}
	}
}

// sandbox check does not blame the wall for a tool that fails outside it too (rustup's
// cargo in a home with no default toolchain), and says what to switch on for one found only
// where sessions do not see it, in the words of this OS: the setting, not a Mac's screen.
func TestSandboxCheckTriesToolsOutside(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	line := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "cargo build of a one-file crate") {
				return l
			}
		}
		return ""
	}
	broken := filepath.Join(filepath.Dir(w.project), "broken-bin")
	os.MkdirAll(broken, 0o755)
	if err := os.WriteFile(filepath.Join(broken, "cargo"), []byte("#!/bin/sh\necho \"error: rustup could not choose a version of cargo to run, because one wasn't specified explicitly, and no default is configured.\" >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.pathFirst(broken)
	out, errs, code := w.run("sandbox", "check")
	if l := line(out); code != 0 || !strings.Contains(l, "skipped: fails outside the sandbox too (exit status 1: error: rustup could not choose") ||
		strings.Contains(out, "broken") {
		t.Errorf("a cargo broken outside: exit %d, line %q\n%s%s", code, l, out, errs)
	}

	// A cargo that works, in the home folder, which sessions do not see.
	w = newWorld(t)
	bin := filepath.Join(w.home, ".cargo", "bin")
	os.MkdirAll(bin, 0o755)
	if err := os.WriteFile(filepath.Join(bin, "cargo"), []byte("#!/bin/sh\n# builds the crate's program, as cargo build would\n"+
		"mkdir -p target/debug && printf '#!/bin/sh\\necho built by cargo\\n' > target/debug/owcheck && chmod +x target/debug/owcheck\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.pathFirst(bin)
	out, errs, code = w.run("sandbox", "check")
	l := line(out)
	if code != 0 || !strings.Contains(l, "skipped: ") || !strings.Contains(l, bin) || !strings.Contains(l, "sandbox_toolchains") ||
		strings.Contains(out, "Settings ▸") || strings.Contains(out, "broken") {
		t.Errorf("a cargo only in the home folder: exit %d, line %q\n%s%s", code, l, out, errs)
	}
	if _, err := os.Stat(filepath.Join(w.home, ".cargo", "registry")); err == nil {
		t.Error("the try outside wrote in the home folder's ~/.cargo")
	}
}

// blockedLine is the line openworker printed after a command about a site it blocked.
func blockedLine(errs string) string {
	for _, l := range strings.Split(errs, "\n") {
		if strings.HasPrefix(l, "openworker: blocked ") {
			return l
		}
	}
	return ""
}

// hintOf is what a blocked line says in its parentheses: how the site is opened.
func hintOf(line string) string {
	if i := strings.Index(line, " ("); i >= 0 && strings.HasSuffix(line, ")") {
		return line[i+2 : len(line)-1]
	}
	return ""
}

// The line after a command that a site was blocked names only the ways that open it in the
// session's state, in the proxy's words: a card, the Access list or the settings while
// nothing stands in the way; after the person's Deny, only the Access list, where the Deny
// is taken back; with full access, the settings (there are no cards); in a direct session,
// that nothing is enforced.
func TestBlockedLineFitsTheSessionsState(t *testing.T) {
	t.Run("ask_then_deny", func(t *testing.T) {
		cw := newCardsWorld(t, "")
		_, errs, _ := cw.run("session", "exec", cw.id, "--", "curl", "-sSf", "--noproxy", "", "--max-time", "5", "http://"+cw.origin+"/")
		l := blockedLine(errs)
		for _, want := range []string{"not on the allow list", "openworker request-site " + cw.id + " " + cw.origin, "openworker access " + cw.id + " --allow " + cw.origin, "sandbox_network_hosts"} {
			if !strings.Contains(l, want) {
				t.Errorf("before any answer the line %q lacks %q\n%s", l, want, errs)
			}
		}
		go cw.run("request-site", cw.id, cw.origin, "--reason", "fixtures", "--wait", "30s")
		card, _ := cw.pendingCard(cw.origin)
		if _, errs, code := cw.run("answer", card, "deny"); code != 0 {
			t.Fatalf("answer deny: %s", errs)
		}
		_, errs, _ = cw.run("session", "exec", cw.id, "--", "curl", "-sSf", "--noproxy", "", "--max-time", "5", "http://"+cw.origin+"/")
		l = blockedLine(errs)
		if !strings.Contains(l, "denied for this session") || !strings.Contains(l, "take the Deny back in the session's Access list (openworker access "+cw.id+" --allow "+cw.origin+")") ||
			strings.Contains(l, "request-site") || strings.Contains(l, "sandbox_network_hosts") || strings.Contains(l, "not on the allow list") {
			t.Errorf("after the Deny the line is %q; want only the Access list\n%s", l, errs)
		}
		// request-site's answer says it in the same words.
		if _, errs, code := cw.run("request-site", cw.id, cw.origin, "--reason", "again"); code != 1 || hintOf(l) == "" || !strings.Contains(errs, hintOf(l)) {
			t.Errorf("request-site after the Deny: exit %d, %q; want the blocked line's words %q", code, errs, hintOf(l))
		}
	})
	t.Run("full_access", func(t *testing.T) {
		cw := newCardsWorld(t, "sandbox_approvals = \"full-access\"\n")
		_, errs, _ := cw.run("session", "exec", cw.id, "--", "curl", "-sSf", "--noproxy", "", "--max-time", "5", "http://"+cw.origin+"/")
		l := blockedLine(errs)
		if !strings.Contains(l, "openworker sites add "+cw.origin) || strings.Contains(l, "request-site") || strings.Contains(l, "card (") {
			t.Errorf("with full access the line is %q; want the settings, and no card\n%s", l, errs)
		}
		if _, errs, code := cw.run("request-site", cw.id, cw.origin, "--reason", "r"); code != 1 || hintOf(l) == "" || !strings.Contains(errs, hintOf(l)) || strings.Contains(errs, "Settings ▸") {
			t.Errorf("request-site with full access: exit %d, %q; want the blocked line's words %q, and no Mac screen on Linux", code, errs, hintOf(l))
		}
	})
	t.Run("direct", func(t *testing.T) {
		w := newWorld(t)
		requireSandbox(t, w)
		_, stop := w.daemon()
		t.Cleanup(stop)
		id := w.startSession() // the machine's sandbox_provider: direct
		origin := httpOrigin(t, "hello")
		_, errs, _ := w.run("session", "exec", id, "--", "curl", "-sSf", "--noproxy", "", "--max-time", "5", "http://"+origin+"/")
		l := blockedLine(errs)
		if !strings.Contains(l, "nothing is enforced") || strings.Contains(l, "request-site") || strings.Contains(l, "sandbox_network_hosts") {
			t.Errorf("in a direct session the line is %q; want that nothing is enforced\n%s", l, errs)
		}
	})
}

// A flag's value that is not one of its choices is a usage mistake wherever it is given:
// said on one line with where the usage is, exit 2, as --timeout abc is.
func TestBadFlagValuesAreUsageErrors(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct {
		args []string
		help string
	}{
		{[]string{"run", "--network", "opne", "--", "true"}, "run"},
		{[]string{"run", "--git-metadata", "bogus", "--", "true"}, "run"},
		{[]string{"run", "--provider", "seatbelt", "--", "true"}, "run"},
		{[]string{"run", "--allow", "exa mple.com", "--", "true"}, "run"},
		{[]string{"run", "--publish", "0", "--", "true"}, "run"},
		{[]string{"run", "--timeout", "abc", "--", "true"}, "run"},
		{[]string{"session", "start", "--network", "opne"}, "session start"},
		{[]string{"session", "start", "--provider", "seatbelt"}, "session start"},
		{[]string{"mcp", "--network", "opne"}, "mcp"},
		{[]string{"sandbox", "profile", "--network", "opne"}, "sandbox profile"},
		{[]string{"sandbox", "profile", "--allow", "exa mple.com"}, "sandbox profile"},
	} {
		out, errs, code := w.run(tc.args...)
		if code != 2 || !strings.Contains(errs, "(see openworker "+tc.help+" --help)") || strings.Count(strings.TrimSpace(errs), "\n") > 0 || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one usage line and exit 2", tc.args, code, out, errs)
		}
	}
}

// The shell a session runs a command with says what went wrong as sh -c would, with no word
// of its own wrapper (no "eval:"), at the line of the command's own text; a command the shell
// cannot read leaves the shell state as it was.
func TestSessionShellSpeaksAsAShell(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	id := w.walledSession()
	for _, tc := range []struct{ cmd, want string }{
		{"nosuchcmd --x", "sh: 1: nosuchcmd: not found"},
		{"true\nnosuchcmd", "sh: 2: nosuchcmd: not found"},
	} {
		_, errs, code := w.run("session", "exec", id, tc.cmd)
		if code != 127 || !strings.Contains(errs, tc.want) || strings.Contains(errs, "eval") {
			t.Errorf("exec %q: exit %d, stderr %q; want 127 and %q, as sh -c says it", tc.cmd, code, errs, tc.want)
		}
	}
	w.run("session", "exec", id, "export KEPT=yes; cd /")
	if _, errs, code := w.run("session", "exec", id, "echo 'unclosed"); code != 2 || strings.Contains(errs, "eval") || !strings.Contains(errs, "Syntax error") {
		t.Errorf("a command the shell cannot read: exit %d, stderr %q", code, errs)
	}
	if out, errs, _ := w.run("session", "exec", id, `echo "$KEPT $PWD"`); out != "yes /\n" {
		t.Errorf("after it the shell state is %q (%s), want it as it was", out, errs)
	}
}

// The top-level usage names every flag of the commands it lists that the README's table
// names: sandbox check's --report, cards' --json.
func TestTopLevelUsageNamesTheFlags(t *testing.T) {
	w := newWorld(t)
	out, _, code := w.run("--help")
	for _, want := range []string{"openworker sandbox check [--json] [--report FILE]", "openworker cards [--watch] [--json]"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("openworker --help: exit %d, no %q in:\n%s", code, want, out)
		}
	}
}

// sites add and remove each say what they did, and nothing else; a site written with a
// scheme is named once in the refusal; while the settings file is broken, each change says
// itself (not the first one still waiting), with the file's problems on lines of their own.
func TestSitesChangesSayWhatWasDone(t *testing.T) {
	w := newWorld(t)
	_, stop := w.daemon()
	t.Cleanup(stop)
	out, errs, code := w.run("sites", "add", "example.com")
	if code != 0 || !strings.Contains(out, "added example.com:443") || strings.Contains(out, "Code hosting") {
		t.Errorf("sites add: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = w.run("sites", "remove", "example.com")
	if code != 0 || !strings.Contains(out, "removed example.com:443") || strings.Contains(out, "Code hosting") {
		t.Errorf("sites remove: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := w.run("sites", "add", "https://x.example"); code == 0 || strings.Count(errs, "https://x.example") != 1 {
		t.Errorf("sites add https://x.example: exit %d, %q; want the site named once", code, errs)
	}
	w.settings("sandbox_network_hosts = [\"a.example\"\n")
	// Once the daemon has seen the broken file, a change waits for it to be fixed.
	var errs0 string
	tstest.WaitFor(t, 5*time.Second, func() error {
		if _, errs0, _ = w.run("sites", "add", "127.0.0.1:9999"); !strings.Contains(errs0, "in force now") {
			w.run("sites", "remove", "127.0.0.1:9999")
			return fmt.Errorf("the daemon has not seen the broken file yet: %q", errs0)
		}
		return nil
	})
	if first, rest, _ := strings.Cut(errs0, "\n"); !strings.Contains(first, "add 127.0.0.1:9999: in force now") || strings.Contains(errs0, `\n`) || !strings.Contains(rest, "not valid TOML") {
		t.Errorf("sites add with the file broken: stderr %q; want the change first and the problems on lines of their own", errs0)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"sites", "remove", "127.0.0.1:9999"}, "remove 127.0.0.1:9999: in force now"},
		{[]string{"sites", "add", "b.example"}, "add b.example:443: in force now"},
	} {
		_, errs, code := w.run(tc.args...)
		first, rest, _ := strings.Cut(errs, "\n")
		if code != 0 || !strings.Contains(first, tc.says) || strings.Contains(errs, `\n`) || !strings.Contains(rest, "not valid TOML") {
			t.Errorf("%v with the file broken: exit %d, stderr %q; want %q first and the problems on lines of their own", tc.args, code, errs, tc.says)
		}
	}
}

// Ctrl-C on request-site or fetch while it waits for an answer exits as an interrupted
// command does (130), saying the card is still waiting and how to answer it: it is not a
// denial, and the daemon's answer was not "cut short".
func TestRequestSiteAndFetchInterrupted(t *testing.T) {
	cw := newCardsWorld(t, "")
	for _, args := range [][]string{
		{"request-site", cw.id, cw.origin, "--reason", "fixtures", "--wait", "60s"},
		{"fetch", cw.id, "http://" + httpOrigin(t, "docs") + "/", "--reason", "the docs", "--wait", "60s"},
	} {
		c := cw.cmd(args...)
		stderr, _ := c.StderrPipe()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stderr)
		var first string
		for sc.Scan() {
			if first = sc.Text(); strings.HasPrefix(first, "openworker: card ") {
				break
			}
		}
		card := strings.Fields(strings.TrimPrefix(first, "openworker: card "))
		if len(card) == 0 {
			t.Fatalf("%s: no card named: %q", args[0], first)
		}
		c.Process.Signal(os.Interrupt)
		var rest strings.Builder
		for sc.Scan() {
			rest.WriteString(sc.Text() + "\n")
		}
		err := c.Wait()
		code := c.ProcessState.ExitCode()
		want := "interrupted; card " + card[0]
		if code != 130 || !strings.Contains(rest.String(), want) || !strings.Contains(rest.String(), "is still waiting (openworker answer "+card[0]) ||
			strings.Contains(rest.String(), "cut short") {
			t.Errorf("%s interrupted: %v, exit %d, stderr after the card %q; want 130 and %q", args[0], err, code, rest.String(), want)
		}
		if out, _, _ := cw.run("cards"); !strings.Contains(out, card[0]) {
			t.Errorf("%s interrupted: the card is gone:\n%s", args[0], out)
		}
		cw.run("answer", card[0], "deny")
	}
}

// On Linux, where there is no app, credentials --help names the setting, not a Mac's screen.
func TestCredentialsHelpOnLinux(t *testing.T) {
	w := newWorld(t)
	out, _, code := w.run("credentials", "--help")
	if code != 0 || strings.Contains(out, "Settings ▸") || !strings.Contains(out, "[[sandbox_credentials]]") {
		t.Errorf("credentials --help: exit %d\n%s", code, out)
	}
}

// Taking back a site the settings file gave names the command that does it on Linux, not a
// Mac's screen.
func TestRevokeOfASettingsSiteOnLinux(t *testing.T) {
	cw := newCardsWorld(t, "sandbox_network_hosts = [\"example.com:443\"]\n")
	_, errs, code := cw.run("access", cw.id, "--revoke", "example.com:443")
	if code == 0 || strings.Contains(errs, "Settings ▸") || !strings.Contains(errs, "openworker sites remove example.com:443") {
		t.Errorf("access --revoke of a settings site: exit %d, %q", code, errs)
	}
}

// loopbackLine is the line openworker printed about a refused connection on the sandbox's
// own loopback.
func loopbackLine(errs string) string {
	for _, l := range strings.Split(errs, "\n") {
		if strings.Contains(l, "the sandbox's own loopback was refused") {
			return l
		}
	}
	return ""
}

// A connection to this machine's loopback service that meets the sandbox's own loopback is
// explained to a person with the person's way, in the session's state (not the agents'
// request_site), and whatever the command's exit status (curl … | head exits 0).
func TestLoopbackHintForThePerson(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	need(t, "curl")
	origin := httpOrigin(t, "host service")
	_, errs, code := w.run("run", "--", "sh", "-c", "curl -sS --noproxy '*' http://"+origin+"/ | head -c 10")
	l := loopbackLine(errs)
	if code != 0 || !strings.Contains(l, "openworker run --allow "+origin) || strings.Contains(l, "request_site") {
		t.Errorf("run, exit %d: the line %q; want run's --allow and no agent's tool\n%s", code, l, errs)
	}
	cw := newCardsWorld(t, "")
	go cw.run("request-site", cw.id, cw.origin, "--reason", "fixtures", "--wait", "30s")
	card, _ := cw.pendingCard(cw.origin)
	cw.run("answer", card, "deny")
	_, errs, _ = cw.run("session", "exec", cw.id, "curl -sS --noproxy '*' http://"+cw.origin+"/ | head -c 10")
	if l := loopbackLine(errs); !strings.Contains(l, "take the Deny back") || strings.Contains(l, "request_site") {
		t.Errorf("after the Deny: the line %q; want the Access list only\n%s", l, errs)
	}
}

// fetch --help says the address rule as it is: a loopback, private or link-local address is
// refused unless an entry names that address (as a fetch of an allowed 127.0.0.1:PORT shows).
func TestFetchHelpSaysTheAddressRule(t *testing.T) {
	w := newWorld(t)
	out, _, code := w.run("fetch", "--help")
	if code != 0 || !strings.Contains(out, "unless an entry names the address") {
		t.Errorf("fetch --help: exit %d\n%s", code, out)
	}
}

// npm's own check for a newer npm, which a command never needs, is not made in a session:
// npm test in a fresh sandbox reports no blocked registry to ask for.
func TestNpmUpdateCheckIsNotReportedBlocked(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	need(t, "npm")
	if err := os.WriteFile(filepath.Join(w.project, "package.json"), []byte(`{"name":"x","version":"1.0.0","scripts":{"test":"echo tests ran"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := w.run("run", "--", "npm", "test")
	if code != 0 || !strings.Contains(out, "tests ran") || strings.Contains(errs, "blocked") {
		t.Errorf("npm test: exit %d\n%s%s", code, out, errs)
	}
}
