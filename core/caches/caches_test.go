package caches

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func flockEx(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }

// The key is the one the session's kept walks have always had: hex of the first 16 bytes of
// SHA-256 over the folders joined by NUL.
func TestKeyIsTheWalksKey(t *testing.T) {
	roots := []string{"/srv/a", "/srv/b"}
	sum := sha256.Sum256([]byte("/srv/a\x00/srv/b"))
	if got, want := Key(roots), hex.EncodeToString(sum[:16]); got != want {
		t.Fatalf("Key = %s, want %s", got, want)
	}
	if Key([]string{"/srv/a"}) == Key(roots) || Key([]string{"/srv/a/b"}) == Key([]string{"/srv/a", "b"}) {
		t.Fatal("different projects share a key")
	}
}

// fill writes n bytes into a file of the project's caches.
func fill(t *testing.T, k *Kept, name string, n int) {
	t.Helper()
	p := filepath.Join(k.Dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, make([]byte, n), 0o600); err != nil {
		t.Fatal(err)
	}
}

func newStore(t *testing.T) Store {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return NewStore(dir)
}

func keys(ps []Project) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Folders[0])
	}
	slices.Sort(out)
	return out
}

// A project's second session finds what its first kept; the store records its size and
// folders; another project's session gets a folder of its own.
func TestSecondSessionFindsTheFirstsCaches(t *testing.T) {
	st := newStore(t)
	a, err := st.Open([]string{"/p/a"})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, a, "go-build/00/x", 100<<10)
	a.Close(1 << 30)
	again, err := st.Open([]string{"/p/a"})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close(1 << 30)
	if again.Dir != a.Dir {
		t.Fatalf("the second session's folder is %s, the first's %s", again.Dir, a.Dir)
	}
	if _, err := os.Stat(filepath.Join(again.Dir, "go-build/00/x")); err != nil {
		t.Fatalf("the first session's cache entry: %v", err)
	}
	b, err := st.Open([]string{"/p/b"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(1 << 30)
	if b.Dir == a.Dir || strings.HasPrefix(b.Dir, a.Dir+"/") || strings.HasPrefix(a.Dir, b.Dir+"/") {
		t.Fatalf("two projects share %s and %s", a.Dir, b.Dir)
	}
	ps := st.List()
	if len(ps) != 2 {
		t.Fatalf("listed %+v", ps)
	}
	for _, p := range ps {
		if !p.InUse {
			t.Errorf("%v is in use and not said to be", p.Folders)
		}
		if p.Folders[0] == "/p/a" && p.Size < 100<<10 {
			t.Errorf("project a is recorded at %d bytes", p.Size)
		}
	}
}

// The bound holds once sessions end: the least recently used projects go first, and those a
// session uses stay, whatever they take.
func TestTrimKeepsTheBound(t *testing.T) {
	st := newStore(t)
	for _, name := range []string{"/p/1", "/p/2", "/p/3"} {
		k, err := st.Open([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		fill(t, k, "npm/blob", 64<<10)
		k.Close(1 << 30)
		time.Sleep(10 * time.Millisecond) // distinct times of use
	}
	each := st.List()[0].Size                 // what one takes on disk, its folders included
	running, err := st.Open([]string{"/p/1"}) // the oldest, in use now
	if err != nil {
		t.Fatal(err)
	}
	two := 2*each + each/2
	removed := st.Trim(two)
	if got := keys(st.List()); !slices.Equal(got, []string{"/p/1", "/p/3"}) {
		t.Fatalf("kept %v (removed %v); want the one in use and the most recently used", got, removed)
	}
	running.Close(two)
	// Ended, it is the most recently used; with room for one, it is what stays.
	one := each + each/2
	st.Trim(one)
	var total int64
	for _, p := range st.List() {
		total += p.Size
	}
	if got := keys(st.List()); !slices.Equal(got, []string{"/p/1"}) || total > one {
		t.Fatalf("kept %v, %d bytes, with a bound of %d", got, total, one)
	}
	// A bound of nothing keeps nothing.
	st.Trim(0)
	if ps := st.List(); len(ps) != 0 {
		t.Fatalf("kept %+v with a bound of 0", ps)
	}
	if des, _ := os.ReadDir(st.Dir()); slices.ContainsFunc(des, func(d fs.DirEntry) bool { return strings.HasPrefix(d.Name(), trashPrefix) }) {
		t.Fatalf("a removed project's folder is left in the store: %v", des)
	}
}

// A session that ended without its end (killed) left no record of what it wrote: the next
// trim measures the folder before it decides.
func TestTrimMeasuresWhatACrashLeft(t *testing.T) {
	st := newStore(t)
	k, err := st.Open([]string{"/p/crashed"})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, k, "pip/wheel", 256<<10)
	k.lock.Close() // the process died: its lock went with it, no record was written
	if removed := st.Trim(128 << 10); len(removed) != 1 {
		t.Fatalf("removed %v; the crashed project's 256 KiB are past a bound of 128 KiB", removed)
	}
}

// A project with nothing in its caches leaves no folder behind.
func TestEmptyCachesAreNotKept(t *testing.T) {
	st := newStore(t)
	k, err := st.Open([]string{"/p/empty"})
	if err != nil {
		t.Fatal(err)
	}
	k.Close(1 << 30)
	if ps := st.List(); len(ps) != 0 {
		t.Fatalf("kept %+v", ps)
	}
}

// Clearing a project's caches is refused while a session uses them, and removes them after.
func TestClear(t *testing.T) {
	st := newStore(t)
	k, err := st.Open([]string{"/p/a"})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, k, "cargo/registry/x", 10)
	if err := st.Clear(k.Key()); !errors.Is(err, ErrInUse) {
		t.Fatalf("clear while in use: %v", err)
	}
	k.Close(1 << 30)
	if err := st.Clear(k.Key()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(k.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the caches are still there: %v", err)
	}
	if err := st.Clear(k.Key()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("clearing what is not kept: %v", err)
	}
	if err := st.Clear("../x"); err == nil {
		t.Fatal("a key that leaves the store was taken")
	}
}

// While a clear holds a project, a session of it starts cold instead of waiting; once the
// clear is done, a session makes the folder again.
func TestOpenDuringAClear(t *testing.T) {
	st := newStore(t)
	k, err := st.Open([]string{"/p/a"})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, k, "x", 10)
	k.Close(1 << 30)
	dir := filepath.Join(st.Dir(), k.Key())
	l, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := flockEx(l); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Open([]string{"/p/a"}); !errors.Is(err, ErrInUse) {
		t.Fatalf("open while cleared: %v", err)
	}
	st.remove(dir)
	l.Close()
	again, err := st.Open([]string{"/p/a"})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close(1 << 30)
	if _, err := os.Stat(filepath.Join(again.Dir, "x")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the cleared entry came back: %v", err)
	}
}

// Past MaxProjects, the least recently used go, however small.
func TestTrimBoundsTheNumberOfProjects(t *testing.T) {
	st := newStore(t)
	for i := 0; i <= MaxProjects; i++ {
		k, err := st.Open([]string{"/p/" + strings.Repeat("x", i+1)})
		if err != nil {
			t.Fatal(err)
		}
		fill(t, k, "f", 1)
		dir := filepath.Join(st.Dir(), k.Key())
		if err := writeRecord(dir, record{Folders: k.folders, Size: 1, Measured: time.Now()}); err != nil {
			t.Fatal(err)
		}
		k.lock.Close()
		k.lock = nil
		// Started before it ended: a session that ended properly, at 1000+i.
		os.Chtimes(filepath.Join(dir, lockFile), time.Unix(1, 0), time.Unix(1, 0))
		touch(filepath.Join(dir, usedFile), time.Unix(int64(1000+i), 0))
	}
	removed := st.Trim(1 << 40)
	if len(removed) != 1 || removed[0][0] != "/p/x" {
		t.Fatalf("removed %v, want only the least recently used", removed)
	}
	if n := len(st.List()); n != MaxProjects {
		t.Fatalf("%d projects kept", n)
	}
}

// Go's module cache makes its folders read-only; removing a project's caches empties them
// all the same, and a link in them is removed, never followed.
func TestRemoveReadOnlyFoldersAndLinks(t *testing.T) {
	st := newStore(t)
	outside := t.TempDir()
	if err := os.Chmod(outside, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(outside, 0o700)
	k, err := st.Open([]string{"/p/a"})
	if err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(k.Dir, "go-mod", "example.com", "m@v1.0.0")
	fill(t, k, "go-mod/example.com/m@v1.0.0/go.mod", 10)
	if err := os.Symlink(outside, filepath.Join(mod, "link")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{mod, filepath.Dir(mod)} {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(k.Dir, "closed"), 0); err != nil {
		t.Fatal(err)
	}
	k.Close(1 << 30)
	fd, err := openDir(k.Dir)
	if err != nil {
		t.Fatal(err)
	}
	makeWritable(fd, 0)
	fi, err := os.Stat(mod)
	if err != nil || fi.Mode().Perm()&0o700 != 0o700 {
		t.Fatalf("the read-only folder is %v (%v)", fi.Mode(), err)
	}
	if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != 0o555 {
		t.Fatalf("the folder a link led to was changed: %v (%v)", fi.Mode(), err)
	}
	if err := st.Clear(k.Key()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(st.Dir(), k.Key())); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the project's folder is left: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("the folder a link led to: %v", err)
	}
}

// A project's caches are walked at most once a minute at a session's end; what sessions add
// meanwhile is counted by the first trim after that minute.
func TestMeasuredAtMostOnceAMinute(t *testing.T) {
	st := newStore(t)
	open := func() *Kept {
		k, err := st.Open([]string{"/p/busy"})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k := open()
	fill(t, k, "a", 64<<10)
	k.Close(1 << 30)
	first := st.List()[0].Size
	k = open()
	fill(t, k, "b", 64<<10)
	k.Close(1 << 30)
	if got := st.List()[0].Size; got != first {
		t.Fatalf("measured again within the minute: %d, then %d", first, got)
	}
	// A minute later (the record says so), the next trim measures what was added.
	dir := filepath.Join(st.Dir(), k.Key())
	r, _ := readRecord(dir)
	r.Measured = r.Measured.Add(-MeasureEvery)
	if err := writeRecord(dir, r); err != nil {
		t.Fatal(err)
	}
	// Its last session started and ended properly after the measure.
	os.Chtimes(filepath.Join(dir, lockFile), r.Measured, r.Measured)
	touch(filepath.Join(dir, usedFile), r.Measured.Add(time.Second))
	st.Trim(1 << 30)
	if got := st.List()[0].Size; got < first+64<<10 {
		t.Fatalf("after a minute the caches are recorded at %d bytes, want at least %d", got, first+64<<10)
	}
}

// Caches found empty are not kept, but only when they were just measured: what a session
// wrote since an empty measure is kept until the next one says.
func TestEmptyOnlyWhenMeasured(t *testing.T) {
	st := newStore(t)
	first, err := st.Open([]string{"/p/a"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := st.Open([]string{"/p/a"})
	if err != nil {
		t.Fatal(err)
	}
	first.Close(1 << 30) // measured empty; kept, as the second session holds them
	fill(t, second, "written-since", 10)
	second.Close(1 << 30) // within the minute: not measured, so not judged empty
	if _, err := os.Stat(filepath.Join(second.Dir, "written-since")); err != nil {
		t.Fatalf("what a session wrote after an empty measure was removed: %v", err)
	}
}
