package presenter

import (
	"os"
	"path/filepath"
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
