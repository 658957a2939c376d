package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openworker/openworker/core/caches"
	"github.com/openworker/openworker/core/wallcheck"
)

// Side-by-side figures for the tools' caches a project keeps between its sessions:
//
//	go test -run '^$' -bench Caches -benchtime 5x -timeout 60m ./app/openworker/
//
// Each runs a command in a new session of a project whose earlier session kept its caches,
// beside the same command outside, where this machine's own caches are warm: median-ms is
// the session's, other-median-ms outside's, x-other their ratio in pairs. first-session-ms
// is the project's first session, cold.

// cacheBench is a state folder and settings of their own (default settings) for the
// sessions of a benchmark, with the machine's own home: outside, its caches are the warm
// ones, and inside, its Go module downloads are read.
type cacheBench struct {
	b     *testing.B
	root  string
	env   []string
	state string
}

func newCacheBench(b *testing.B) *cacheBench {
	root, err := os.MkdirTemp("/var/tmp", "openworker-bench-caches-")
	if err != nil {
		b.Skipf("no /var/tmp: %v", err)
	}
	b.Cleanup(func() { removeTree(root) })
	c := &cacheBench{b: b, root: root, state: filepath.Join(root, "state")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_STATE_HOME=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") && !strings.HasPrefix(kv, "OPENWORKER_CONFIG=") {
			c.env = append(c.env, kv)
		}
	}
	c.env = append(c.env, "XDG_STATE_HOME="+c.state, "XDG_CONFIG_HOME="+filepath.Join(root, "config"))
	return c
}

// removeTree removes what a benchmark made, Go's read-only module folders included.
func removeTree(dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
}

// project makes a folder of the benchmark's with files.
func (c *cacheBench) project(name string, files map[string]string) string {
	dir := filepath.Join(c.root, name)
	for f, body := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			c.b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			c.b.Fatal(err)
		}
	}
	return dir
}

// inside runs argv in a new session of the project dir (run's flags before --).
func (c *cacheBench) inside(dir string, flags []string, argv ...string) func() error {
	return func() error {
		cmd := exec.Command(shipped(), append(append(append([]string{"run"}, flags...), "--"), argv...)...)
		cmd.Env, cmd.Dir = c.env, dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("openworker run %v: %v\n%s", argv, err, out)
		}
		return nil
	}
}

// outside runs argv in dir as this machine's user, in a cgroup of its own with a sandbox's
// CPU weight where this process can make one (root): a sandbox is a cgroup of its own, and
// on a machine other programs keep busy that weight alone would make it the faster.
func outside(b *testing.B, dir string, argv ...string) func() error {
	if cg := sandboxLikeCgroup(b); cg != "" {
		argv = append([]string{"sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg}, argv...)
	}
	return func() error {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %v\n%s", argv, err, out)
		}
		return nil
	}
}

// sandboxLikeCgroup makes a CPU cgroup with a sandbox's default weight (100 for each CPU)
// for the benchmark's outside commands, or returns "" where it cannot.
func sandboxLikeCgroup(b *testing.B) string {
	weight := 100 * runtime.NumCPU()
	for _, c := range []struct{ dir, file, value string }{
		{"/sys/fs/cgroup/cpu", "cpu.shares", strconv.Itoa(weight * 1024 / 100)},
		{"/sys/fs/cgroup", "cpu.weight", strconv.Itoa(weight)},
	} {
		dir := filepath.Join(c.dir, fmt.Sprintf("openworker-bench-outside-%d", os.Getpid()))
		if os.Mkdir(dir, 0o755) != nil && !exists(dir) {
			continue
		}
		if os.WriteFile(filepath.Join(dir, c.file), []byte(c.value), 0) != nil {
			os.Remove(dir)
			continue
		}
		b.Cleanup(func() { os.Remove(dir) })
		return dir
	}
	b.Log("outside runs in this process's cgroup: no cgroup of a sandbox's weight can be made here")
	return ""
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// once times fn once.
func once(b *testing.B, fn func() error) time.Duration {
	start := time.Now()
	if err := fn(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// sideBySide warms both sides (the session's first run is the project's first session,
// reported cold), then times them in pairs.
func sideBySide(b *testing.B, inside, outside func() error) {
	once(b, outside)
	cold := once(b, inside)
	pairedRatio(b, 0, inside, outside)
	b.ReportMetric(ms(cold), "first-session-ms") // after pairedRatio, whose ResetTimer drops metrics
}

func requireTool(b *testing.B, name string) {
	if _, err := exec.LookPath(name); err != nil {
		b.Skipf("%s is not installed here", name)
	}
}

// smallModule is a module of two files whose test imports net/http/httptest.
var smallModule = map[string]string{
	"go.mod":   "module example.com/small\n\ngo 1.21\n",
	"small.go": "package small\n\nimport \"net/http\"\n\n// Hello answers hello.\nfunc Hello(w http.ResponseWriter, r *http.Request) { w.Write([]byte(\"hello\")) }\n",
	"small_test.go": `package small

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHello(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(Hello))
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	if string(b) != "hello" {
		t.Fatalf("got %q", b)
	}
}
`,
}

// BenchmarkCachesGoTestSmall is go test ./... of a small module (goal: a new session within
// 1.2 times outside).
func BenchmarkCachesGoTestSmall(b *testing.B) {
	requireTool(b, "go")
	for _, args := range [][]string{{"go", "test", "./..."}, {"go", "test", "-count=1", "./..."}} {
		b.Run(strings.Join(args[1:], "_"), func(b *testing.B) {
			c := newCacheBench(b)
			dir := c.project("small", smallModule)
			sideBySide(b, c.inside(dir, nil, args...), outside(b, dir, args...))
		})
	}
}

// BenchmarkCachesGoTestThisProject is go test of this project, compiled and linked but not
// run (-exec true: its tests need root and walls of their own), and go build ./....
func BenchmarkCachesGoTestThisProject(b *testing.B) {
	requireTool(b, "go")
	for _, args := range [][]string{{"go", "build", "./..."}, {"go", "test", "-count=1", "-exec", "true", "./..."}} {
		b.Run(strings.Join(args[1:], "_"), func(b *testing.B) {
			// A copy and a state folder of each run's own, so that the first session is cold.
			c := newCacheBench(b)
			dir := filepath.Join(c.root, "openworker")
			if err := copyModule("../..", dir); err != nil {
				b.Fatal(err)
			}
			sideBySide(b, c.inside(dir, nil, args...), outside(b, dir, args...))
		})
	}
}

// copyModule copies the module at src (its Go files, go.mod, go.sum and testdata) to dst,
// leaving out what git keeps and what was built.
func copyModule(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() && (d.Name() == ".git" || rel == "build") {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), body, 0o644)
	})
}

// BenchmarkCachesNpmCi is npm ci of a project with a lockfile, from a registry on loopback:
// the project's first session and its second, which downloads nothing.
func BenchmarkCachesNpmCi(b *testing.B) {
	requireTool(b, "npm")
	c := newCacheBench(b)
	reg, err := wallcheck.ServeRegistry()
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close()
	port := strconv.Itoa(reg.Port)
	name := wallcheck.RegistryPackage
	dir := c.project("web", map[string]string{
		"package.json": `{"name":"web","version":"1.0.0","dependencies":{"` + name + `":"1.0.0"}}`,
		"package-lock.json": `{"name":"web","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{` +
			`"":{"name":"web","version":"1.0.0","dependencies":{"` + name + `":"1.0.0"}},` +
			`"node_modules/` + name + `":{"version":"1.0.0","resolved":"` + reg.Tarball + `","integrity":"` + reg.Integrity + `"}}}`,
		".npmrc": "registry=http://127.0.0.1:" + port + "/\naudit=false\nfund=false\nupdate-notifier=false\n",
	})
	npmCi := c.inside(dir, []string{"--allow", "127.0.0.1:" + port}, "npm", "ci")
	secondSessions(b, c, dir, npmCi, &reg.Requests, "session-requests")
}

// secondSessions times a project's first session (its caches cleared before) and its
// second, b.N times, and reports what the server counted in the second ones, as unit.
func secondSessions(b *testing.B, c *cacheBench, dir string, run func() error, requests *atomic.Int32, unit string) {
	roots, err := caches.Roots([]string{dir})
	if err != nil {
		b.Fatal(err)
	}
	store := caches.NewStore(filepath.Join(c.state, "openworker"))
	var first, second []time.Duration
	var inFirst, inSecond int32
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		store.Clear(caches.Key(roots))
		before := requests.Load()
		first = append(first, once(b, run))
		inFirst += requests.Load() - before
		before = requests.Load()
		second = append(second, once(b, run))
		inSecond += requests.Load() - before
	}
	b.ReportMetric(median(first), "first-session-ms")
	b.ReportMetric(median(second), "median-ms")
	b.ReportMetric(float64(inFirst)/float64(b.N), "first-"+unit)
	b.ReportMetric(float64(inSecond)/float64(b.N), "second-"+unit)
}

// BenchmarkCachesPipInstall is pip install -r of a requirement from an index on loopback:
// the project's first session and its second, which downloads no package.
func BenchmarkCachesPipInstall(b *testing.B) {
	requireTool(b, "python3")
	if exec.Command("python3", "-m", "pip", "--version").Run() != nil {
		b.Skip("python3 has no pip here")
	}
	c := newCacheBench(b)
	idx, err := serveIndex()
	if err != nil {
		b.Fatal(err)
	}
	defer idx.srv.Close()
	port := strconv.Itoa(idx.port)
	dir := c.project("py", map[string]string{"requirements.txt": "demo-pkg==1.0.0\n"})
	install := c.inside(dir, []string{"--allow", "127.0.0.1:" + port}, "sh", "-c",
		`python3 -m pip install --quiet --disable-pip-version-check --no-input --index-url http://127.0.0.1:`+port+`/simple/ --trusted-host 127.0.0.1 --target "$TMPDIR/site" -r requirements.txt && test -f "$TMPDIR/site/demo_pkg/__init__.py"`)
	// pip asks the index again at every install (max-age=0), and downloads no package it
	// has: it keeps what it fetched over plain HTTP only from a trusted host.
	secondSessions(b, c, dir, install, &idx.wheels, "session-downloads")
	b.ReportMetric(float64(idx.pages.Load())/float64(2*b.N), "index-pages-per-install")
}

// index is a Python package index on loopback (PEP 503) with one wheel, which says it may
// be kept, as PyPI's files do; it counts the wheel's downloads and the index's pages.
type index struct {
	port          int
	srv           *http.Server
	wheels, pages atomic.Int32
}

func serveIndex() (*index, error) {
	whl, err := demoWheel()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	x := &index{port: ln.Addr().(*net.TCPAddr).Port}
	const file = "demo_pkg-1.0.0-py3-none-any.whl"
	sum := sha256.Sum256(whl)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /simple/demo-pkg/", func(w http.ResponseWriter, _ *http.Request) {
		x.pages.Add(1)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/files/%s#sha256=%s">%s</a></body></html>`, file, hex.EncodeToString(sum[:]), file)
	})
	mux.HandleFunc("GET /files/"+file, func(w http.ResponseWriter, _ *http.Request) {
		x.wheels.Add(1)
		w.Header().Set("Cache-Control", "max-age=365000000, immutable, public")
		w.Header().Set("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT")
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(whl)
	})
	x.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go x.srv.Serve(ln)
	return x, nil
}

// demoWheel is a wheel of one module, demo_pkg, with its metadata and record.
func demoWheel() ([]byte, error) {
	files := []struct{ name, body string }{
		{"demo_pkg/__init__.py", "SAYS = 'installed from the index'\n"},
		{"demo_pkg-1.0.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0.0\n"},
		{"demo_pkg-1.0.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: openworker-bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	for _, f := range files {
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString("demo_pkg-1.0.0.dist-info/RECORD,,\n")
	files = append(files, struct{ name, body string }{"demo_pkg-1.0.0.dist-info/RECORD", record.String()})
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.Create(f.name)
		if err != nil {
			return nil, err
		}
		if _, err := io.WriteString(w, f.body); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// BenchmarkCachesStart is run -- true in a project whose caches keep 1 GiB (8,192 files of
// 128 KiB), beside the same with no caches kept and none of the person's read
// (sandbox_max_caches = "0", sandbox_host_caches = "off": what a session did before), and,
// with OPENWORKER_BENCH_BASE set to a build of openworker from before caches were kept,
// beside that: the goal is within 5 %.
func BenchmarkCachesStart(b *testing.B) {
	c := newCacheBench(b)
	dir := c.project("big", map[string]string{"README": "a project\n"})
	roots, err := caches.Roots([]string{dir})
	if err != nil {
		b.Fatal(err)
	}
	k, err := caches.NewStore(filepath.Join(c.state, "openworker")).Open(roots)
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 128<<10)
	for i := 0; i < 8192; i++ {
		d := filepath.Join(k.Dir, "go-build", fmt.Sprintf("%02x", i%256))
		os.MkdirAll(d, 0o700)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("%04x-d", i)), chunk, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	k.Close(1 << 40)
	if ps := caches.NewStore(filepath.Join(c.state, "openworker")).List(); len(ps) != 1 || ps[0].Size < 1<<30 {
		b.Fatalf("the project's caches were not kept at 1 GiB: %+v", ps)
	}
	// A state folder of its own: set to keep none, its sessions' ends let every kept cache
	// of theirs go.
	off := &cacheBench{b: b, root: c.root, state: filepath.Join(c.root, "off-state"),
		env: append(append([]string(nil), c.env...), "XDG_CONFIG_HOME="+filepath.Join(c.root, "off"), "XDG_STATE_HOME="+filepath.Join(c.root, "off-state"))}
	if err := os.MkdirAll(filepath.Join(c.root, "off", "openworker"), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.root, "off", "openworker", "config.toml"), []byte("sandbox_max_caches = \"0\"\nsandbox_host_caches = \"off\"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Run("caches-off", func(b *testing.B) { pairedRatio(b, 0, c.inside(dir, nil, "true"), off.inside(dir, nil, "true")) })
	b.Run("base", func(b *testing.B) {
		base := os.Getenv("OPENWORKER_BENCH_BASE")
		if base == "" {
			b.Skip("set OPENWORKER_BENCH_BASE to a build of openworker from before caches were kept to compare")
		}
		before := func() error {
			cmd := exec.Command(base, "run", "--", "true")
			cmd.Env, cmd.Dir = c.env, dir
			return cmd.Run()
		}
		pairedRatio(b, 0, c.inside(dir, nil, "true"), before)
	})
	if ps := caches.NewStore(filepath.Join(c.state, "openworker")).List(); len(ps) != 1 || ps[0].Size < 1<<30 {
		b.Fatalf("the project's 1 GiB of caches were not kept through the runs: %+v", ps)
	}
}
