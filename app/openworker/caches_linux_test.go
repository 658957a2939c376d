package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A project's tools keep their caches for its next session, in the state folder; another
// project's sessions never see them; the person's Go module downloads are read and never
// written.

// folder makes a folder of the world's, outside its home.
func (w *world) folder(name string) string {
	w.t.Helper()
	d := filepath.Join(filepath.Dir(w.project), name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		w.t.Fatal(err)
	}
	return d
}

// in runs a shell command in a session whose one writable folder is dir, with more flags
// of run before it; it returns the command's output and status.
func (w *world) in(dir, script string, flags ...string) (string, int) {
	w.t.Helper()
	c := w.cmd(append(append(flags, "--"), "sh", "-c", script)...)
	c.Dir = dir
	out, err := c.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("running openworker: %v", err)
	}
	return string(out), code
}

func TestCachesAreTheProjectsOwn(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	a, b := w.project, w.folder("other")
	// A command of project a plants entries in its tools' caches (a module's source changed
	// after go.sum checked it; a package in npm's cache; a crate in cargo's registry).
	plant := `set -e
mkdir -p "$GOMODCACHE/example.com/planted@v1.0.0" "$npm_config_cache/_cacache" "$CARGO_HOME/registry"
echo 'package p // planted' > "$GOMODCACHE/example.com/planted@v1.0.0/p.go"
echo planted > "$npm_config_cache/_cacache/entry"
echo planted > "$CARGO_HOME/registry/entry"
echo planted > "$XDG_CACHE_HOME/other-tool"`
	if out, code := w.in(a, plant, "run"); code != 0 {
		t.Fatalf("planting: exit %d\n%s", code, out)
	}
	look := `for f in "$GOMODCACHE/example.com/planted@v1.0.0/p.go" "$npm_config_cache/_cacache/entry" "$CARGO_HOME/registry/entry" "$XDG_CACHE_HOME/other-tool"; do cat "$f" 2>/dev/null || echo MISSING; done`
	// The project's next session finds what it planted: a plant affects its own later
	// sessions, as one in its own files would.
	if out, _ := w.in(a, look, "run"); strings.Count(out, "planted") != 4 {
		t.Fatalf("the project's next session does not find its caches:\n%s", out)
	}
	// Another project's session sees none of it, by the variables or by the path outside.
	store := filepath.Join(w.state, "caches")
	if out, _ := w.in(b, look+`; ls `+store+` 2>&1; ls `+w.state+` 2>&1`, "run"); strings.Contains(out, "planted") || strings.Count(out, "MISSING") != 4 ||
		!strings.Contains(out, "No such file") {
		t.Fatalf("another project's session reached the first one's caches:\n%s", out)
	}
	// Started cold, the project's session finds none of them either, and writes none.
	if out, _ := w.in(a, look+`; echo fresh > "$XDG_CACHE_HOME/fresh"`, "run", "--fresh-caches"); strings.Contains(out, "planted") {
		t.Fatalf("a session started with --fresh-caches found the kept caches:\n%s", out)
	}
	if out, _ := w.in(a, `cat "$XDG_CACHE_HOME/fresh" 2>/dev/null || echo MISSING`, "run"); !strings.Contains(out, "MISSING") {
		t.Fatalf("a session started with --fresh-caches wrote the kept caches:\n%s", out)
	}
	// The same folders are the same project; one more is another.
	if out, _ := w.in(a, look, "run", "--rw", a, "--rw", b); strings.Contains(out, "planted") {
		t.Fatalf("the session of two folders found the caches of one of them:\n%s", out)
	}
	// Sessions that left nothing in their caches (the other project's) keep no folder.
	list, errs, code := w.run("caches", "list")
	if code != 0 || !strings.Contains(list, a+"\n") || strings.Contains(list, b) {
		t.Fatalf("caches list: exit %d\n%s%s", code, list, errs)
	}
	// Cleared, the project starts cold.
	if out, errs, code := w.run("caches", "clear"); code != 0 || !strings.Contains(out, "Cleared the caches of "+a) {
		t.Fatalf("caches clear: exit %d\n%s%s", code, out, errs)
	}
	if out, _ := w.in(a, look, "run"); strings.Contains(out, "planted") {
		t.Fatalf("the cleared caches are still there:\n%s", out)
	}
	if out, errs, code := w.run("caches", "clear"); code != 0 || !strings.Contains(out, "No caches are kept") {
		t.Fatalf("caches clear of a project with none: exit %d\n%s%s", code, out, errs)
	}
}

// A command that corrupts a cache entry (here, the build outputs of Go's cache) harms only
// its own project's later sessions: another project's build, and the person's, never see it.
func TestCorruptCacheStaysInItsProject(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	a, b := w.project, w.folder("other")
	corrupt := `set -e; mkdir -p "$GOCACHE/00"; for i in 1 2 3; do printf 'corrupt' > "$GOCACHE/00/$i-d"; done; ls "$GOCACHE/00" | wc -l`
	if out, code := w.in(a, corrupt, "run"); code != 0 || strings.TrimSpace(out) != "3" {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if out, _ := w.in(b, `ls "$GOCACHE/00" 2>/dev/null | wc -l`, "run"); strings.TrimSpace(out) != "0" {
		t.Fatalf("another project's Go build cache holds the corrupt entries:\n%s", out)
	}
	if out, _ := w.in(a, `ls "$GOCACHE/00" | wc -l`, "run"); strings.TrimSpace(out) != "3" {
		t.Fatalf("the project's own later session does not find them:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(w.home, ".cache", "go-build", "00")); err == nil {
		t.Fatal("the person's own Go build cache was written")
	}
}

// The kept caches stay within sandbox_max_caches once sessions end: the least recently
// used project goes first, and a project that alone takes more keeps nothing.
func TestCachesStayWithinTheBound(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	w.settings("sandbox_max_caches = \"1MiB\"\n")
	a, b := w.project, w.folder("other")
	fill := func(dir string, kib int) {
		w.t.Helper()
		if out, code := w.in(dir, fmt.Sprintf(`mkdir -p "$XDG_CACHE_HOME" && head -c %d /dev/urandom > "$XDG_CACHE_HOME/blob"`, kib<<10), "run"); code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
	}
	kept := func() (total int64, folders []string) {
		des, _ := os.ReadDir(filepath.Join(w.state, "caches"))
		for _, de := range des {
			if !de.IsDir() || strings.HasPrefix(de.Name(), ".") {
				continue
			}
			dir := filepath.Join(w.state, "caches", de.Name(), "tools")
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
					total += fi.Size()
				}
				return nil
			})
			b, _ := os.ReadFile(filepath.Join(w.state, "caches", de.Name(), "project.json"))
			folders = append(folders, string(b))
		}
		return total, folders
	}
	fill(a, 600)
	if total, _ := kept(); total < 600<<10 {
		t.Fatalf("the first project's caches were not kept: %d bytes", total)
	}
	time.Sleep(10 * time.Millisecond)
	fill(b, 600)
	total, folders := kept()
	if total > 1<<20 || len(folders) != 1 || !strings.Contains(folders[0], b) {
		t.Fatalf("%d bytes kept past a bound of 1 MiB, or not the most recent project's: %v", total, folders)
	}
	fill(a, 1500)
	if total, folders := kept(); total > 1<<20 {
		t.Fatalf("%d bytes kept past a bound of 1 MiB: %v", total, folders)
	}
	fill(b, 100)
	if total, _ := kept(); total == 0 {
		t.Fatal("nothing kept under the bound")
	}
	// Set to keep none, the next session's end lets what was kept go.
	w.settings("sandbox_max_caches = \"0\"\n")
	fill(a, 10)
	if total, folders := kept(); total != 0 || len(folders) != 0 {
		t.Fatalf("with sandbox_max_caches = \"0\", %d bytes kept: %v", total, folders)
	}
}

// goModule is a module in the layout of Go's download cache (a module proxy's): its zip,
// go.mod and info, and the go.sum lines that check them, as dirhash's h1 makes them.
func goModule(t *testing.T, dl, path, version string, files map[string]string) (goSum string) {
	t.Helper()
	dir := filepath.Join(dl, path, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h1 := func(files map[string]string) string {
		names := slices.Sorted(maps.Keys(files))
		h := sha256.New()
		for _, n := range names {
			fmt.Fprintf(h, "%x  %s\n", sha256.Sum256([]byte(files[n])), n)
		}
		return "h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil))
	}
	prefix := path + "@" + version + "/"
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	inZip := map[string]string{}
	for n, body := range files {
		f, err := zw.Create(prefix + n)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(body))
		inZip[prefix+n] = body
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{
		version + ".zip":  zb.Bytes(),
		version + ".mod":  []byte(files["go.mod"]),
		version + ".info": []byte(`{"Version":"` + version + `","Time":"2024-01-02T03:04:05Z"}`),
		"list":            []byte(version + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf("%s %s %s\n%s %s/go.mod %s\n", path, version, h1(inZip), path, version, h1(map[string]string{"go.mod": files["go.mod"]}))
}

// snapshot is every file under dir with its modification time and contents.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, _ := d.Info()
		b, _ := os.ReadFile(p)
		out[p] = fmt.Sprintf("%v %v %x", fi.Mode(), fi.ModTime().UnixNano(), sha256.Sum256(b))
		return nil
	})
	return out
}

// The person's Go module downloads serve a session's go with no network, read-only: after
// the session, every file there has the mtime and contents it had, and none was added. The
// module then lies in the project's kept caches, whose next session needs neither.
func TestPersonsGoDownloadsAreReadNeverWritten(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed here")
	}
	w := newWorld(t)
	requireSandbox(t, w)
	dl := filepath.Join(w.home, "go", "pkg", "mod", "cache", "download")
	sum := goModule(t, dl, "example.com/dep", "v1.0.0", map[string]string{
		"go.mod": "module example.com/dep\n\ngo 1.21\n",
		"dep.go": "package dep\n\n// Says is what the module says.\nconst Says = \"from the person's download cache\"\n",
	})
	before := snapshot(t, dl)
	os.WriteFile(filepath.Join(w.project, "go.mod"), []byte("module example.com/app\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n"), 0o644)
	os.WriteFile(filepath.Join(w.project, "go.sum"), []byte(sum), 0o644)
	// No site is allowed: the module can come only from the person's cache.
	get := `go mod download -json example.com/dep 2>&1 && go list -f '{{.Dir}}' example.com/dep && echo GOT`
	out, code := w.in(w.project, get+`; dl=${GOPROXY#file://}; dl=${dl%%,*}; touch "$dl"/x 2>&1; rm "$dl"/example.com/dep/@v/list 2>&1; echo "$GOPROXY"`, "run")
	if code != 0 || !strings.Contains(out, "GOT") || !strings.Contains(out, "file://") {
		t.Fatalf("go mod download through the person's cache: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "Read-only file system") {
		t.Fatalf("the person's download cache was not read-only inside:\n%s", out)
	}
	if after := snapshot(t, dl); !maps.Equal(before, after) {
		t.Fatalf("the person's download cache changed:\nbefore %v\nafter  %v", before, after)
	}
	// The project's next session has the module in its own caches: it needs the person's
	// no more, nor the network.
	w.settings("sandbox_host_caches = \"off\"\n")
	if out, code := w.in(w.project, get+`; echo "GOPROXY=$GOPROXY"`, "run"); code != 0 || !strings.Contains(out, "GOT") || strings.Contains(out, "file://") {
		t.Fatalf("the project's next session, without the person's cache: exit %d\n%s", code, out)
	}
	// Another project, without the person's cache, has neither.
	other := w.folder("other")
	os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n"), 0o644)
	os.WriteFile(filepath.Join(other, "go.sum"), []byte(sum), 0o644)
	if out, _ := w.in(other, get, "run"); strings.Contains(out, "GOT") {
		t.Fatalf("another project's session got the module from the first one's caches:\n%s", out)
	}
}

// The daemon's sessions keep a project's caches as run's do (a direct session, which has no
// wall, reaches them through a link in its private tmp), and --fresh-caches reaches the
// daemon through its local API.
func TestDaemonSessionsKeepCaches(t *testing.T) {
	w := newWorld(t)
	_, stop := w.daemon() // sessions without a provider named are direct: no wall is needed
	t.Cleanup(stop)
	session := func(flags ...string) string {
		id, errs, code := w.run(append([]string{"session", "start", "--rw", w.project}, flags...)...)
		if code != 0 {
			t.Fatalf("session start: %s", errs)
		}
		id = strings.TrimSpace(id)
		return id
	}
	call := func(id, script string) string {
		out, errs, _ := w.run("session", "exec", id, script)
		return out + errs
	}
	first := session()
	if out := call(first, `echo kept > "$XDG_CACHE_HOME/mark" && cat "$XDG_CACHE_HOME/mark"`); !strings.Contains(out, "kept") {
		t.Fatalf("writing the caches: %s", out)
	}
	w.run("session", "end", first)
	second := session()
	defer w.run("session", "end", second)
	if out := call(second, `cat "$XDG_CACHE_HOME/mark" 2>&1`); !strings.Contains(out, "kept") {
		t.Fatalf("the project's second session does not find its caches: %s", out)
	}
	cold := session("--fresh-caches")
	defer w.run("session", "end", cold)
	if out := call(cold, `cat "$XDG_CACHE_HOME/mark" 2>&1`); strings.Contains(out, "kept") {
		t.Fatalf("a session started with --fresh-caches found the kept caches: %s", out)
	}
}

// A project's kept caches are reached where they are, so the paths Go compiles modules from
// are the same in each of its sessions: the second compiles none of what the first did.
// (Under /tmp, which the private tmp stands in for inside, they are placed in the private
// tmp instead; the other tests' worlds are there.)
func TestModulesAreNotCompiledAgain(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed here")
	}
	w := newWorld(t)
	requireSandbox(t, w)
	w.homeOutsideTmp()
	w.state = filepath.Join(w.home, ".local", "state", "openworker")
	sum := goModule(t, filepath.Join(w.home, "go", "pkg", "mod", "cache", "download"), "example.com/dep", "v1.0.0", map[string]string{
		"go.mod": "module example.com/dep\n\ngo 1.21\n",
		"dep.go": "package dep\n\n// Answer is the answer.\nconst Answer = 42\n\n// Twice is twice x.\nfunc Twice(x int) int { return 2 * x }\n",
	})
	os.WriteFile(filepath.Join(w.project, "go.mod"), []byte("module example.com/app\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n"), 0o644)
	os.WriteFile(filepath.Join(w.project, "go.sum"), []byte(sum), 0o644)
	os.WriteFile(filepath.Join(w.project, "app.go"), []byte("package app\n\nimport \"example.com/dep\"\n\n// Four is four.\nvar Four = dep.Twice(2)\n"), 0o644)
	build := `echo "GOMODCACHE=$GOMODCACHE"; go build -x ./... 2>&1 | grep -c '/compile .* -p example.com/dep '`
	first, _ := w.in(w.project, build, "run")
	second, _ := w.in(w.project, build, "run")
	kept := filepath.Join(w.state, "caches")
	for _, out := range []string{first, second} {
		if !strings.Contains(out, "GOMODCACHE="+kept+"/") {
			t.Fatalf("GOMODCACHE is not in the project's kept caches (%s):\n%s", kept, out)
		}
	}
	if strings.SplitN(first, "\n", 2)[0] != strings.SplitN(second, "\n", 2)[0] {
		t.Fatalf("GOMODCACHE differs between the project's sessions:\n%s\n%s", first, second)
	}
	if !strings.HasSuffix(strings.TrimSpace(first), "\n1") || !strings.HasSuffix(strings.TrimSpace(second), "\n0") {
		t.Fatalf("compiles of example.com/dep: first session\n%s\nsecond session\n%s\nwant 1, then 0", first, second)
	}
}
