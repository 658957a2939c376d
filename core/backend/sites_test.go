package backend

import (
	"strings"
	"testing"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/hosts"
)

// Ticking a group is one change: the sessions get the whole group at once (never half of
// it), and the settings file is written once.
func TestTickIsOneChange(t *testing.T) {
	f := newFixture(t, "# mine\n")
	g, ok := hosts.CatalogGroup("github")
	if !ok || len(g.Entries) < 2 {
		t.Fatalf("the github group: %v %+v", ok, g)
	}
	st := f.b.store
	var seen []int
	st.mu.Lock()
	orig := st.onSet
	st.onSet = func(in *config.InForce) {
		seen = append(seen, len(in.Settings.NetworkHosts))
		orig(in)
	}
	st.mu.Unlock()
	if err := f.b.Tick("github"); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != len(g.Entries) {
		t.Fatalf("tick github: the sessions saw lists of %v sites, want one change to %d", seen, len(g.Entries))
	}
	seen = nil
	if err := f.b.Untick("github"); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != 0 {
		t.Fatalf("untick github: the sessions saw lists of %v sites, want one change to 0", seen)
	}
	if err := f.b.Tick("githbu"); err == nil || strings.Contains(err.Error(), "[") || !strings.Contains(err.Error(), "github") {
		t.Fatalf("tick githbu: %v; want the groups named as a list a person reads", err)
	}
}
