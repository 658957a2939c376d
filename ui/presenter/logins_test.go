package presenter

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The backend's shared logins, through the presenter: the catalog says found for a login on
// this machine, adding it puts it in the settings file with its switch, and switching it off
// and removing it follow.
func TestBackendLogins(t *testing.T) {
	f := newFixture(t, "", Options{Logins: nil})
	os.MkdirAll(filepath.Join(f.home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(f.home, ".ssh", "id_ed25519"), []byte("key"), 0o600)
	l := BackendLogins{B: f.b}
	var ssh, gh *CatalogLogin
	for i, c := range l.List().Catalog {
		switch c.Name {
		case "ssh":
			ssh = &l.List().Catalog[i]
		case "gh":
			gh = &l.List().Catalog[i]
		}
	}
	if ssh == nil || !ssh.Found || gh == nil || gh.Found {
		t.Fatalf("catalog: ssh %+v gh %+v", ssh, gh)
	}
	if err := l.AddCatalog("ssh"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(f.settings); !strings.Contains(string(b), `name = "ssh"`) || !strings.Contains(string(b), "enabled = true") {
		t.Fatalf("the settings file after adding ssh:\n%s", b)
	}
	added := l.List().Added
	if len(added) != 1 || added[0].Key != "ssh" || !added[0].Enabled {
		t.Fatalf("added: %+v", added)
	}
	if err := l.SetEnabled("ssh", false); err != nil {
		t.Fatal(err)
	}
	if added := l.List().Added; len(added) != 1 || added[0].Enabled {
		t.Fatalf("after switching it off: %+v", added)
	}
	if err := l.Remove("ssh"); err != nil {
		t.Fatal(err)
	}
	if added := l.List().Added; len(added) != 0 {
		t.Fatalf("after removing it: %+v", added)
	}
}

// The SSH keys are added through OpenWorker or copied, as the person chooses in the Add…
// menu, and the entry offers the other way, each saying what it means.
func TestSSHKeysChoice(t *testing.T) {
	logins := fakeSSHLogins{newFakeLogins()}
	f := newFixture(t, "", Options{Logins: logins})
	f.dispatch(t, ShowWindow{ID: SettingsWindow})
	w, _ := window(f.p.View(), SettingsWindow)
	add := lastMenuButton(w)
	agent, ok := menuItem(add.Menu, "A CLI's login", "SSH keys", "Use them through OpenWorker")
	if !ok || agent.Action != (AddSSHLogin{Keys: "agent"}) || !strings.Contains(agent.Tooltip, "stay outside") {
		t.Fatalf("through OpenWorker: %+v", agent)
	}
	cp, ok := menuItem(add.Menu, "A CLI's login", "SSH keys", "Copy the keys")
	if !ok || cp.Action != (AddSSHLogin{Keys: "copy"}) || !strings.Contains(cp.Tooltip, "any command there can read them") {
		t.Fatalf("copied: %+v", cp)
	}
	f.dispatch(t, agent.Action)
	w, _ = window(f.p.View(), SettingsWindow)
	choice := radioTitled(w, "SSH keys")
	if len(choice.Options) != 2 || !choice.Options[0].Selected || choice.Options[1].Action != (SetSSHKeys{Mode: "copy"}) {
		t.Fatalf("the entry's choice: %+v", choice)
	}
	f.dispatch(t, choice.Options[1].Action)
	if got := logins.calls; !slices.Equal(got, []string{"add ssh agent", "ssh-keys copy"}) {
		t.Fatalf("calls: %v", got)
	}
}

// fakeSecretsLogins is fakeLogins that can share a CLI login's tokens either way.
type fakeSecretsLogins struct{ *fakeLogins }

func (f fakeSecretsLogins) AddLoginSecrets(name, secrets string) error {
	f.calls = append(f.calls, "add "+name+" "+secrets)
	f.added = append(f.added, AddedLogin{Key: name, Title: name, Enabled: true, Secrets: secrets, StandIn: true})
	return nil
}

func (f fakeSecretsLogins) SetSecrets(name, mode string) error {
	f.calls = append(f.calls, "secrets "+name+" "+mode)
	for i := range f.added {
		if f.added[i].Key == name {
			f.added[i].Secrets = mode
		}
	}
	return nil
}

// A login that can be a stand-in is added as one or copied, as the person chooses in the
// Add… menu, and its entry offers the other way, each saying what it means; one that cannot
// says why it is copied.
func TestSecretsChoice(t *testing.T) {
	logins := fakeSecretsLogins{newFakeLogins()}
	f := newFixture(t, "", Options{Logins: logins})
	f.dispatch(t, ShowWindow{ID: SettingsWindow})
	w, _ := window(f.p.View(), SettingsWindow)
	add := lastMenuButton(w)
	standIn, ok := menuItem(add.Menu, "A CLI's login", "npm (~/.npmrc) — found", "Stand-ins inside")
	if !ok || standIn.Action != (AddLoginSecrets{Name: "npm", Secrets: "stand-in"}) || !strings.Contains(standIn.Tooltip, "The tokens stay outside") {
		t.Fatalf("stand-ins: %+v", standIn)
	}
	if cp, ok := menuItem(add.Menu, "A CLI's login", "npm (~/.npmrc) — found", "Copy the tokens"); !ok || cp.Action != (AddLoginSecrets{Name: "npm", Secrets: "copy"}) || !strings.Contains(cp.Tooltip, "any command there can read them") {
		t.Fatalf("copied: %+v", cp)
	}
	aws, ok := menuItem(add.Menu, "A CLI's login", "AWS credentials (~/.aws/credentials) — found")
	if !ok || aws.Submenu != nil || !strings.Contains(aws.Tooltip, "copied into the sandbox: AWS tools written in Go (terraform, the Go SDK) trust only the system") {
		t.Fatalf("a login that is always copied: %+v", aws)
	}
	f.dispatch(t, standIn.Action)
	w, _ = window(f.p.View(), SettingsWindow)
	choice := radioTitled(w, "npm tokens")
	if len(choice.Options) != 2 || !choice.Options[0].Selected || choice.Options[1].Action != (SetSecrets{Name: "npm", Mode: "copy"}) {
		t.Fatalf("the entry's choice: %+v", choice)
	}
	f.dispatch(t, choice.Options[1].Action)
	if got := logins.calls; !slices.Equal(got, []string{"add npm stand-in", "secrets npm copy"}) {
		t.Fatalf("calls: %v", got)
	}
}
