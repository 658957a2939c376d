package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// cardsWorld is a world with a running daemon whose sessions get the wall, one session,
// and a loopback origin that only a literal entry allows.
type cardsWorld struct {
	*world
	id     string
	origin string
	stop   func()
}

func newCardsWorld(t *testing.T, settings string) *cardsWorld {
	t.Helper()
	w := newWorld(t)
	requireSandbox(t, w)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	w.settings("sandbox_provider = \"linux\"\n" + settings)
	_, stop := w.daemon()
	t.Cleanup(stop)
	id, errs, code := w.run("session", "start")
	if code != 0 {
		t.Fatalf("session start: %s", errs)
	}
	cw := &cardsWorld{world: w, id: strings.TrimSpace(id), origin: httpOrigin(t, "hello from the origin"), stop: stop}
	t.Cleanup(func() { w.run("session", "end", cw.id) })
	return cw
}

// curl fetches the origin through the proxy. The origin stands in for a site elsewhere: a
// loopback address is reached directly inside (NO_PROXY names it), so curl is told to use
// the proxy for it, as it does for any host name.
func (cw *cardsWorld) curl() (string, int) {
	out, _, code := cw.run("session", "exec", cw.id, "--", "curl", "-sSf", "--noproxy", "", "--max-time", "5", "http://"+cw.origin+"/")
	return out, code
}

// pendingCard waits for the one card of the session for site, and returns its line.
func (cw *cardsWorld) pendingCard(site string) (id, line string) {
	cw.t.Helper()
	tstest.WaitFor(cw.t, 10*time.Second, func() error {
		out, _, _ := cw.run("cards")
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "session "+cw.id) && strings.Contains(l, site) {
				id, line = strings.Fields(l)[0], l
				return nil
			}
		}
		return fmt.Errorf("no card for %s yet: %q", site, out)
	})
	return id, line
}

func TestSiteCardAnsweredForTheSession(t *testing.T) {
	cw := newCardsWorld(t, "")
	if out, code := cw.curl(); code == 0 || strings.Contains(out, "hello") {
		t.Fatalf("the origin was reached before anyone allowed it: %d %q", code, out)
	}
	// The agent asks; meanwhile a command in the same session keeps trying, and gets
	// through as soon as the answer is given, without a restart.
	ask := cw.cmd("request-site", cw.id, cw.origin, "--reason", "the tests fetch their fixtures there", "--wait", "30s")
	var askOut bytes.Buffer
	ask.Stdout = &askOut
	if err := ask.Start(); err != nil {
		t.Fatal(err)
	}
	retry := cw.cmd("session", "exec", cw.id, "for i in $(seq 300); do curl -sSf --noproxy '' --max-time 2 http://"+cw.origin+"/ 2>/dev/null && exit 0; sleep 0.05; done; exit 1")
	var retryOut bytes.Buffer
	retry.Stdout = &retryOut
	if err := retry.Start(); err != nil {
		t.Fatal(err)
	}
	card, line := cw.pendingCard(cw.origin)
	if !strings.Contains(line, "blocked by the sandbox at") || !strings.Contains(line, "the tests fetch their fixtures there") {
		t.Fatalf("the card does not say the sandbox blocked it, or the reason: %s", line)
	}
	// A sandboxed command cannot answer it: the daemon's socket is out of reach.
	out, _, _ := cw.run("session", "exec", cw.id, "--", "sh", "-c", "ls "+cw.state+" 2>&1; curl -sS --unix-socket "+filepath.Join(cw.state, "openworker.sock")+" -X POST -d '{\"answer\":\"always\"}' http://x/v1/cards/"+card+"/answer 2>&1")
	if strings.Contains(out, `"outcome"`) {
		t.Fatalf("a command inside answered the card: %s", out)
	}
	if out, errs, code := cw.run("answer", card, "session"); code != 0 || !strings.Contains(out, "session") {
		t.Fatalf("answer: %d %s %s", code, out, errs)
	}
	if err := ask.Wait(); err != nil || strings.TrimSpace(askOut.String()) != "session" {
		t.Fatalf("request-site: %v %q", err, askOut.String())
	}
	if err := retry.Wait(); err != nil || !strings.Contains(retryOut.String(), "hello from the origin") {
		t.Fatalf("the running command did not get through after the answer: %v %q", err, retryOut.String())
	}
	if out, code := cw.curl(); code != 0 || out != "hello from the origin" {
		t.Fatalf("the next command: %d %q", code, out)
	}
	out, _, _ = cw.run("access", cw.id)
	if !strings.Contains(out, cw.origin+"  Session only") {
		t.Fatalf("Access does not mark it Session only:\n%s", out)
	}
	// Revoking closes an open tunnel at once: a client holding one through the proxy
	// sees it end.
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed, for the tunnel client")
	}
	tunnel := cw.cmd("session", "exec", cw.id, "--", "python3", "-c", tunnelClient, cw.origin)
	tunnelOut, _ := tunnel.StdoutPipe()
	var tunnelErr bytes.Buffer
	tunnel.Stderr = &tunnelErr
	if err := tunnel.Start(); err != nil {
		t.Fatal(err)
	}
	tr := bufio.NewReader(tunnelOut)
	if l, err := tr.ReadString('\n'); err != nil || l != "open\n" {
		tunnel.Process.Kill()
		t.Fatalf("no tunnel to the origin: %q %v %s", l, err, tunnelErr.String())
	}
	if _, errs, code := cw.run("access", cw.id, "--revoke", cw.origin); code != 0 {
		t.Fatalf("revoke: %s", errs)
	}
	closed := make(chan string, 1)
	go func() { l, _ := tr.ReadString('\n'); closed <- l }()
	select {
	case l := <-closed:
		if l != "closed\n" {
			t.Fatalf("the tunnel client said %q %s", l, tunnelErr.String())
		}
	case <-time.After(10 * time.Second):
		tunnel.Process.Kill()
		t.Fatal("an open tunnel to a revoked site stayed open")
	}
	tunnel.Wait()
	if _, code := cw.curl(); code == 0 {
		t.Fatal("the revoked site is still reachable")
	}
}

func TestSiteCardAlwaysAndDeny(t *testing.T) {
	original := "# my settings, with a comment\nsandbox_network_hosts = [\"github.com:443\"]  # trailing\n"
	cw := newCardsWorld(t, original)
	path := filepath.Join(cw.home, ".config", "openworker", "config.toml")
	go cw.run("request-site", cw.id, cw.origin, "--reason", "always, please", "--wait", "30s")
	card, _ := cw.pendingCard(cw.origin)
	if _, errs, code := cw.run("answer", card, "always"); code != 0 {
		t.Fatalf("answer always: %s", errs)
	}
	if out, code := cw.curl(); code != 0 || out != "hello from the origin" {
		t.Fatalf("after always: %d %q", code, out)
	}
	b, _ := os.ReadFile(path)
	want := "sandbox_provider = \"linux\"\n# my settings, with a comment\nsandbox_network_hosts = [\"github.com:443\", \"" + cw.origin + "\"]  # trailing\n"
	if string(b) != want {
		t.Fatalf("the settings file after always:\n%s\nwant\n%s", b, want)
	}
	// A new session has it.
	id2, _, _ := cw.run("session", "start")
	id2 = strings.TrimSpace(id2)
	defer cw.run("session", "end", id2)
	if out, _, code := cw.run("session", "exec", id2, "--", "curl", "-sS", "http://"+cw.origin+"/"); code != 0 || out != "hello from the origin" {
		t.Fatalf("a new session after always: %d %q", code, out)
	}
	// Deny is remembered: a second ask is refused at once, without a card.
	deny := "127.0.0.1:1"
	go cw.run("request-site", id2, deny, "--reason", "no", "--wait", "30s")
	var denyCard string
	tstest.WaitFor(t, 10*time.Second, func() error {
		out, _, _ := cw.run("cards")
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, deny) {
				denyCard = strings.Fields(l)[0]
				return nil
			}
		}
		return fmt.Errorf("no card for %s", deny)
	})
	cw.run("answer", denyCard, "deny")
	start := time.Now()
	out, errs, code := cw.run("request-site", id2, deny, "--reason", "again", "--wait", "30s")
	if code != 1 || strings.TrimSpace(out) != "denied" || time.Since(start) > 5*time.Second {
		t.Fatalf("a repeated ask after deny: %d %q %s after %v", code, out, errs, time.Since(start))
	}
	if cards, _, _ := cw.run("cards"); strings.Contains(cards, deny) {
		t.Fatalf("a card was made for a denied site: %s", cards)
	}
	// Allowing it from the Access list takes the denial back.
	if out, errs, code := cw.run("access", id2, "--allow", deny); code != 0 || !strings.Contains(out, deny+"  Session only") || strings.Contains(out, "Denied") {
		t.Fatalf("access --allow after deny: %d %s %s", code, out, errs)
	}
}

func TestFullAccessRefusesWithoutACard(t *testing.T) {
	cw := newCardsWorld(t, "sandbox_approvals = \"full-access\"\n")
	out, errs, code := cw.run("request-site", cw.id, cw.origin, "--reason", "r")
	if code != 1 || strings.TrimSpace(out) != "refused: full access" || !strings.Contains(errs, "openworker sites add "+cw.origin) {
		t.Fatalf("full access: %d %q %s", code, out, errs)
	}
	if cards, _, _ := cw.run("cards"); strings.Contains(cards, cw.origin) {
		t.Fatalf("a card in full-access mode: %s", cards)
	}
}

func TestIdenticalAsksMakeOneCard(t *testing.T) {
	cw := newCardsWorld(t, "")
	const n = 50
	var wg sync.WaitGroup
	outs := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, _, _ := cw.run("request-site", cw.id, cw.origin, "--reason", "retrying client", "--wait", "60s")
			outs[i] = strings.TrimSpace(out)
		}()
	}
	card, _ := cw.pendingCard(cw.origin)
	// Every asker is waiting on this one card before it is answered.
	tstest.WaitFor(t, 30*time.Second, func() error {
		out, _, _ := cw.run("cards", "--json")
		if n := strings.Count(out, `"askers":50`); n != 1 || strings.Count(out, "\n") != 1 {
			return fmt.Errorf("cards: %s", out)
		}
		return nil
	})
	cw.run("answer", card, "session")
	wg.Wait()
	for i, o := range outs {
		if o != "session" {
			t.Fatalf("asker %d got %q", i, o)
		}
	}
}

func TestCardsWatch(t *testing.T) {
	cw := newCardsWorld(t, "")
	watch := cw.cmd("cards", "--watch")
	stdout, _ := watch.StdoutPipe()
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer watch.Process.Kill()
	go cw.run("request-site", cw.id, cw.origin, "--reason", "watched", "--wait", "20s")
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	select {
	case l := <-lines:
		if !strings.Contains(l, cw.origin) || !strings.Contains(l, "watched") {
			t.Fatalf("cards --watch showed %q", l)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("cards --watch showed no card")
	}
}

// tunnelClient opens a tunnel through the session's proxy to argv[1], says "open" once the
// origin answered through it, and "closed" when the tunnel ends.
const tunnelClient = `
import base64, os, socket, sys, urllib.parse
p = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
s = socket.create_connection((p.hostname, p.port))
auth = base64.b64encode(("%s:%s" % (p.username, p.password)).encode()).decode()
s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n" % (sys.argv[1], sys.argv[1], auth)).encode())
f = s.makefile("rb")
if not f.readline().startswith(b"HTTP/1.1 200"):
    sys.exit("no tunnel")
while f.readline() not in (b"\r\n", b""):
    pass
s.sendall(b"GET / HTTP/1.1\r\nHost: origin\r\n\r\n")
if not f.readline().startswith(b"HTTP/1.1 200"):
    sys.exit("no answer through the tunnel")
print("open", flush=True)
while f.read(1):
    pass
print("closed", flush=True)
`
