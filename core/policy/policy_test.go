package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type fixture struct {
	root, home, state, proj string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{root: root, home: filepath.Join(root, "home"), proj: filepath.Join(root, "work", "proj")}
	f.state = filepath.Join(f.home, ".local", "state", "openworker")
	for _, d := range []string{f.home, f.proj, filepath.Join(f.proj, "vendor"), filepath.Join(f.home, "code", "app")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func TestSymlinkedFoldersAreResolved(t *testing.T) {
	f := newFixture(t)
	link := filepath.Join(f.root, "link-to-proj")
	if err := os.Symlink(f.proj, link); err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Writable: []string{link + "/"}, UserHome: f.home, GOOS: "linux"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Writable, []string{f.proj}) {
		t.Fatalf("writable = %v, want the link's target %s", p.Writable, f.proj)
	}
	// A symlink that leads into the home folder is judged by where it leads.
	homeLink := filepath.Join(f.root, "innocent")
	os.Symlink(f.home, homeLink)
	if _, err := New(Options{Writable: []string{homeLink}, UserHome: f.home}); err == nil || !strings.Contains(err.Error(), "is your home folder") {
		t.Fatalf("a link to the home folder was accepted: %v", err)
	}
}

func TestNestedFolders(t *testing.T) {
	f := newFixture(t)
	vendor := filepath.Join(f.proj, "vendor")
	p, err := New(Options{
		Writable: []string{f.proj, f.proj, vendor}, // a writable folder inside another adds nothing
		ReadOnly: []string{vendor},                 // but a read-only one inside a writable one stays read-only
		UserHome: f.home,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Writable, []string{f.proj}) || !slices.Equal(p.ReadOnly, []string{vendor}) {
		t.Fatalf("writable %v read-only %v; want [%s] and [%s]", p.Writable, p.ReadOnly, f.proj, vendor)
	}
	// The same folder given both ways is read-only.
	p, err = New(Options{Writable: []string{f.proj}, ReadOnly: []string{f.proj}, UserHome: f.home})
	if err != nil || len(p.Writable) != 0 || !slices.Equal(p.ReadOnly, []string{f.proj}) {
		t.Fatalf("rw+ro of one folder: %v %v %v", p.Writable, p.ReadOnly, err)
	}
	// A project inside the home folder is fine.
	app := filepath.Join(f.home, "code", "app")
	if p, err = New(Options{Writable: []string{app}, UserHome: f.home, StateDir: f.state}); err != nil || p.Writable[0] != app {
		t.Fatalf("project under home: %v %v", p, err)
	}
}

func TestRefusals(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"relative", Options{Writable: []string{"proj"}}, `writable folder "proj" is a relative path`},
		{"missing", Options{Writable: []string{filepath.Join(f.root, "nope")}}, "does not exist"},
		{"home", Options{Writable: []string{f.home}}, "is your home folder"},
		{"contains_home", Options{ReadOnly: []string{f.root}}, "contains your home folder"},
		{"root", Options{ReadOnly: []string{"/"}}, "contains your home folder"},
		{"contains_state", Options{Writable: []string{filepath.Join(f.home, ".local")}, StateDir: f.state}, "contains OpenWorker's own state folder"},
		{"file", Options{Writable: []string{filepath.Join(f.root, "file")}}, "is not a folder"},
		{"bad_network", Options{Network: "wide-open"}, `network "wide-open" is not one of`},
	}
	os.WriteFile(filepath.Join(f.root, "file"), nil, 0o644)
	os.MkdirAll(f.state, 0o700)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.UserHome = f.home
			if tt.opts.StateDir == "" {
				tt.opts.StateDir = f.state
			}
			_, err := New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestSystemPathsAndMarker(t *testing.T) {
	f := newFixture(t)
	tmp := filepath.Join(f.root, "ow-tmp")
	os.Mkdir(tmp, 0o700)
	p, err := New(Options{Writable: []string{f.proj}, PrivateTmp: tmp, UserHome: f.home, GOOS: "darwin"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/private/etc", "/Library/Frameworks", "/System/Library", "/System/Cryptexes", "/System/Volumes/Preboot", "/System/iOSSupport"} {
		if !slices.Contains(p.System, want) {
			t.Errorf("darwin system paths lack %s", want)
		}
	}
	// Not /System or /System/Volumes whole: /System/Volumes/Data is every file of the Mac.
	for _, d := range p.System {
		if d == "/Library" || d == "/private/var" || Within(d, DarwinDataVolume) {
			t.Errorf("darwin system paths include %s, which holds all of /Library, /private/var or the data volume", d)
		}
	}
	if p.Home != filepath.Join(tmp, "home") || !slices.Contains(p.WritableAll(), tmp) {
		t.Errorf("home %s, writable %v", p.Home, p.WritableAll())
	}
	q, _ := New(Options{UserHome: f.home})
	if p.Marker == "" || p.Marker == q.Marker || !strings.HasPrefix(p.Marker, "openworker-") {
		t.Errorf("markers %q %q are not fresh per run", p.Marker, q.Marker)
	}
	if _, err := New(Options{PrivateTmp: tmp, Home: "/elsewhere", UserHome: f.home}); err == nil {
		t.Error("a sandbox home outside the private tmp was accepted")
	}
}

// The session's CA bundle is placed at the system's bundle files that are regular files here
// (on Linux), and only a file in the private tmp is.
func TestTrustBundle(t *testing.T) {
	f := newFixture(t)
	tmp := filepath.Join(f.root, "private")
	os.MkdirAll(filepath.Join(tmp, "home"), 0o700)
	bundle, store := filepath.Join(tmp, "ca-bundle.pem"), filepath.Join(tmp, "cacerts")
	os.WriteFile(bundle, []byte("-----BEGIN CERTIFICATE-----\n"), 0o444)
	os.WriteFile(store, []byte("\xfe\xed\xfe\xed"), 0o444)
	p, err := New(Options{Writable: []string{f.proj}, UserHome: f.home, PrivateTmp: tmp, GOOS: "linux", TrustBundle: bundle, JavaTrustStore: store})
	if err != nil {
		t.Fatal(err)
	}
	var want []Setting
	for _, b := range SystemCABundles("linux") {
		if fi, err := os.Lstat(b); err == nil && fi.Mode().IsRegular() {
			want = append(want, Setting{Src: bundle, Dst: b})
		}
	}
	for _, b := range SystemJavaTrustStores("linux") {
		if fi, err := os.Lstat(b); err == nil && fi.Mode().IsRegular() {
			want = append(want, Setting{Src: store, Dst: b})
		}
	}
	if len(want) == 0 {
		t.Skip("this machine has none of the system's bundle files")
	}
	if !slices.Equal(p.Trust, want) {
		t.Fatalf("trust %v, want %v", p.Trust, want)
	}
	if p, err := New(Options{Writable: []string{f.proj}, UserHome: f.home, PrivateTmp: tmp, GOOS: "darwin", TrustBundle: bundle}); err != nil || len(p.Trust) != 0 {
		t.Fatalf("a Mac's policy places files: %v %v", p, err)
	}
	outside := filepath.Join(f.proj, "bundle.pem")
	os.WriteFile(outside, nil, 0o644)
	if _, err := New(Options{Writable: []string{f.proj}, UserHome: f.home, PrivateTmp: tmp, GOOS: "linux", TrustBundle: outside}); err == nil || !strings.Contains(err.Error(), "is not in the private tmp") {
		t.Fatalf("a bundle outside the private tmp: %v", err)
	}
}
