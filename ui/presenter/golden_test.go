package presenter

import (
	"fmt"
	"strconv"

	"flag"
	"github.com/openworker/openworker/core/backend"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openworker/openworker/ui/view"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Each preview state's view tree is kept as text in testdata/, so that a change to what the
// person sees shows in a diff (go test ./ui/presenter -update rewrites them).
func TestGolden(t *testing.T) {
	names := map[string]bool{}
	for _, pv := range Previews() {
		t.Run(pv.Name, func(t *testing.T) {
			if names[pv.Name] {
				t.Fatalf("two previews are named %s", pv.Name)
			}
			names[pv.Name] = true
			got := "# " + pv.Title + "\n" + view.Dump(Build(pv.State))
			file := filepath.Join("testdata", pv.Name+".txt")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (go test ./ui/presenter -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("%s changed (go test ./ui/presenter -update if it is meant to):\n%s", file, diff(string(want), got))
			}
		})
	}
	// No golden file is left over from a preview that is gone.
	files, _ := filepath.Glob(filepath.Join("testdata", "*.txt"))
	for _, f := range files {
		if !names[strings.TrimSuffix(filepath.Base(f), ".txt")] && !*update {
			t.Errorf("%s has no preview", f)
		}
	}
}

// The previews hold every state the product must show.
func TestPreviewsCoverTheScreens(t *testing.T) {
	want := []string{"first-launch", "sandbox-off", "allowlist", "open-network", "refused", "one-card", "three-cards",
		"web-fetch-card", "settings-sandbox", "choose-sites", "credentials", "add-file"}
	var got []string
	for _, pv := range Previews() {
		got = append(got, pv.Name)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("no preview %s", w)
		}
	}
}

func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("- " + wl + "\n+ " + gl + "\n")
		}
	}
	return b.String()
}

// fakeLogins is the shared logins as the presenter sees them, recording each call.
type fakeLogins struct {
	catalog []CatalogLogin
	added   []AddedLogin
	calls   []string
}

func newFakeLogins() *fakeLogins { return &fakeLogins{catalog: SampleCatalog()} }

func (f *fakeLogins) List() LoginList {
	l := LoginList{Added: slices.Clone(f.added), Catalog: slices.Clone(f.catalog)}
	for i, c := range l.Catalog {
		l.Catalog[i].Added = slices.ContainsFunc(f.added, func(a AddedLogin) bool { return a.Key == c.Name })
	}
	return l
}

func (f *fakeLogins) AddCatalog(name string) error {
	f.calls = append(f.calls, "add "+name)
	for _, c := range f.catalog {
		if c.Name == name {
			f.added = append(f.added, AddedLogin{Key: name, Title: c.Title, From: c.From, Kind: c.Kind, Hosts: c.Hosts, Enabled: true, Status: c.Status})
		}
	}
	return nil
}

func (f *fakeLogins) AddPath(path, label string, hosts []string) error {
	f.calls = append(f.calls, "path "+path+" "+label+" ["+strings.Join(hosts, " ")+"]")
	f.added = append(f.added, AddedLogin{Key: path, Title: path, From: path, Kind: label, Hosts: hosts, Enabled: true})
	return nil
}

func (f *fakeLogins) SetEnabled(key string, on bool) error {
	if on {
		f.calls = append(f.calls, "enable "+key+" true")
	} else {
		f.calls = append(f.calls, "enable "+key+" false")
	}
	for i := range f.added {
		if f.added[i].Key == key {
			f.added[i].Enabled = on
		}
	}
	return nil
}

// fakeSSHLogins is fakeLogins that can share the SSH keys either way.
type fakeSSHLogins struct{ *fakeLogins }

func (f fakeSSHLogins) AddSSH(keys string) error {
	f.calls = append(f.calls, "add ssh "+keys)
	f.added = append(f.added, AddedLogin{Key: "ssh", Title: "SSH keys", Enabled: true, Keys: keys})
	return nil
}

func (f fakeSSHLogins) SetSSHKeys(mode string) error {
	f.calls = append(f.calls, "ssh-keys "+mode)
	for i := range f.added {
		if f.added[i].Key == "ssh" {
			f.added[i].Keys = mode
		}
	}
	return nil
}

func (f *fakeLogins) Remove(key string) error {
	f.calls = append(f.calls, "remove "+key)
	f.added = slices.DeleteFunc(f.added, func(a AddedLogin) bool { return a.Key == key })
	return nil
}

// The status icon's table, as the README carries it, is kept in testdata/status-icons.md.
func TestStatusIconTable(t *testing.T) {
	off := previewState("direct", "allowlist")
	allow := previewState("seatbelt", "allowlist", "github")
	open := previewState("seatbelt", "open")
	refused := previewState("seatbelt", "allowlist")
	refused.Wall.OK, refused.Wall.Reason = false, nestedReason
	attention := allow
	attention.Cards = []backend.CardInfo{commandCard("c1", "pypi.org:443", "", 0, ""), commandCard("c2", "crates.io:443", "", 0, "")}
	rows := []struct {
		when string
		s    State
	}{
		{"Sandbox off: commands run directly (the default)", off},
		{"Sandbox on, only the sites you allow", allow},
		{"Sandbox on, the network open", open},
		{"Refused: the wall is not up (here: OpenWorker inside another sandbox)", refused},
		{"Cards waiting (here: two)", attention},
	}
	var b strings.Builder
	b.WriteString("| State | SF Symbol | Fallback image | Beside the icon | Tooltip |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		icon := Icon(r.s)
		badge := ""
		if icon.Badge > 0 {
			badge = strconv.Itoa(icon.Badge)
		}
		fmt.Fprintf(&b, "| %s | `%s` | `%s` | %s | %s |\n", r.when, icon.Symbol, icon.Image, badge, icon.Tooltip)
	}
	file := filepath.Join("testdata", "status-icons.md")
	if *update {
		os.WriteFile(file, []byte(b.String()), 0o644)
		return
	}
	want, _ := os.ReadFile(file)
	if b.String() != string(want) {
		t.Errorf("%s changed (-update):\n%s", file, diff(string(want), b.String()))
	}
}
