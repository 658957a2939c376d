package presenter

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/config"
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

func (f *fakeLogins) Catalog() []CatalogLogin { return f.catalog }
func (f *fakeLogins) Added() []AddedLogin     { return slices.Clone(f.added) }

func (f *fakeLogins) AddCatalog(name string) error {
	f.calls = append(f.calls, "add "+name)
	for _, c := range f.catalog {
		if c.Name == name {
			f.added = append(f.added, AddedLogin{Key: name, Title: c.Title, Label: config.LabelCredential, Hosts: c.Hosts, Enabled: true})
		}
	}
	return nil
}

func (f *fakeLogins) AddPath(path, label string, hosts []string) error {
	f.calls = append(f.calls, "path "+path+" "+label+" ["+strings.Join(hosts, " ")+"]")
	f.added = append(f.added, AddedLogin{Key: path, Title: path, Label: label, Hosts: hosts, Enabled: true})
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

func (f *fakeLogins) Remove(key string) error {
	f.calls = append(f.calls, "remove "+key)
	f.added = slices.DeleteFunc(f.added, func(a AddedLogin) bool { return a.Key == key })
	return nil
}
