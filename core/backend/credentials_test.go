package backend

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/session"
)

// eventTypes drains the events published so far.
func eventTypes(ch <-chan Event) []string {
	var out []string
	for {
		select {
		case e := <-ch:
			if strings.HasPrefix(e.Type, "credential.") {
				out = append(out, e.Type)
			}
		case <-time.After(200 * time.Millisecond):
			return out
		}
	}
}

func sh(t *testing.T, s *session.Session, cmd string) string {
	t.Helper()
	r, err := s.Exec(runner.ExecArgs{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(r.Stdout)
}

// Shared logins: added and switched through the backend, with an event for each change,
// written to the settings; copied into sessions started afterwards, their hosts in the
// shared-logins layer; a running session keeps what it started with and says so.
func TestSharedLoginsApplyToSessionsStartedAfterwards(t *testing.T) {
	f := newFixture(t, "sandbox_provider = \"direct\"\n")
	home := f.b.Manager().UserHome()
	os.MkdirAll(filepath.Join(home, ".config", "tool"), 0o755)
	os.WriteFile(filepath.Join(home, ".config", "tool", "tool.toml"), []byte("answer = 42\n"), 0o644)
	os.MkdirAll(filepath.Join(home, ".aws"), 0o755)
	os.WriteFile(filepath.Join(home, ".aws", "credentials"), []byte("[default]\n"), 0o644)
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"), 0o600)
	// A project folder's own settings cannot add or switch on a login.
	os.MkdirAll(filepath.Join(f.project, ".openworker"), 0o700)
	os.WriteFile(filepath.Join(f.project, ".openworker", "config.toml"), []byte("[[sandbox_credentials]]\nname = \"ssh\"\nenabled = true\n"), 0o600)
	o := origin(t)
	events, cancel := f.b.Subscribe(false)
	defer cancel()

	if _, err := f.b.AddCredential("aws-credentials", true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.AddCredentialPath("~/.config/tool", "configuration", []string{o}, "TOOL_HOME", true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.AddCredential("aws-credentials", true); err == nil || !strings.Contains(err.Error(), "added already") {
		t.Errorf("adding twice: %v", err)
	}
	if _, err := f.b.AddCredentialPath("~/.config/other", "secret", nil, "", true); err == nil {
		t.Error("a bad label was accepted")
	}
	if got := eventTypes(events); !slices.Equal(got, []string{CredentialAdded, CredentialAdded}) {
		t.Errorf("events %v", got)
	}
	text, _ := os.ReadFile(f.settings)
	for _, w := range []string{"name = \"aws-credentials\"", "path = \"~/.config/tool\"", "var = \"TOOL_HOME\"", "hosts = [\"" + o + "\"]"} {
		if !strings.Contains(string(text), w) {
			t.Errorf("the settings file lacks %s:\n%s", w, text)
		}
	}

	s1, px1 := f.start(t)
	out := sh(t, s1, `printf '%s\n%s\n%s\n' "$HOME" "$TOOL_HOME" "$AWS_SHARED_CREDENTIALS_FILE"; cat "$TOOL_HOME/tool.toml"; stat -c %a "$TOOL_HOME/tool.toml" "$AWS_SHARED_CREDENTIALS_FILE"; ls -a "$HOME"`)
	lines := strings.Split(out, "\n")
	sHome := lines[0]
	if lines[1] != filepath.Join(sHome, ".config", "tool") || lines[2] != filepath.Join(sHome, ".aws", "credentials") ||
		lines[3] != "answer = 42" || lines[4] != "600" || lines[5] != "600" {
		t.Fatalf("inside the session:\n%s", out)
	}
	if strings.Contains(out, ".ssh") {
		t.Errorf("a project's settings shared ~/.ssh:\n%s", out)
	}
	if code, err := get(px1, o); code != http.StatusOK {
		t.Errorf("the login's host is not allowed: %d %v", code, err)
	}
	a, err := f.b.Access(s1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(a.Sites, AccessSite{Site: o, Source: FromLogin}) || len(a.Logins) != 2 || !strings.Contains(a.LoginsNote, "started afterwards") {
		t.Errorf("access %+v", a)
	}

	// Switched off: the running session keeps it, and says the settings changed; a new one
	// has neither the copy nor the host.
	if _, err := f.b.SetCredentialEnabled("~/.config/tool", false); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(px1, o); code != http.StatusOK {
		t.Errorf("switching off took the host from a running session: %d", code)
	}
	if a, _ := f.b.Access(s1.ID); !strings.Contains(a.LoginsNote, "have changed since it started") {
		t.Errorf("access note %q", a.LoginsNote)
	}
	s2, px2 := f.start(t)
	if out := sh(t, s2, `printf %s "$TOOL_HOME"; ls -a "$HOME/.config" 2>/dev/null`); strings.Contains(out, "tool") {
		t.Errorf("a login switched off was shared: %q", out)
	}
	if code, _ := get(px2, o); code != http.StatusForbidden {
		t.Errorf("a login switched off still adds its host: %d", code)
	}
	if err := f.b.RemoveCredential("aws-credentials"); err != nil {
		t.Fatal(err)
	}
	if err := f.b.RemoveCredential("gcloud"); err == nil {
		t.Error("removing a login never added")
	}
	if got := eventTypes(events); !slices.Equal(got, []string{LoginsCopied, CredentialDisabled, LoginsCopied, CredentialRemoved}) {
		t.Errorf("events %v", got)
	}
	list := f.b.Credentials()
	if len(list.Entries) != 1 || list.Entries[0].Key != "~/.config/tool" || list.Entries[0].Enabled || list.Entries[0].Status != "found" {
		t.Errorf("entries %+v", list.Entries)
	}
	for _, r := range list.Catalog {
		if want := map[string]string{"ssh": "found", "aws-credentials": "found", "gh": "not found"}[r.Name]; want != "" && r.Status != want {
			t.Errorf("catalog %s: %s, want %s", r.Name, r.Status, want)
		}
	}

	// The copy goes with the session.
	if err := f.b.End(s1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sHome); err == nil {
		t.Errorf("the sandbox home %s with its copies is left after the session ended", sHome)
	}
}

// A login that can be a stand-in is added as one unless the person says copy; one that
// cannot refuses a stand-in with why; the list says each login's mode.
func TestStandInLoginsAddedAndSwitched(t *testing.T) {
	f := newFixture(t, "sandbox_provider = \"direct\"\n")
	if _, err := f.b.AddCredential("gh", true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.AddLogin("npm", config.SecretsCopy, true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.AddLogin("gcloud", config.SecretsStandIn, true); err == nil || !strings.Contains(err.Error(), "gcloud cannot be a stand-in here: gcloud refreshes its own tokens") {
		t.Fatalf("gcloud as a stand-in: %v", err)
	}
	if _, err := f.b.AddLogin("gcloud", "", true); err != nil {
		t.Fatal(err)
	}
	mode := func(key string) (string, string) {
		for _, e := range f.b.Credentials().Entries {
			if e.Key == key {
				return e.Secrets, e.SecretsNote
			}
		}
		return "", "absent"
	}
	for key, want := range map[string]string{"gh": "stand-in", "npm": "copy", "gcloud": "copy"} {
		if got, _ := mode(key); got != want {
			t.Errorf("%s: secrets %q, want %q", key, got, want)
		}
	}
	if _, note := mode("gcloud"); !strings.Contains(note, "gcloud refreshes its own tokens") {
		t.Errorf("gcloud's note: %q", note)
	}
	if _, note := mode("npm"); note != "it can be a stand-in instead: openworker credentials secrets npm stand-in" {
		t.Errorf("npm's note: %q", note)
	}
	if _, err := f.b.SetSecrets("npm", config.SecretsStandIn); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.SetSecrets("gcloud", config.SecretsStandIn); err == nil {
		t.Error("gcloud was switched to a stand-in")
	}
	if _, err := f.b.SetSecrets("terraform", config.SecretsCopy); err == nil || !strings.Contains(err.Error(), "is not added") {
		t.Errorf("an absent login: %v", err)
	}
	if got, _ := mode("npm"); got != "stand-in" {
		t.Errorf("npm after the switch: %q", got)
	}
	text, _ := os.ReadFile(f.settings)
	for _, w := range []string{"name = \"gh\"\nsecrets = \"stand-in\"", "name = \"npm\"\nsecrets = \"stand-in\"", "name = \"gcloud\"\nenabled = true"} {
		if !strings.Contains(string(text), w) {
			t.Errorf("the settings file lacks %q:\n%s", w, text)
		}
	}
	for _, r := range f.b.Credentials().Catalog {
		if want := r.Name == "gh" || r.Name == "npm" || r.Name == "docker" || r.Name == "kubectl" || r.Name == "aws-credentials" || r.Name == "terraform"; r.StandIn != want || (r.Name != "ssh" && !want && r.CopyOnly == "") {
			t.Errorf("catalog row %s: stand-in %v, copy only %q", r.Name, r.StandIn, r.CopyOnly)
		}
	}
}
