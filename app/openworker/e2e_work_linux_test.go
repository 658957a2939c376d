package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// Real agent work behind the real wall: a person's git settings, servers a command starts on
// the sandbox's own loopback, test suites that open ports, process pools, local services the
// person allowed, and the proxy at both loopback addresses. Each runs `openworker run` as a
// person would.

// need skips the test when a program it drives is not installed.
func need(t testing.TB, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed", p)
		}
	}
}

// goProgram builds a small Go program from src into the project folder, where the sandbox
// can run it, and returns its path.
func goProgram(t testing.TB, w *world, name, src string) string {
	t.Helper()
	need(t, "go")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(w.project, name)
	build := exec.Command("go", "build", "-o", bin, "main.go")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return bin
}

// fetchSrc is a Go program that GETs its argument with Go's default client (which never
// uses a proxy for a loopback address) and prints the body, or the error and exits 1.
const fetchSrc = `package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	resp, err := http.Get(os.Args[1])
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s", resp.StatusCode, b)
}
`

func TestRunGitUsesThePersonsSettings(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	need(t, "git")
	gitconfig := filepath.Join(w.home, ".gitconfig")
	settings := "[user]\n\tname = Pat Person\n\temail = pat@example.invalid\n[alias]\n\tlast = log -1 --format=%an/%ae/%s\n" +
		"[include]\n\tpath = ~/.gitconfig.private\n"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(gitconfig, []byte(settings), 0o644))
	must(os.WriteFile(filepath.Join(w.home, ".gitconfig.private"), []byte("[core]\n\teditor = planted-editor\n"), 0o600))
	xdg := filepath.Join(w.home, ".config", "git")
	must(os.MkdirAll(xdg, 0o755))
	must(os.WriteFile(filepath.Join(xdg, "ignore"), []byte("*.xdgignored\n"), 0o644))
	must(os.WriteFile(filepath.Join(xdg, "credentials"), []byte("https://pat:planted@example.invalid\n"), 0o600))
	out, errs, code := w.run("run", "--", "sh", "-c", `git init -q repo && cd repo && echo a > a.txt && touch b.xdgignored &&
git add -A && git commit -qm first && git last && echo && git status --porcelain --ignored
git config --global user.name Mallory; echo "config-write=$?"
echo x >> "$HOME/.gitconfig"; echo "append=$?"
cat "$HOME/.config/git/credentials"; echo "credentials=$?"
git config core.editor; echo "editor=$?"`)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	if !strings.Contains(out, "Pat Person/pat@example.invalid/first") {
		t.Errorf("git inside did not commit as the person of ~/.gitconfig (and with its alias)")
	}
	if !strings.Contains(out, "!! b.xdgignored") {
		t.Errorf("git inside did not read ~/.config/git/ignore")
	}
	for _, want := range []string{"config-write=", "append=", "credentials=", "editor="} {
		if strings.Contains(out, want+"0") {
			t.Errorf("%s succeeded inside; want it refused", strings.TrimSuffix(want, "="))
		}
	}
	if strings.Contains(out, "planted") {
		t.Errorf("a file outside git's settings was readable inside")
	}
	if b, err := os.ReadFile(gitconfig); err != nil || string(b) != settings {
		t.Errorf("~/.gitconfig changed on the host: %q %v", b, err)
	}
	// The include is named once, with the folder it lies in and why it is not there.
	if n := strings.Count(errs, ".gitconfig.private"); n != 1 || !strings.Contains(errs, "not readable inside") {
		t.Errorf("want one line saying ~/.gitconfig.private is not readable inside, got %d in:\n%s", n, errs)
	}
}

func TestRunServerOnTheSandboxesOwnLoopback(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	need(t, "python3", "curl")
	fetch := goProgram(t, w, "fetch", fetchSrc)
	if err := os.WriteFile(filepath.Join(w.project, "page.txt"), []byte("served inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	const port = 18765
	out, errs, code := w.run("run", "--", "sh", "-c", fmt.Sprintf(`python3 -m http.server %d --bind 127.0.0.1 >server.log 2>&1 &
for i in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:%[1]d/ && break; sleep 0.05; done
curl -sS http://localhost:%[1]d/page.txt; echo " curl=$?"
%s http://localhost:%[1]d/page.txt; echo " go=$?"
cat server.log; kill $!`, port, fetch))
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	for _, want := range []string{"served inside curl=0", "200 served inside go=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q", want)
		}
	}
}

func TestRunGoTestWithHTTPTest(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	need(t, "go")
	goVersion := strings.TrimPrefix(runtime.Version(), "go")
	if m := regexp.MustCompile(`^\d+\.\d+`).FindString(goVersion); m != "" {
		goVersion = m
	}
	pkg := filepath.Join(w.project, "served")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod": "module example.invalid/served\n\ngo " + goVersion + "\n",
		"served_test.go": `package served

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestServed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pong") }))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "pong" {
		t.Fatalf("got %q", b)
	}
}
`,
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, errs, code := w.run("run", "--rw", pkg, "--", "sh", "-c", "cd "+pkg+" && go env GOROOT GOCACHE && GOTOOLCHAIN=local GOFLAGS=-mod=mod go test -count=1 .")
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	if code != 0 || !strings.Contains(out, "ok  \texample.invalid/served") {
		t.Fatalf("go test of an httptest package failed inside")
	}
	if !strings.Contains(out, "/tmp/openworker-") {
		t.Errorf("GOCACHE is not in the private tmp")
	}
}

func TestRunPythonProcessPool(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	need(t, "python3")
	marker := fmt.Sprintf("/dev/shm/openworker-host-%d", os.Getpid())
	if err := os.WriteFile(marker, []byte("host"), 0o600); err == nil {
		defer os.Remove(marker)
	}
	out, errs, code := w.run("run", "--", "sh", "-c",
		`python3 -c 'import multiprocessing as m; print(m.Pool(2).map(abs, [-1, -2]))' && ls /dev/shm && df -k /dev/shm | tail -1`)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	if code != 0 || !strings.Contains(out, "[1, 2]") {
		t.Fatalf("a process pool failed inside")
	}
	if strings.Contains(out, filepath.Base(marker)) {
		t.Errorf("the host's /dev/shm is visible inside")
	}
	// The last line of df: its size in KiB is bounded.
	if f := strings.Fields(strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])); len(f) < 2 {
		t.Errorf("no size for /dev/shm")
	} else if kb, err := strconv.Atoi(f[1]); err != nil || kb > 1<<20 {
		t.Errorf("/dev/shm is %q KiB, want a bounded tmpfs", f[1])
	}
}

func TestRunReachesAnAllowedHostLoopbackPortDirectly(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	need(t, "curl")
	origin := httpOrigin(t, "hello from the host")
	fetch := goProgram(t, w, "fetch", fetchSrc)
	script := fmt.Sprintf(`curl -sS --noproxy '*' --max-time 5 http://%[1]s/; echo " curl=$?"
%[2]s http://%[1]s/; echo " go=$?"`, origin, fetch)
	out, errs, code := w.run("run", "--allow", origin, "--", "sh", "-c", script)
	t.Logf("allowed: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	for _, want := range []string{"hello from the host curl=0", "200 hello from the host go=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("allowed: want %q", want)
		}
	}
	out, errs, code = w.run("run", "--", "sh", "-c", script)
	t.Logf("not allowed: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	if strings.Contains(out, "hello from the host") || strings.Contains(out, "curl=0") || strings.Contains(out, "go=0") {
		t.Errorf("not allowed: the host's loopback port was reached")
	}
	if !strings.Contains(out, "curl=7") || !strings.Contains(out, "connection refused") {
		t.Errorf("not allowed: want the connection refused inside")
	}
}

func TestRunProxyAnswersAtBothLoopbacks(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	need(t, "curl")
	origin := httpOrigin(t, "through the proxy")
	out, errs, code := w.run("run", "--allow", origin, "--", "sh", "-c", `port=${HTTPS_PROXY##*:}
curl -sS -x "$(echo "$HTTPS_PROXY" | sed 's/127.0.0.1/[::1]/')" http://`+origin+`/; echo " v6=$?"
curl -sS -x "$HTTPS_PROXY" http://`+origin+`/; echo " v4=$?"`)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	for _, want := range []string{"through the proxy v6=0", "through the proxy v4=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q", want)
		}
	}
}

func TestRunEnvironmentForLoopbackAndNode(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	out, errs, code := w.run("run", "--", "env")
	if code != 0 {
		t.Fatalf("env: %d %s", code, errs)
	}
	for _, want := range []string{"\nNO_PROXY=localhost,127.0.0.1,::1\n", "\nno_proxy=localhost,127.0.0.1,::1\n", "\nNODE_USE_ENV_PROXY=1\n"} {
		if !strings.Contains("\n"+out, want) {
			t.Errorf("want %q in:\n%s", strings.TrimSpace(want), out)
		}
	}
}

// nodeHonoursEnvProxy says whether node's fetch uses the proxy variables with
// NODE_USE_ENV_PROXY=1: Node 22.21 and later 22s, and 24.5 and later.
func nodeHonoursEnvProxy(t *testing.T) (string, bool) {
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return "", false
	}
	v := strings.TrimSpace(string(out))
	var major, minor int
	fmt.Sscanf(v, "v%d.%d", &major, &minor)
	return v, major == 22 && minor >= 21 || major == 24 && minor >= 5 || major >= 25
}

func TestRunNodeFetchThroughTheProxy(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	need(t, "node")
	if v, ok := nodeHonoursEnvProxy(t); !ok {
		t.Skipf("node %s ignores NODE_USE_ENV_PROXY (Node 22.21+ or 24.5+ honour it); its fetch cannot use the proxy", v)
	}
	origin := httpOrigin(t, "fetched by node")
	out, errs, code := w.run("run", "--allow", origin, "--", "node", "-e",
		`fetch("http://`+origin+`/").then(r => r.text()).then(t => console.log(t), e => { console.log("ERR", e.cause || e); process.exit(1) })`)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	if code != 0 || !strings.Contains(out, "fetched by node") {
		t.Fatalf("node's fetch did not reach the allowed origin")
	}
}

func TestRunSaysWhenAProgramTriedToConnectDirectly(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	need(t, "curl")
	// 192.0.2.1 is a documentation address. With the relay (the sandbox's network then
	// routes everything to it), the relay refuses the connection before any is made, and
	// the site is named after the command as the proxy's refusals are. Without it, the
	// sandbox's network has no route to the address and no packet is sent.
	status, _, _ := w.run("machine", "sandbox", "status")
	relayed := strings.Contains(status, "relay: every TCP connection")
	script := `[ "$(wc -l < /proc/net/route)" -le 1 ] || { echo "a route exists: not the sandbox's own network"; exit 99; }
curl -sS --noproxy '*' --max-time 3 http://192.0.2.1/`
	if relayed {
		script = `curl -sSf --noproxy '*' --max-time 3 http://192.0.2.1/`
	}
	out, errs, code := w.run("run", "--", "sh", "-c", script)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	if code == 99 || code == 0 {
		t.Fatalf("the direct connection was not stopped by the sandbox's network")
	}
	if relayed {
		if !strings.Contains(errs, "openworker: blocked 192.0.2.1:80") || strings.Contains(errs, "tried to connect directly") {
			t.Errorf("want the relay's refusal named after the command, and no line about a direct attempt")
		}
		return
	}
	if n := strings.Count(errs, "tried to connect directly"); n != 1 || !strings.Contains(errs, "only the proxy") {
		t.Errorf("want one line saying a program tried to connect directly and only the proxy is reachable, got %d", n)
	}
	_, errs, _ = w.run("run", "--", "sh", "-c", "exit 3")
	if strings.Contains(errs, "tried to connect directly") {
		t.Errorf("a command that tried nothing was reported:\n%s", errs)
	}
}

func TestRunSaysWhichToolchainAMissingCommandNeeds(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	shims := filepath.Join(w.home, ".pyenv", "shims")
	if err := os.MkdirAll(shims, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"onlyinpyenv", "sh"} {
		if err := os.WriteFile(filepath.Join(shims, name), []byte("#!/bin/sh\necho from-pyenv\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, kv := range w.env {
		if strings.HasPrefix(kv, "PATH=") {
			w.env[i] = "PATH=" + shims + ":" + strings.TrimPrefix(kv, "PATH=")
		}
	}
	out, errs, code := w.run("run", "--", "sh", "-c", `echo "PATH=$PATH"; onlyinpyenv`)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	if code != 127 {
		t.Errorf("exit %d, want 127 (command not found)", code)
	}
	if strings.Contains(out, shims) {
		t.Errorf("the sandbox's PATH names %s, which does not exist inside", shims)
	}
	if n := strings.Count(errs, "sandbox_toolchains"); n != 1 || !strings.Contains(errs, "toolchain .pyenv") ||
		!strings.Contains(errs, "onlyinpyenv was not found inside the sandbox; outside it, PATH finds "+filepath.Join(shims, "onlyinpyenv")) {
		t.Errorf("want one line naming onlyinpyenv, the .pyenv toolchain and sandbox_toolchains, got %d", n)
	}
	// On Linux the line names the setting and where the file is, not a Mac's screen.
	if strings.Contains(errs, "Settings ▸") || !strings.Contains(errs, "openworker config path") {
		t.Errorf("the toolchain line on Linux sends the person to a Mac's screen, or not to the settings file: %q", errs)
	}
	// A command found inside, but outside found first in the toolchain: a different program
	// runs, and the note says so.
	out, errs, code = w.run("run", "--", "sh", "-c", "echo inside")
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	if code != 0 || !strings.Contains(out, "inside") {
		t.Fatalf("sh did not run inside")
	}
	if n := strings.Count(errs, "sandbox_toolchains"); n != 1 || !strings.Contains(errs, filepath.Join(shims, "sh")) {
		t.Errorf("want one line saying outside PATH finds %s first, got %d", filepath.Join(shims, "sh"), n)
	}
}

// A host loopback port allowed in the settings is forwarded into a daemon's sessions; taking
// it off the list closes the forward (inside, the port then refuses), putting it back opens
// one again without a restart, and a port a server inside listens on already stays that
// server's: the forward is refused, and the next command says so.
func TestServeForwards(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	need(t, "curl", "python3")
	if os.Geteuid() != 0 {
		t.Skip("a forward made in a running sandbox needs a root core; an ordinary user's is made with the next wall")
	}
	origin := httpOrigin(t, "hello from the host")
	cfgDir := filepath.Join(w.home, ".config", "openworker")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(cfgDir, "config.toml")
	write := func(hosts string) {
		t.Helper()
		text := "sandbox_provider = \"linux\"\nsandbox_network_hosts = [" + hosts + "]\n"
		if err := os.WriteFile(cfg+".new", []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(cfg+".new", cfg); err != nil {
			t.Fatal(err)
		}
	}
	write(`"` + origin + `", "example.com:443"`)
	_, stop := w.daemon()
	defer stop()
	id, errs, code := w.run("session", "start", "--rw", w.project)
	id = strings.TrimSpace(id)
	if code != 0 || id == "" {
		t.Fatalf("session start: %d %s", code, errs)
	}
	defer w.run("session", "end", id)
	curl := "curl -sS --noproxy '*' --max-time 5 http://" + origin + "/"
	// until runs curl until ok says it is done, and returns the last result.
	until := func(ok func(code int, out, errs string) bool) string {
		t.Helper()
		var last, said string
		tstest.WaitFor(t, 20*time.Second, func() error {
			out, errs, code := w.run("session", "exec", id, curl)
			last = fmt.Sprintf("exit %d %q %s", code, out, errs)
			if ok(code, out, errs) {
				return nil
			}
			for _, l := range strings.SplitAfter(errs, "\n") {
				if strings.HasPrefix(l, "openworker:") {
					said += l
				}
			}
			return fmt.Errorf("gave up; last: %s\nthe session said:\n%s", last, said)
		})
		return last
	}
	out, errs, code := w.run("session", "exec", id, curl)
	if code != 0 || out != "hello from the host" {
		t.Fatalf("allowed in the settings: exit %d %q %s", code, out, errs)
	}
	write(`"example.com:443"`)
	until(func(code int, _, errs string) bool { return code == 7 && strings.Contains(errs, "Couldn't connect") })
	write(`"` + origin + `", "example.com:443"`)
	until(func(code int, out, _ string) bool { return code == 0 && out == "hello from the host" })

	// A server inside on a port, then that port allowed on the host.
	const port = 18791
	if _, errs, code := w.run("session", "exec", id, "--", "sh", "-c",
		fmt.Sprintf("setsid python3 -m http.server %d --bind 127.0.0.1 >/dev/null 2>&1 < /dev/null & for i in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:%d/ && exit 0; sleep 0.05; done; exit 1", port, port)); code != 0 {
		t.Fatalf("the server inside did not start: %s", errs)
	}
	write(fmt.Sprintf(`"%s", "127.0.0.1:%d"`, origin, port))
	// The bound the reloads above are given.
	tstest.WaitFor(t, 20*time.Second, func() error {
		out, errs, code = w.run("session", "exec", id, "--", "sh", "-c", fmt.Sprintf("curl -sS -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/", port))
		if !strings.Contains(errs, fmt.Sprintf("a server inside the sandbox listens on port %d", port)) {
			return fmt.Errorf("no line said the forward of port %d was refused: exit %d %q %s", port, code, out, errs)
		}
		return nil
	})
	if code != 0 || out != "200" {
		t.Errorf("the server inside lost its port: exit %d %q %s", code, out, errs)
	}
}
