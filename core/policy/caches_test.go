package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cachesFixture is a fixture with a private tmp, and a policy of its project to add caches
// to, made by New from the same options each time.
func cachesFixture(t *testing.T) (fixture, string, func() *Policy) {
	t.Helper()
	f := newFixture(t)
	tmp := filepath.Join(f.root, "tmp")
	mkdirs(t, tmp)
	return f, tmp, func() *Policy {
		p, err := New(Options{Writable: []string{f.proj}, UserHome: f.home, StateDir: f.state, PrivateTmp: tmp})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
}

// The project's kept caches are the one part of the state folder a session reaches: only
// folders inside it are taken, and they are readable and writable.
func TestKeptCaches(t *testing.T) {
	f, tmp, newPolicy := cachesFixture(t)
	kept := filepath.Join(f.state, "caches", "0123", "tools")
	elsewhere := filepath.Join(f.root, "elsewhere")
	mkdirs(t, kept, elsewhere)
	p := newPolicy()
	if err := p.AddCaches([]Placed{{Src: kept, Dst: filepath.Join(tmp, "cache")}}, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Caches, []Placed{{Src: kept, Dst: filepath.Join(tmp, "cache")}}) || !slices.Contains(p.WritableAll(), kept) || !slices.Contains(p.Readable(), kept) {
		t.Fatalf("caches %v, writable %v, readable %v", p.Caches, p.WritableAll(), p.Readable())
	}
	// Reached where it is, as Seatbelt reaches it.
	if q := newPolicy(); q.AddCaches([]Placed{{Src: kept, Dst: kept}}, nil) != nil || !slices.Equal(q.Caches, []Placed{{Src: kept, Dst: kept}}) {
		t.Fatalf("a cache reached where it is: %v", q.Caches)
	}
	if _, ok := p.ID(kept); !ok {
		t.Error("what the cache folder was when checked is not recorded, for the bind to compare")
	}
	for _, bad := range []Placed{
		{Src: elsewhere, Dst: filepath.Join(tmp, "cache")},
		{Src: f.state, Dst: filepath.Join(tmp, "cache")},
		{Src: filepath.Join(f.state, "caches", "missing"), Dst: filepath.Join(tmp, "cache")},
		{Src: "relative", Dst: filepath.Join(tmp, "cache")},
		{Src: kept, Dst: filepath.Join(f.proj, "cache")}, // placed outside the private tmp
		{Src: kept, Dst: tmp},
	} {
		if err := newPolicy().AddCaches([]Placed{bad}, nil); err == nil || !strings.Contains(err.Error(), "cache folder") {
			t.Errorf("cache folder %s: %v, want the session refused", bad, err)
		}
	}
}

// The person's caches are read only where a session folder could be read: never a folder
// of logins, the home folder or OpenWorker's own, nor one the session writes.
func TestHostCaches(t *testing.T) {
	f, tmp, newPolicy := cachesFixture(t)
	dl := filepath.Join(f.home, "go", "pkg", "mod", "cache", "download")
	ssh := filepath.Join(f.home, ".ssh", "cache")
	inProject := filepath.Join(f.proj, "gopath", "cache")
	inState := filepath.Join(f.state, "cache")
	mkdirs(t, dl, ssh, inProject, inState)
	p := newPolicy()
	at := filepath.Join(tmp, "go-downloads")
	var host []Placed
	for _, d := range []string{dl, ssh, inProject, inState, f.home, filepath.Join(f.home, "none"), "relative"} {
		host = append(host, Placed{Src: d, Dst: at})
	}
	host = append(host, Placed{Src: dl, Dst: filepath.Join(f.proj, "dl")}) // placed outside the private tmp
	if err := p.AddCaches(nil, host); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.HostCaches, []Placed{{Src: dl, Dst: at}}) {
		t.Fatalf("host caches %v, want only %s at %s", p.HostCaches, dl, at)
	}
	if !slices.Contains(p.Readable(), dl) || slices.Contains(p.WritableAll(), dl) {
		t.Fatalf("readable %v, writable %v", p.Readable(), p.WritableAll())
	}
}
