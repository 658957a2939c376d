package presenter

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openworker/openworker/ui/view"
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
	var add view.MenuButton
	view.Walk(w.Body, func(n view.Node) {
		if m, ok := n.(view.MenuButton); ok {
			add = m
		}
	})
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
	var choice view.Radio
	view.Walk(w.Body, func(n view.Node) {
		if r, ok := n.(view.Radio); ok && r.Title == "SSH keys" {
			choice = r
		}
	})
	if len(choice.Options) != 2 || !choice.Options[0].Selected || choice.Options[1].Action != (SetSSHKeys{Mode: "copy"}) {
		t.Fatalf("the entry's choice: %+v", choice)
	}
	f.dispatch(t, choice.Options[1].Action)
	if got := logins.calls; !slices.Equal(got, []string{"add ssh agent", "ssh-keys copy"}) {
		t.Fatalf("calls: %v", got)
	}
}
