package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// A server an agent starts in a Linux session, the person opens in a browser: its port is
// published on this machine's 127.0.0.1 while it listens, and nothing inside gains a way out.

// serverSrc is a Go program that serves HTTP at 127.0.0.1:PORT (its first argument) inside,
// answering every request with its second argument and how many requests it has had; it
// writes its PID to served.pid first.
const serverSrc = `package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
)

func main() {
	var n atomic.Int64
	os.WriteFile("served-"+os.Args[1]+".pid", []byte(strconv.Itoa(os.Getpid())), 0o644)
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %d", os.Args[2], n.Add(1))
	})
	if err := http.ListenAndServe("127.0.0.1:"+os.Args[1], nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

// hostFreePort is a port nothing on this machine's 127.0.0.1 listens at now.
func hostFreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// hostGet GETs url from this machine, outside every sandbox.
func hostGet(url string) (string, error) {
	c := http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// publishingSession starts a daemon whose sessions get the wall, and a session with flags.
func (w *world) publishingSession(flags ...string) string {
	w.t.Helper()
	w.settings("sandbox_provider = \"linux\"\n")
	_, stop := w.daemon()
	w.t.Cleanup(stop)
	return w.startSession(flags...)
}

func (w *world) startSession(flags ...string) string {
	w.t.Helper()
	id, errs, code := w.run(append([]string{"session", "start"}, flags...)...)
	if code != 0 {
		w.t.Fatalf("session start %v: %s", flags, errs)
	}
	id = strings.TrimSpace(id)
	w.t.Cleanup(func() { w.run("session", "end", id) })
	return id
}

// serveInside starts the server program in session id at port, in the background, and
// returns what openworker said after the command.
func (w *world) serveInside(id, server string, port int, word string) string {
	w.t.Helper()
	_, errs, code := w.run("session", "exec", id, fmt.Sprintf("%s %d %s >/dev/null 2>&1 &", server, port, word))
	if code != 0 {
		w.t.Fatalf("starting the server inside: %s", errs)
	}
	return errs
}

// With --local-servers, a server a command starts inside is reached from this machine at
// the same port while it listens, and not once it stopped; the line after a command says
// each, once; session ls lists it.
func TestPublishedServerReachedFromTheHost(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	server := goProgram(t, w, "server", serverSrc)
	id := w.publishingSession("--local-servers")
	port := hostFreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	said := w.serveInside(id, server, port, "inside")
	tstest.WaitFor(t, 10*time.Second, func() error {
		got, err := hostGet(url)
		if err != nil || !strings.HasPrefix(got, "inside ") {
			return fmt.Errorf("GET %s from this machine: %q %v", url, got, err)
		}
		return nil
	})
	ls, _, _ := w.run("session", "ls")
	if !strings.Contains(ls, fmt.Sprintf("port %d published at 127.0.0.1:%d", port, port)) {
		t.Errorf("session ls does not list the published port:\n%s", ls)
	}
	// The line comes after the command that started the server, or the next one, once.
	_, errs, _ := w.run("session", "exec", id, "true")
	said += errs
	line := fmt.Sprintf("a server in the sandbox listens on port %d: published on this machine at 127.0.0.1:%d while it listens", port, port)
	if n := strings.Count(said, line); n != 1 {
		t.Errorf("the line %q was said %d times after two commands:\n%s", line, n, said)
	}
	// Stopped inside, the port is taken back here, and the line after a command says so.
	_, errs, code := w.run("session", "exec", id, fmt.Sprintf("kill $(cat served-%d.pid)", port))
	if code != 0 {
		t.Fatalf("stopping the server: %s", errs)
	}
	said = errs
	tstest.WaitFor(t, 5*time.Second, func() error {
		if got, err := hostGet(url); err == nil {
			return fmt.Errorf("%s still answers %q after the server inside stopped", url, got)
		}
		return nil
	})
	_, errs, _ = w.run("session", "exec", id, "true")
	if said += errs; strings.Count(said, fmt.Sprintf("port %d in the sandbox is no longer published", port)) != 1 {
		t.Errorf("the lines after the commands do not say once that the port was taken back:\n%s", said)
	}
}

// Without --local-servers nothing is published; --publish PORT publishes that port only,
// and the Access list can ask for one more, and take it back.
func TestPublishOnePort(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	server := goProgram(t, w, "server", serverSrc)
	asked, other, later := hostFreePort(t), hostFreePort(t), hostFreePort(t)
	id := w.publishingSession("--publish", strconv.Itoa(asked))
	for _, p := range []int{asked, other, later} {
		w.serveInside(id, server, p, "port"+strconv.Itoa(p))
	}
	tstest.WaitFor(t, 10*time.Second, func() error {
		if got, err := hostGet(fmt.Sprintf("http://127.0.0.1:%d/", asked)); err != nil || !strings.HasPrefix(got, "port"+strconv.Itoa(asked)) {
			return fmt.Errorf("the port asked for: %q %v", got, err)
		}
		return nil
	})
	if got, err := hostGet(fmt.Sprintf("http://127.0.0.1:%d/", other)); err == nil {
		t.Errorf("a port not asked for is published: %q", got)
	}
	out, errs, code := w.run("access", id, "--publish", strconv.Itoa(later))
	if code != 0 || !strings.Contains(out, fmt.Sprintf("port %d published at 127.0.0.1:%d", later, later)) {
		t.Errorf("access --publish %d: exit %d\n%s%s", later, code, out, errs)
	}
	if got, err := hostGet(fmt.Sprintf("http://127.0.0.1:%d/", later)); err != nil || !strings.HasPrefix(got, "port"+strconv.Itoa(later)) {
		t.Errorf("the port asked for on the Access list: %q %v", got, err)
	}
	if out, errs, code := w.run("access", id, "--unpublish", strconv.Itoa(later)); code != 0 || strings.Contains(out, fmt.Sprintf("port %d", later)) {
		t.Errorf("access --unpublish: exit %d\n%s%s", code, out, errs)
	}
	if got, err := hostGet(fmt.Sprintf("http://127.0.0.1:%d/", later)); err == nil {
		t.Errorf("a port taken back still answers: %q", got)
	}
	for _, bad := range []string{"0", "65536", "http"} {
		if _, errs, code := w.run("access", id, "--publish", bad); code != 2 || !strings.Contains(errs, "not a port") {
			t.Errorf("access --publish %s: exit %d, %q; want a usage error", bad, code, errs)
		}
	}
}

// Two sessions whose servers listen on the same port are both published, the second at the
// next free port, and each says where; a request reaches each one's own server.
func TestTwoSessionsAskForTheSamePort(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	server := goProgram(t, w, "server", serverSrc)
	port := hostFreePort(t)
	a := w.publishingSession("--publish", strconv.Itoa(port))
	b := w.startSession("--publish", strconv.Itoa(port))
	saidA := w.serveInside(a, server, port, "A")
	tstest.WaitFor(t, 10*time.Second, func() error {
		if got, err := hostGet(fmt.Sprintf("http://127.0.0.1:%d/", port)); err != nil || !strings.HasPrefix(got, "A ") {
			return fmt.Errorf("session A's server: %q %v", got, err)
		}
		return nil
	})
	saidB := w.serveInside(b, server, port, "B")
	var hostB int
	tstest.WaitFor(t, 10*time.Second, func() error {
		ls, _, _ := w.run("session", "ls")
		for _, l := range strings.Split(ls, "\n") {
			if n, err := fmt.Sscanf(strings.TrimSpace(l), fmt.Sprintf("port %d published at 127.0.0.1:%%d", port), &hostB); n == 1 && err == nil && hostB != port {
				return nil
			}
		}
		return fmt.Errorf("session B's port is not published elsewhere:\n%s", ls)
	})
	if got, err := hostGet(fmt.Sprintf("http://127.0.0.1:%d/", hostB)); err != nil || !strings.HasPrefix(got, "B ") {
		t.Errorf("session B's server at 127.0.0.1:%d: %q %v", hostB, got, err)
	}
	if got, err := hostGet(fmt.Sprintf("http://127.0.0.1:%d/", port)); err != nil || !strings.HasPrefix(got, "A ") {
		t.Errorf("session A's server at its port: %q %v", got, err)
	}
	// Each session says where its own server is, after the command that started it or the
	// next one.
	_, errsA, _ := w.run("session", "exec", a, "true")
	_, errsB, _ := w.run("session", "exec", b, "true")
	errsA, errsB = saidA+errsA, saidB+errsB
	if !strings.Contains(errsA, fmt.Sprintf("port %d: published on this machine at 127.0.0.1:%d while", port, port)) ||
		!strings.Contains(errsB, fmt.Sprintf("port %d: published on this machine at 127.0.0.1:%d (127.0.0.1:%d is taken here)", port, hostB, port)) {
		t.Errorf("the lines after the commands:\nA: %q\nB: %q", errsA, errsB)
	}
}

// A published port is this machine's loopback's only: it listens at 127.0.0.1 and no other
// address, and from inside another session (or the same one) it is not this machine's: a
// direct connection meets the sandbox's own loopback, and the proxy refuses it.
func TestNothingInsideReachesTheHostThroughAPublishedPort(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	need(t, "curl")
	server := goProgram(t, w, "server", serverSrc)
	fetch := goProgram(t, w, "fetch", fetchSrc)
	port := hostFreePort(t)
	a := w.publishingSession("--local-servers")
	b := w.startSession("--local-servers")
	w.serveInside(a, server, port, "A")
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	tstest.WaitFor(t, 10*time.Second, func() error {
		if got, err := hostGet(url); err != nil || !strings.HasPrefix(got, "A ") {
			return fmt.Errorf("%q %v", got, err)
		}
		return nil
	})
	// Only 127.0.0.1 listens at the port on this machine.
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		raw, _ := os.ReadFile(table)
		for _, l := range strings.Split(string(raw), "\n") {
			f := strings.Fields(l)
			if len(f) > 3 && f[3] == "0A" && strings.HasSuffix(f[1], fmt.Sprintf(":%04X", port)) && f[1] != fmt.Sprintf("0100007F:%04X", port) {
				t.Errorf("the published port listens at %s in %s, not 127.0.0.1 only", f[1], table)
			}
		}
	}
	before, _ := hostGet(url)
	// From session B: its own loopback (nothing there), Go's client (never a proxy for
	// loopback), and curl through the proxy, which refuses this machine's loopback.
	for _, cmd := range []string{
		fmt.Sprintf("%s %s", fetch, url),
		fmt.Sprintf("curl -sS --max-time 5 --noproxy '*' %s", url),
		fmt.Sprintf("curl -sS --max-time 5 --proxy \"$HTTP_PROXY\" %s", url),
	} {
		out, errs, code := w.run("session", "exec", b, cmd)
		if code == 0 || strings.Contains(out, "A ") {
			t.Errorf("from another session, %s: exit %d, %q %q; want no way to this machine's published port", cmd, code, out, errs)
		}
	}
	after, _ := hostGet(url)
	if nb, na := count(before), count(after); na != nb+1 {
		t.Errorf("session A's server had %d requests between two of this machine's, want none from session B", na-nb-1)
	}
	// From A itself, 127.0.0.1 is its own loopback: its own server, not this machine's.
	if out, errs, code := w.run("session", "exec", a, fmt.Sprintf("%s %s", fetch, url)); code != 0 || !strings.Contains(out, "A ") {
		t.Errorf("inside A, its own server: exit %d %q %q", code, out, errs)
	}
}

// An agent's session with --local-servers: session_info lists the published port, and the
// person reaches the agent's server from this machine.
func TestMCPSessionInfoListsPublishedPorts(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	server := goProgram(t, w, "server", serverSrc)
	port := hostFreePort(t)
	m := w.connectMCP("", nil, "--rw", ".", "--local-servers")
	m.call("run_command", map[string]any{"command": fmt.Sprintf("%s %d agent >/dev/null 2>&1 &", server, port)})
	var info struct {
		LocalServers bool `json:"local_servers"`
		Published    []struct {
			Port     int `json:"port"`
			HostPort int `json:"host_port"`
		} `json:"published"`
	}
	tstest.WaitFor(t, 10*time.Second, func() error {
		res, text := m.call("session_info", map[string]any{})
		structured(t, res, &info)
		if !info.LocalServers || len(info.Published) != 1 || info.Published[0].Port != port || info.Published[0].HostPort != port {
			return fmt.Errorf("session_info: %s", text)
		}
		return nil
	})
	if got, err := hostGet(fmt.Sprintf("http://127.0.0.1:%d/", port)); err != nil || !strings.HasPrefix(got, "agent ") {
		t.Errorf("the agent's server from this machine: %q %v", got, err)
	}
}

// count is the request number a served answer ends with.
func count(answer string) int {
	f := strings.Fields(answer)
	if len(f) == 0 {
		return -1
	}
	n, _ := strconv.Atoi(f[len(f)-1])
	return n
}

// openworker run --local-servers, whose command is the server: the port is said while it
// runs, on a line of OpenWorker's, and reached from this machine.
func TestRunPublishesItsServerWhileItRuns(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	server := goProgram(t, w, "server", serverSrc)
	port := hostFreePort(t)
	c := w.cmd("run", "--local-servers", "--", server, strconv.Itoa(port), "run")
	stderr, _ := c.StderrPipe()
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { c.Process.Kill(); c.Wait() }()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "published") {
				line <- sc.Text()
			}
		}
	}()
	select {
	case l := <-line:
		if !strings.HasPrefix(l, "openworker: a server in the sandbox listens on port "+strconv.Itoa(port)) {
			t.Errorf("the line: %q", l)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not say the port was published")
	}
	if got, err := hostGet(fmt.Sprintf("http://127.0.0.1:%d/", port)); err != nil || !strings.HasPrefix(got, "run ") {
		t.Errorf("the run's server from this machine: %q %v", got, err)
	}
}

// One switch, one meaning: --help of every command that starts a session says what
// --local-servers does on Linux and on a Mac, and what --publish is.
func TestLocalServersHelpSaysBothSystems(t *testing.T) {
	w := newWorld(t)
	for _, args := range [][]string{{"run", "--help"}, {"session", "start", "--help"}, {"mcp", "--help"}} {
		out, _, code := w.run(args...)
		for _, want := range []string{"--local-servers", "On Linux", "published on this machine's 127.0.0.1", "On a Mac", "--publish"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("%v: exit %d, no %q in:\n%s", args, code, want, out)
			}
		}
	}
}

// Local servers switched on in a running Linux session publish at once, with no restart
// (shell state is kept), and stay on across an added folder's restart.
func TestLocalServersSwitchedOnInARunningSession(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	server := goProgram(t, w, "server", serverSrc)
	id := w.publishingSession()
	port := hostFreePort(t)
	w.run("session", "exec", id, "export KEPT=yes")
	w.serveInside(id, server, port, "switched")
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	if got, err := hostGet(url); err == nil {
		t.Fatalf("published with local servers off: %q", got)
	}
	if out, errs, code := w.run("access", id, "--local-servers", "on"); code != 0 || !strings.Contains(out, "local servers on") {
		t.Fatalf("access --local-servers on: exit %d\n%s%s", code, out, errs)
	}
	tstest.WaitFor(t, 5*time.Second, func() error {
		if got, err := hostGet(url); err != nil || !strings.HasPrefix(got, "switched ") {
			return fmt.Errorf("%q %v", got, err)
		}
		return nil
	})
	if out, _, _ := w.run("session", "exec", id, `echo "$KEPT"`); out != "yes\n" {
		t.Errorf("switching local servers restarted the shell: %q", out)
	}
	extra := filepath.Join(filepath.Dir(w.project), "extra")
	os.Mkdir(extra, 0o755)
	if _, errs, code := w.run("session", "add-folder", id, "--ro", extra); code != 0 {
		t.Fatalf("add-folder: %s", errs)
	}
	if out, _, _ := w.run("access", id); !strings.Contains(out, "local servers on") {
		t.Errorf("after an added folder's restart local servers are off:\n%s", out)
	}
	if _, errs, code := w.run("access", id, "--local-servers", "yes"); code != 2 || !strings.Contains(errs, "not on or off") {
		t.Errorf("access --local-servers yes: exit %d %q", code, errs)
	}
}
