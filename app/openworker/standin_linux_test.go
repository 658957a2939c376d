package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/tstest"
)

// TestStandInLoginsThroughTheCLI: gh and npm added through the CLI are stand-ins unless the
// person says --copy; a login that cannot be one refuses --stand-in with why; the list, the
// session's copies and its access list say each login's mode; inside, the files hold
// stand-ins of the real tokens' shape and the trust variables name the session's bundle; a
// CA that cannot be read refuses the next session, saying why and the way out. (The requests
// themselves are in core/egresstest's TestStandInLogins, against loopback origins.)
func TestStandInLoginsThroughTheCLI(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	w.homeOutsideTmp()
	w.state = filepath.Join(w.home, ".local", "state", "openworker")
	ghReal, npmReal := tstest.Token(t, "gho_", 36), tstest.Token(t, "npm_", 36)
	for rel, body := range map[string]string{
		".config/gh/hosts.yml": "github.com:\n    oauth_token: " + ghReal + "\n    user: octocat\n    git_protocol: https\n",
		".npmrc":               "registry=https://registry.example.test/\n//registry.example.test/:_authToken=" + npmReal + "\n",
		".config/gcloud/configurations/config_default": "[core]\naccount = octocat@example.com\n",
	} {
		p := filepath.Join(w.home, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w.settings("sandbox_provider = \"linux\"\n")
	_, stop := w.daemon()
	defer stop()

	for _, args := range [][]string{{"gh"}, {"npm", "--copy"}, {"gcloud"}} {
		if out, errs, code := w.run(append([]string{"credentials", "add"}, args...)...); code != 0 {
			t.Fatalf("credentials add %v: %d %s %s", args, code, out, errs)
		}
	}
	if _, errs, code := w.run("credentials", "add", "gcloud", "--stand-in"); code == 0 || !strings.Contains(errs, "gcloud cannot be a stand-in here: gcloud refreshes its own tokens") {
		t.Errorf("gcloud --stand-in: %d %s", code, errs)
	}
	if _, errs, code := w.run("credentials", "add", "ssh", "--stand-in"); code == 0 || !strings.Contains(errs, "--stand-in is for gh, aws-credentials, kubectl, npm, docker and terraform") {
		t.Errorf("ssh --stand-in: %d %s", code, errs)
	}
	out, _, _ := w.run("credentials", "list")
	for _, want := range []string{
		"gh", "secrets: stand-ins inside (the real ones stay outside)",
		"secrets: copied into the sandbox", "it can be a stand-in instead: openworker credentials secrets npm stand-in",
		"gcloud refreshes its own tokens",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("credentials list lacks %q:\n%s", want, out)
		}
	}
	if out, errs, code := w.run("credentials", "secrets", "npm", "stand-in"); code != 0 || strings.Count(out, "secrets: stand-ins inside") != 2 {
		t.Fatalf("credentials secrets npm stand-in: %d %s %s", code, out, errs)
	}

	id, errs, code := w.run("session", "start", "--rw", w.project)
	id = strings.TrimSpace(id)
	if code != 0 || id == "" {
		t.Fatalf("session start: %d %s", code, errs)
	}
	out, errs, code = w.run("session", "exec", id, `cat "$GH_CONFIG_DIR/hosts.yml" "$NPM_CONFIG_USERCONFIG"; env | grep -E '^(SSL_CERT_FILE|NODE_EXTRA_CA_CERTS|GIT_SSL_CAINFO|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|PIP_CERT)=' | sort; grep -c 'BEGIN CERTIFICATE' "$SSL_CERT_FILE" /etc/ssl/certs/ca-certificates.crt`)
	if code != 0 {
		t.Fatalf("inside: %d %s %s", code, out, errs)
	}
	for _, real := range []string{ghReal, npmReal} {
		if strings.Contains(out, real) {
			t.Fatalf("the sandbox holds a real token:\n%s", out)
		}
	}
	for _, want := range []string{"oauth_token: gho_", "_authToken=npm_", "SSL_CERT_FILE=/tmp/openworker-", "NODE_EXTRA_CA_CERTS=/tmp/openworker-", "GIT_SSL_CAINFO=", "REQUESTS_CA_BUNDLE=", "CURL_CA_BUNDLE=", "PIP_CERT="} {
		if !strings.Contains(out, want) {
			t.Errorf("inside, no %q in:\n%s", want, out)
		}
	}
	out, _, _ = w.run("access", id)
	if !strings.Contains(out, "shared login gh: 1 file(s) copied, with stand-ins for its secrets (the real ones stay outside)") || !strings.Contains(out, "shared login gcloud: 1 file(s) copied\n") ||
		!strings.Contains(out, "registry.example.test:443  (shared login)") {
		t.Errorf("access list:\n%s", out)
	}
	if _, errs, code := w.run("session", "end", id); code != 0 {
		t.Fatalf("end: %s", errs)
	}

	// The CA's key unreadable (made readable by others): the next session is refused.
	key := filepath.Join(w.state, "ca", "ca-key.pem")
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatalf("the machine's CA was not made in the state folder: %v", err)
	}
	out, errs, code = w.run("run", "--", "true")
	if code == 0 {
		t.Fatalf("a session with stand-in logins ran without its CA:\n%s%s", out, errs)
	}
	for _, want := range []string{"keeps its secrets outside, with stand-ins inside, which needs OpenWorker's certificate authority", "can be read by others (mode 0644)", "openworker credentials secrets gh copy"} {
		if !strings.Contains(errs, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, errs)
		}
	}
}
