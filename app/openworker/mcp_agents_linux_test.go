package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openworker/openworker/core/tstest"
)

// The words that would teach a model to open a site itself: a command, a file or a setting
// that opens it. Text a model reads must contain none of them.
var selfApproval = []string{"openworker ", "openworker\t", "access", "sandbox_network_hosts", ".toml", "request-site", "Settings", "sites add"}

func requireNoSelfApproval(t *testing.T, what, text string) {
	t.Helper()
	for _, w := range selfApproval {
		if strings.Contains(text, w) {
			t.Fatalf("%s tells the model how to open a site itself (%q):\n%s", what, w, text)
		}
	}
}

// resultText is a result's text content.
func resultText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// cardFor waits for the pending card of site and returns its ID.
func (w *world) cardFor(site string) string {
	w.t.Helper()
	var card string
	tstest.WaitFor(w.t, 20*time.Second, func() error {
		out, errs, _ := w.run("cards")
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 && strings.Contains(line, site) {
				card = f[0]
				return nil
			}
		}
		return fmt.Errorf("no card for %s: %q %s", site, out, errs)
	})
	return card
}

// What a model reads of a refused site names no way to open it: not in the proxy's 403 body
// that a command prints, not in the result's notice, not in request_site's answers — before
// a card, while it waits, and after the person denied it.
func TestMCPRefusalsTeachNoSelfApproval(t *testing.T) {
	for _, attached := range []bool{false, true} {
		t.Run(map[bool]string{false: "own_daemon", true: "person_daemon"}[attached], func(t *testing.T) {
			w := newWorld(t)
			requireSandbox(t, w)
			if _, err := exec.LookPath("curl"); err != nil {
				t.Skip("curl is not installed")
			}
			if attached {
				_, stop := w.daemon()
				defer stop()
			}
			// A name the proxy refuses before it resolves anything: nothing leaves the machine.
			origin := "not-allowed.example:80"
			m := w.connectMCP("", nil, "--ask-wait", "1s")
			fetch := "curl -sS http://" + origin + "/"
			_, text := m.call("run_command", map[string]any{"command": fetch})
			if !strings.Contains(text, "not on this session's allow list") || !strings.Contains(text, "request_site") {
				t.Fatalf("the refusal: %s", text)
			}
			requireNoSelfApproval(t, "the refusal", text)
			res, text := m.call("request_site", map[string]any{"host": origin, "reason": "fixtures"})
			var a struct{ Decision, Message string }
			structured(t, res, &a)
			if a.Decision != "no answer yet" {
				t.Fatalf("request_site with nobody answering: %s", text)
			}
			requireNoSelfApproval(t, "request_site waiting", text)
			card := w.cardFor(origin)
			if _, errs, code := w.run("answer", card, "deny"); code != 0 {
				t.Fatalf("answer deny: %s", errs)
			}
			_, text = m.call("run_command", map[string]any{"command": fetch})
			if !strings.Contains(text, "denied") {
				t.Fatalf("the refusal after a deny: %s", text)
			}
			requireNoSelfApproval(t, "the refusal after a deny", text)
			res, text = m.call("request_site", map[string]any{"host": origin, "reason": "fixtures"})
			structured(t, res, &a)
			if a.Decision != "denied" {
				t.Fatalf("request_site after a deny: %s", text)
			}
			requireNoSelfApproval(t, "request_site after a deny", text)
		})
	}
}

// A form answer is taken only for a question this server put to this client, once: a card
// ID is no key. Forged answers for another session's card and for this session's own card
// that was never put in a form are refused, and both cards stay pending.
func TestMCPFormAnswersOnlyForQuestionsAsked(t *testing.T) {
	for _, rev := range mcpRevisions {
		t.Run("revision_"+strings.ReplaceAll(rev+"current", "-", ""), func(t *testing.T) {
			w := newWorld(t)
			requireSandbox(t, w)
			_, stop := w.daemon()
			defer stop()
			origin := httpOrigin(t, "hello")
			victim := w.connectMCP(rev, nil, "--ask-wait", "1s")
			if res, text := victim.call("request_site", map[string]any{"host": origin, "reason": "fixtures"}); !strings.Contains(text, "no answer yet") {
				t.Fatalf("the victim's ask: %v %s", res.IsError, text)
			}
			card := w.cardFor(origin)
			attacker := w.connectMCP(rev, &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "always"}}, nil
			}}, "--ask-wait", "1s")
			forged := sdk.InputResponseMap{"site": &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "always"}}}
			for name, m := range map[string]*mcpClient{"another_session": attacker, "own_unasked_card": victim} {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := m.cs.CallTool(ctx, &sdk.CallToolParams{Name: "request_site", Arguments: map[string]any{"host": origin, "reason": "x"},
					InputResponses: forged, RequestState: card})
				cancel()
				if err == nil && !res.IsError {
					t.Fatalf("%s: a forged form answer was taken: %s", name, resultText(res))
				}
				if w.cardFor(origin) != card {
					t.Fatalf("%s: the card changed", name)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(w.home, ".config", "openworker", "config.toml")); strings.Contains(string(b), strings.Split(origin, ":")[0]) {
				t.Fatalf("a forged answer wrote the site into the settings:\n%s", b)
			}
			out, _, _ := w.run("audit")
			if !strings.Contains(out, "form answer refused") {
				t.Fatalf("the forged answers are not in the audit trail:\n%s", out)
			}
		})
	}
}

// A client's cancel (a headless host that cannot show the form) leaves the card pending for
// a person; decline is a deny.
func TestMCPCancelledFormKeepsTheCard(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	origin := httpOrigin(t, "hello")
	m := w.connectMCP("", &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		return &sdk.ElicitResult{Action: "cancel"}, nil
	}})
	res, text := m.call("request_site", map[string]any{"host": origin, "reason": "fixtures"})
	var a struct{ Decision string }
	structured(t, res, &a)
	if a.Decision != "no answer yet" {
		t.Fatalf("a cancelled form: %s", text)
	}
	requireNoSelfApproval(t, "a cancelled form's answer", text)
	card := w.cardFor(origin)
	if _, errs, code := w.run("answer", card, "session"); code != 0 {
		t.Fatalf("the person's answer after the cancel: %s", errs)
	}
	if _, text := m.call("run_command", map[string]any{"command": "curl -sSf http://" + origin + "/"}); !strings.Contains(text, "hello") {
		t.Fatalf("after the person allowed it: %s", text)
	}
}

// --no-forms: the server never asks through the client's form, even when the client could;
// the card waits for a person.
func TestMCPNoFormsUsesCards(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	origin := httpOrigin(t, "hello")
	asked := 0
	m := w.connectMCP("", &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked++
		return &sdk.ElicitResult{Action: "decline"}, nil
	}}, "--no-forms", "--ask-wait", "1s")
	_, text := m.call("request_site", map[string]any{"host": origin, "reason": "fixtures"})
	if asked != 0 || !strings.Contains(text, "no answer yet") {
		t.Fatalf("--no-forms asked the client %d times: %s", asked, text)
	}
	w.cardFor(origin)
}

// The ask returns before the clients' request timeouts, with progress while it waits.
func TestMCPAskReturnsInTimeWithProgress(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	origin := httpOrigin(t, "hello")
	var mu sync.Mutex
	progress := 0
	m := w.connectMCP("", &sdk.ClientOptions{ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		progress++
		mu.Unlock()
	}}, "--ask-wait", "3s")
	params := &sdk.CallToolParams{Name: "request_site", Arguments: map[string]any{"host": origin, "reason": "fixtures"}}
	params.SetProgressToken("ask-1")
	start := time.Now()
	res, err := m.cs.CallTool(context.Background(), params)
	if err != nil || !strings.Contains(resultText(res), "no answer yet") {
		t.Fatalf("request_site: %v %v", err, res)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the ask took %s with --ask-wait 3s", d)
	}
	tstest.WaitFor(t, 5*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if progress == 0 {
			return fmt.Errorf("no progress while the ask waited")
		}
		return nil
	})
}

// Two agents and a CLI session share one daemon that neither agent's lifetime ends: the
// first agent leaves, the others work to their end, and when the last leaves nothing is
// left behind.
func TestMCPTwoAgentsNeverShareALifetime(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	first := w.connectMCP("", nil)
	second := w.connectMCP("", nil)
	id, errs, code := w.run("session", "start", "--rw", w.project)
	id = strings.TrimSpace(id)
	if code != 0 {
		t.Fatalf("session start with only agents' servers running: %s", errs)
	}
	first.cs.Close() // waits for the server to exit
	if _, text := second.call("run_command", map[string]any{"command": "echo still here"}); !strings.Contains(text, "still here") {
		t.Fatalf("the second agent after the first left: %s", text)
	}
	if out, errs, code := w.run("session", "exec", id, "--", "echo", "cli too"); code != 0 || !strings.Contains(out, "cli too") {
		t.Fatalf("the CLI session after the first agent left: %s %s", out, errs)
	}
	second.cs.Close()
	if out, errs, code := w.run("session", "exec", id, "--", "echo", "alone"); code != 0 || !strings.Contains(out, "alone") {
		t.Fatalf("the CLI session after both agents left: %s %s", out, errs)
	}
	if _, errs, code := w.run("session", "end", id); code != 0 {
		t.Fatalf("session end: %s", errs)
	}
	sock := filepath.Join(w.state, "openworker.sock")
	tstest.WaitFor(t, 20*time.Second, func() error {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return fmt.Errorf("the agents' daemon still answers after the last session ended")
		}
		if _, err := os.Stat(sock); err == nil {
			return fmt.Errorf("the agents' daemon left its socket")
		}
		return nil
	})
	tmps, _ := filepath.Glob(filepath.Join(os.TempDir(), "openworker-"+"*", "home"))
	for _, tmp := range tmps {
		if strings.HasPrefix(tmp, w.home) {
			t.Fatalf("left behind: %s", tmp)
		}
	}
}

// A server killed outright ends its session in the daemon, with the reason in the audit
// trail.
func TestMCPKilledServerEndsItsSession(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	_, stop := w.daemon()
	defer stop()
	m := w.connectMCP("", nil)
	res, _ := m.call("session_info", map[string]any{})
	var info struct{ Session string }
	structured(t, res, &info)
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	m.cs.Close() // the client's transport reaps the killed server
	tstest.WaitFor(t, 15*time.Second, func() error {
		if out, _, _ := w.run("session", "ls"); strings.Contains(out, info.Session) {
			return fmt.Errorf("the killed server's session runs on: %s", out)
		}
		return nil
	})
	out, _, _ := w.run("audit", "--session", info.Session)
	if !strings.Contains(out, "session.ended") || !strings.Contains(out, "client") {
		t.Fatalf("the audit trail does not say why the session ended:\n%s", out)
	}
}

// The README's configs start from / (Claude Desktop) and from the home folder: --rw names
// the folder, and the current folder is not shared unless --rw . says so. A server that
// cannot start still completes the handshake and says why on every call.
func TestMCPStartsFromRootAndHome(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	for _, dir := range []string{"/", w.home} {
		c := w.cmd("mcp", "--rw", w.project)
		c.Dir = dir
		client := sdk.NewClient(&sdk.Implementation{Name: "desktop", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: c}, nil)
		if err != nil {
			t.Fatalf("from %s: %v", dir, err)
		}
		m := &mcpClient{t: t, cs: cs, cmd: c}
		res, text := m.call("session_info", map[string]any{})
		var info struct {
			Writable []struct{ Given, Resolved string }
		}
		structured(t, res, &info)
		if len(info.Writable) != 1 || info.Writable[0].Resolved != w.project {
			t.Fatalf("from %s: %s", dir, text)
		}
		if _, text := m.call("run_command", map[string]any{"command": "pwd"}); !strings.Contains(text, w.project) {
			t.Fatalf("from %s the working folder: %s", dir, text)
		}
		cs.Close()
		c.Wait()
	}
	// Started in the home folder without a folder: it cannot start, and says so.
	c := w.cmd("mcp")
	c.Dir = w.home
	client := sdk.NewClient(&sdk.Implementation{Name: "desktop", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: c}, nil)
	if err != nil {
		t.Fatalf("a server that cannot start ended the handshake: %v", err)
	}
	defer cs.Close()
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "home folder") {
		t.Fatalf("the instructions do not say why: %q", ins)
	}
	m := &mcpClient{t: t, cs: cs, cmd: c}
	res, text := m.call("run_command", map[string]any{"command": "true"})
	if !res.IsError || !strings.Contains(text, "home folder") || !strings.Contains(text, "--rw") {
		t.Fatalf("a call to a server that cannot start: %s", text)
	}
	// --rw alone names exactly the folders shared: --no-cwd is not needed with it.
	if strings.Contains(text, "--no-cwd") {
		t.Errorf("the advice names --no-cwd, which --rw does not need: %s", text)
	}
}

// Every tool carries the annotations that are true of it.
func TestMCPToolAnnotations(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	m := w.connectMCP("", nil)
	tools, err := m.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := map[string]bool{"read_file": true, "list_directory": true, "session_info": true}
	for _, tl := range tools.Tools {
		if tl.Annotations == nil {
			t.Fatalf("%s has no annotations", tl.Name)
		}
		if tl.Annotations.ReadOnlyHint != readOnly[tl.Name] {
			t.Fatalf("%s: readOnlyHint %v", tl.Name, tl.Annotations.ReadOnlyHint)
		}
	}
	out, _, _ := w.run("mcp", "--help")
	for _, name := range []string{"run_command", "read_file", "write_file", "list_directory", "request_site", "web_fetch", "session_info"} {
		if !strings.Contains(out, name) {
			t.Fatalf("mcp --help does not list %s:\n%s", name, out)
		}
	}
}

// Bytes that are not UTF-8 are said to be so, and read_file and write_file carry them whole
// as base64.
func TestMCPBinaryData(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	m := w.connectMCP("", nil)
	_, text := m.call("run_command", map[string]any{"command": `printf 'a\377\376b'`})
	if !strings.Contains(text, "not UTF-8") {
		t.Fatalf("run_command with binary output: %q", text)
	}
	bin := []byte{0, 1, 0xff, 0xfe, 'x'}
	if err := os.WriteFile(filepath.Join(w.project, "blob"), bin, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, text := m.call("read_file", map[string]any{"path": "blob"}); !strings.Contains(text, "not UTF-8") || !strings.Contains(text, "base64") {
		t.Fatalf("read_file of a binary file: %q", text)
	}
	_, text = m.call("read_file", map[string]any{"path": "blob", "encoding": "base64"})
	if strings.TrimSpace(text) != base64.StdEncoding.EncodeToString(bin) {
		t.Fatalf("read_file base64: %q", text)
	}
	if res, text := m.call("write_file", map[string]any{"path": "copy", "content": base64.StdEncoding.EncodeToString(bin), "encoding": "base64"}); res.IsError {
		t.Fatalf("write_file base64: %s", text)
	}
	if got, _ := os.ReadFile(filepath.Join(w.project, "copy")); string(got) != string(bin) {
		t.Fatalf("write_file base64 wrote %q", got)
	}
}

// A connection to a loopback port nobody listens on inside says, once, how the host's
// loopback services are reached.
func TestMCPLoopbackHint(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	origin := httpOrigin(t, "host service")
	m := w.connectMCP("", nil)
	// After a command that succeeded, whose end the counts are read at while the agent is
	// away.
	m.call("run_command", map[string]any{"command": "true"})
	_, text := m.call("run_command", map[string]any{"command": "curl -sS --noproxy '*' http://" + origin + "/"})
	if !strings.Contains(text, "request_site") || !strings.Contains(text, origin) || !strings.Contains(text, "loopback") {
		t.Fatalf("no loopback hint: %s", text)
	}
	requireNoSelfApproval(t, "the loopback hint", text)
}

// A cancelled command is waited for by the next one, which then runs.
func TestMCPCancelledCommandThenAnother(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	_, stop := w.daemon()
	defer stop()
	m := w.connectMCP("", nil)
	ready := filepath.Join(w.project, "ready")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		m.cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_command", Arguments: map[string]any{
			"command": "trap 'sleep 1; exit 9' INT; touch " + ready + "; while :; do sleep 0.05; done"}})
		close(done)
	}()
	tstest.WaitFor(t, 20*time.Second, func() error { _, err := os.Stat(ready); return err })
	cancel()
	<-done
	res, text := m.call("run_command", map[string]any{"command": "echo next"})
	if res.IsError || !strings.Contains(text, "next") {
		t.Fatalf("the command after a cancelled one: %s", text)
	}
}

// mcpByHand starts openworker mcp for w with args, killed when the test ends, to talk to it
// by hand: in is its standard input, and lines are the JSON values it writes, in order,
// closed when it ends.
func (w *world) mcpByHand(args ...string) (io.WriteCloser, <-chan map[string]any) {
	w.t.Helper()
	c := w.cmd(append([]string{"mcp"}, args...)...)
	in, _ := c.StdinPipe()
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	lines := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
		close(lines)
	}()
	return in, lines
}

// By hand over stdio: a call before initialize gets the protocol's error code, a malformed
// line gets -32700 and the server goes on, a cancelled call gets no result, and calls read
// before the end of input are answered.
func TestMCPStdioByHand(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	in, lines := w.mcpByHand()
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatalf("%s: the server ended", what)
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no answer", what)
		}
		return nil
	}
	code := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		f, _ := e["code"].(float64)
		return f
	}
	send := func(s string) { io.WriteString(in, s+"\n") }
	send(`{"jsonrpc":"2.0","id":0,"method":"tools/list"}`)
	if m := next("tools/list before initialize"); code(m) != -32600 && code(m) != -32002 {
		t.Fatalf("tools/list before initialize: %v", m)
	}
	send(`garbage{`)
	if m := next("a malformed line"); code(m) != -32700 {
		t.Fatalf("a malformed line: %v", m)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	if m := next("initialize"); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"sleep 2; echo late"}}}`)
	time.Sleep(200 * time.Millisecond) // the call must be running when it is cancelled
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"echo answered"}}}`)
	in.Close()
	got := map[float64]bool{}
	for m := range lines {
		id, _ := m["id"].(float64)
		got[id] = true
		if id == 2 {
			t.Fatalf("a result was sent for the cancelled call: %v", m)
		}
	}
	if !got[3] {
		t.Fatal("the call read before the end of input was not answered")
	}
}

// A form answer that does not fit the form's choices (a client on the older revision, which
// the server asks with elicitation/create) ends the call with a tool result, not a JSON-RPC
// error: nothing was decided and the card waits for the person.
func TestMCPFormAnswerThatDoesNotFit(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	origin := httpOrigin(t, "hello")
	in, lines := w.mcpByHand()
	send := func(s string) { io.WriteString(in, s+"\n") }
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"x","version":"1"}}}`)
	<-lines
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"request_site","arguments":{"host":"` + origin + `","reason":"x"}}}`)
	for {
		var m map[string]any
		select {
		case m = <-lines:
		case <-time.After(30 * time.Second):
			t.Fatal("no answer to the call")
		}
		if m["method"] == "elicitation/create" {
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"action":"accept","content":{"decision":"bogus"}}}`, m["id"]))
			continue
		}
		if m["id"] != 2.0 {
			continue
		}
		res, _ := m["result"].(map[string]any)
		if m["error"] != nil || res == nil || res["isError"] != true {
			t.Fatalf("a form answer that does not fit: %v; want a tool result that says so", m)
		}
		b, _ := json.Marshal(res)
		if !strings.Contains(string(b), "nothing was decided") {
			t.Errorf("the result does not say nothing was decided: %s", b)
		}
		requireNoSelfApproval(t, "the misfit form's result", string(b))
		break
	}
	if out, _, _ := w.run("cards"); !strings.Contains(out, origin) {
		t.Errorf("the card is gone after an answer that did not fit:\n%s", out)
	}
}
