package tstest

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// The layering, as tailscale's deptest keeps its own: core never imports ui; the walls and
// the pure deciders import nothing that decides sessions; the local API's clients import its
// wire types and not the server; the presenter and the app are clients of the backend, never
// the other way round.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-json=ImportPath,Deps", "github.com/openworker/openworker/...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	deps := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		deps[p.ImportPath] = p.Deps
	}
	const mod = "github.com/openworker/openworker/"
	rules := []struct {
		pkg    string // a prefix of packages
		forbid []string
	}{
		{"core/", []string{"ui/", "app/"}},
		{"core/linux", []string{"core/session", "core/backend", "core/api", "core/mcp"}},
		{"core/seatbelt", []string{"core/session", "core/backend", "core/api", "core/mcp"}},
		{"core/approvals", []string{"core/session", "core/backend", "core/proxy", "core/api"}},
		{"core/hosts", []string{"core/session", "core/backend", "core/proxy"}},
		{"core/policy", []string{"core/session", "core/backend", "core/linux", "core/seatbelt"}},
		{"core/proxy", []string{"core/session", "core/backend"}},
		// The SSH agent signs; who may sign is asked through its Options, never decided here.
		{"core/sshagent", []string{"core/session", "core/backend", "core/approvals", "core/api"}},
		{"core/backend", []string{"core/api", "core/mcp", "core/linux"}},
		// A session reaches its wall through sandbox.Provider alone (denials included).
		{"core/session", []string{"core/backend", "core/api", "core/linux", "core/seatbelt"}},
		// Clients of the local API see its wire types, never the server, sessions or walls.
		{"core/apiclient", []string{"core/api", "core/backend", "core/session", "core/proxy", "core/linux", "core/seatbelt"}},
		{"core/apitype", []string{"core/api", "core/backend", "core/session", "core/proxy", "core/linux", "core/seatbelt"}},
	}
	checked := 0
	for pkg, ds := range deps {
		name, ok := strings.CutPrefix(pkg, mod)
		if !ok {
			continue
		}
		for _, r := range rules {
			if !within(name, r.pkg) {
				continue
			}
			checked++
			for _, d := range ds {
				dn, ok := strings.CutPrefix(d, mod)
				if !ok {
					continue
				}
				for _, f := range r.forbid {
					if within(dn, f) {
						t.Errorf("%s imports %s", name, dn)
					}
				}
			}
		}
	}
	if checked < len(rules) {
		t.Fatalf("only %d packages checked; the module's packages were not listed", checked)
	}
}

// within says whether package name is pkg or lies under it ("core/api" is not "core/apitype").
func within(name, pkg string) bool {
	if strings.HasSuffix(pkg, "/") {
		return strings.HasPrefix(name, pkg)
	}
	return name == pkg || strings.HasPrefix(name, pkg+"/")
}
