package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openworker/openworker/core/tstest"
)

// Both protocol revisions the server must answer: the current one (with multi-round-trip
// input requests) and an older initialize handshake (the SDK asks with elicitation/create).
var mcpRevisions = []string{"", "2025-06-18"}

type mcpClient struct {
	t   *testing.T
	cs  *sdk.ClientSession
	cmd *exec.Cmd
}

// connectMCP starts `openworker mcp` for w over stdio with the SDK's own client.
func (w *world) connectMCP(revision string, opts *sdk.ClientOptions, args ...string) *mcpClient {
	w.t.Helper()
	c := w.cmd(append([]string{"mcp"}, args...)...)
	var stderr strings.Builder
	c.Stderr = &stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: c}, &sdk.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		w.t.Fatalf("connecting to openworker mcp: %v\n%s", err, stderr.String())
	}
	m := &mcpClient{t: w.t, cs: cs, cmd: c}
	w.t.Cleanup(func() { cs.Close() })
	return m
}

func (m *mcpClient) call(name string, args map[string]any) (*sdk.CallToolResult, string) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := m.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		m.t.Fatalf("%s: %v", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return res, text.String()
}

func structured(t *testing.T, res *sdk.CallToolResult, into any) {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

func TestMCPToolsBehindTheWall(t *testing.T) {
	for _, rev := range mcpRevisions {
		t.Run("revision_"+strings.ReplaceAll(rev+"current", "-", ""), func(t *testing.T) {
			w := newWorld(t)
			requireSandbox(t, w)
			m := w.connectMCP(rev, nil, "--rw", ".")
			tools, err := m.cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			slices.Sort(names)
			if strings.Join(names, ",") != "list_directory,read_file,request_site,run_command,session_info,web_fetch,write_file" {
				t.Fatalf("tools: %v", names)
			}
			// Shell state persists between commands.
			os.Mkdir(filepath.Join(w.project, "sub"), 0o755)
			m.call("run_command", map[string]any{"command": "cd sub && export COLOR=green"})
			res, _ := m.call("run_command", map[string]any{"command": `echo "$(pwd) $COLOR"; ls ` + w.home + ` 2>&1; exit 3`})
			var r struct {
				ExitCode    int    `json:"exit_code"`
				Stdout      string `json:"stdout"`
				Enforcement string `json:"enforcement"`
			}
			structured(t, res, &r)
			if r.ExitCode != 3 || !strings.HasPrefix(r.Stdout, filepath.Join(w.project, "sub")+" green\n") || !strings.Contains(r.Stdout, "No such file") || r.Enforcement != "linux" {
				t.Fatalf("run_command: %+v", r)
			}
			// File tools.
			if res, text := m.call("write_file", map[string]any{"path": "notes.txt", "content": "hello"}); res.IsError {
				t.Fatalf("write_file: %s", text)
			}
			if _, text := m.call("read_file", map[string]any{"path": filepath.Join(w.project, "sub", "notes.txt")}); text != "hello" {
				t.Fatalf("read_file: %q", text)
			}
			if _, text := m.call("list_directory", map[string]any{"path": "."}); !strings.Contains(text, "notes.txt") {
				t.Fatalf("list_directory: %q", text)
			}
			// A refusal is a tool error the model can act on, not a protocol error.
			res, text := m.call("read_file", map[string]any{"path": filepath.Join(w.home, ".ssh", "id_ed25519")})
			if !res.IsError || !strings.Contains(text, "no such file") || strings.Contains(text, "planted") {
				t.Fatalf("reading the secret: %v %q", res.IsError, text)
			}
			if res, text := m.call("run_command", map[string]any{"command": ""}); !res.IsError || !strings.Contains(text, "empty") {
				t.Fatalf("an empty command: %v %q", res.IsError, text)
			}
			res, text = m.call("session_info", map[string]any{})
			var info struct {
				Enforcement string `json:"enforcement"`
				Network     string `json:"network"`
				Writable    []struct{ Given, Resolved string }
			}
			structured(t, res, &info)
			if info.Enforcement != "linux" || info.Network != "allowlist" || len(info.Writable) != 1 || info.Writable[0].Resolved != w.project {
				t.Fatalf("session_info: %s", text)
			}
		})
	}
}

// Standard output is the protocol's alone: descriptor 1 of the server is its standard
// error, and the protocol's descriptor is not passed to children.
func TestMCPStdoutIsTheProtocolsAlone(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	m := w.connectMCP("", nil)
	m.call("run_command", map[string]any{"command": "echo to the command's stdout; echo >&2 to its stderr"})
	pid := m.cmd.Process.Pid
	one, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/1", pid))
	two, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/2", pid))
	if one == "" || one != two {
		t.Fatalf("the server's descriptor 1 is %q, its standard error %q", one, two)
	}
	// A command inherits only its standard streams: ls sees 0, 1, 2 and its own listing.
	res, text := m.call("run_command", map[string]any{"command": "ls /proc/self/fd"})
	var r struct{ Stdout string }
	structured(t, res, &r)
	if fds := strings.Fields(r.Stdout); strings.Join(fds, " ") != "0 1 2 3" {
		t.Fatalf("a command holds descriptors %v besides its standard streams (%s)", fds, text)
	}
	// The protocol still works.
	if _, text := m.call("run_command", map[string]any{"command": "echo ok"}); !strings.Contains(text, "ok") {
		t.Fatalf("after the command: %q", text)
	}
}

func TestMCPBlockedSiteAndRequestAnsweredOnTheCLI(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	origin := httpOrigin(t, "hello from the origin")
	m := w.connectMCP("", nil)
	res, text := m.call("run_command", map[string]any{"command": "curl -sSf --noproxy '' http://" + origin + "/"})
	var r struct {
		ExitCode int      `json:"exit_code"`
		Blocked  []string `json:"blocked_sites"`
		Notice   string   `json:"notice"`
	}
	structured(t, res, &r)
	if r.ExitCode == 0 || !slices.Contains(r.Blocked, origin) || !strings.Contains(r.Notice, "request_site") {
		t.Fatalf("a blocked site in the result: %s", text)
	}
	// Nobody watches cards and the client cannot ask its person: the card waits for
	// openworker answer.
	done := make(chan string, 1)
	go func() {
		res, _ := m.call("request_site", map[string]any{"host": origin, "reason": "the tests fetch fixtures there"})
		var a struct{ Decision string }
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &a)
		done <- a.Decision
	}()
	var card string
	tstest.WaitFor(t, 20*time.Second, func() error {
		out, errs, _ := w.run("cards")
		if f := strings.Fields(out); len(f) > 0 && strings.Contains(out, origin) {
			card = f[0]
			return nil
		}
		return fmt.Errorf("no card: %q %s", out, errs)
	})
	if _, errs, code := w.run("answer", card, "session"); code != 0 {
		t.Fatalf("answer: %s", errs)
	}
	if d := <-done; d != "session" {
		t.Fatalf("request_site: %q", d)
	}
	if _, text := m.call("run_command", map[string]any{"command": "curl -sSf --noproxy '' http://" + origin + "/"}); !strings.Contains(text, "hello from the origin") {
		t.Fatalf("after the answer: %s", text)
	}
}

func TestMCPRequestSiteThroughElicitation(t *testing.T) {
	for _, rev := range mcpRevisions {
		for _, tc := range []struct {
			name     string
			result   *sdk.ElicitResult
			decision string
		}{
			{"accept", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "session"}}, "session"},
			{"decline", &sdk.ElicitResult{Action: "decline"}, "denied"},
			{"cancel", &sdk.ElicitResult{Action: "cancel"}, "no answer yet"},
			{"always", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "always"}}, "always"},
		} {
			t.Run(tc.name+"_"+strings.ReplaceAll(rev+"current", "-", ""), func(t *testing.T) {
				w := newWorld(t)
				requireSandbox(t, w)
				origin := httpOrigin(t, "hello")
				var asked []string
				m := w.connectMCP(rev, &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					return tc.result, nil
				}})
				res, text := m.call("request_site", map[string]any{"host": origin, "reason": "fixtures"})
				var a struct{ Decision string }
				structured(t, res, &a)
				if a.Decision != tc.decision || len(asked) != 1 || !strings.Contains(asked[0], origin) || !strings.Contains(asked[0], "fixtures") {
					t.Fatalf("decision %q (%s), asked %q", a.Decision, text, asked)
				}
				// A cancelled form is no answer: the card waits for the person.
				if out, _, _ := w.run("cards"); strings.Contains(out, origin) != (tc.name == "cancel") {
					t.Fatalf("after %s the cards are: %s", tc.name, out)
				}
			})
		}
	}
}

func TestMCPCancelInterruptsAndDisconnectCleansUp(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	m := w.connectMCP("", nil)
	cleaned := filepath.Join(w.project, "cleaned")
	ready := filepath.Join(w.project, "ready")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_command", Arguments: map[string]any{
			"command": "trap 'echo cleaned > " + cleaned + "; exit 9' INT; touch " + ready + "; while :; do sleep 0.05; done"}})
		done <- err
	}()
	tstest.WaitFor(t, 20*time.Second, func() error {
		if _, err := os.Stat(ready); err != nil {
			return err
		}
		return nil
	})
	cancel()
	<-done
	tstest.WaitFor(t, 10*time.Second, func() error {
		if _, err := os.Stat(cleaned); err != nil {
			return fmt.Errorf("the cancelled command's INT trap did not run: %v", err)
		}
		return nil
	})
	// The session goes on after a cancel.
	if _, text := m.call("run_command", map[string]any{"command": `echo "$TMPDIR" > tmpdir.txt; echo again`}); !strings.Contains(text, "again") {
		t.Fatalf("after the cancel: %s", text)
	}
	// Disconnecting ends everything: the server exits, its private tmp is gone.
	m.cs.Close()
	exited := make(chan struct{})
	go func() { m.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		t.Fatal("the server did not exit after the client disconnected")
	}
	w.requireGone("tmpdir.txt")
	// The daemon it started for agents ends once its last session has.
	tstest.WaitFor(t, 15*time.Second, func() error {
		if _, err := os.Stat(filepath.Join(w.state, "openworker.sock")); err == nil {
			return fmt.Errorf("the agents' daemon left its socket")
		}
		return nil
	})
}

// Attached to a running daemon, the server's session and cards are the daemon's.
func TestMCPAttachesToTheDaemon(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	_, stop := w.daemon()
	defer stop()
	m := w.connectMCP("", nil)
	res, text := m.call("session_info", map[string]any{})
	var info struct {
		Session  string
		Attached string
	}
	structured(t, res, &info)
	if !strings.HasSuffix(info.Attached, "openworker.sock") {
		t.Fatalf("not attached to the daemon: %s", text)
	}
	out, _, _ := w.run("session", "ls")
	if !strings.Contains(out, info.Session) || !strings.Contains(out, "linux sandbox,") {
		t.Fatalf("the daemon does not list the server's session %s:\n%s", info.Session, out)
	}
	if _, text := m.call("run_command", map[string]any{"command": "echo through the daemon"}); !strings.Contains(text, "through the daemon") {
		t.Fatalf("run_command: %s", text)
	}
	m.cs.Close()
	m.cmd.Wait()
	tstest.WaitFor(t, 10*time.Second, func() error {
		if out, _, _ := w.run("session", "ls"); strings.Contains(out, info.Session) {
			return fmt.Errorf("the session outlived its client: %s", out)
		}
		return nil
	})
	if out, _, _ := w.run("audit", "--session", info.Session); !strings.Contains(out, "its MCP client disconnected") {
		t.Fatalf("session.ended does not say its client disconnected:\n%s", out)
	}
}

// web_fetch runs outside the sandbox under the same list: a site that is not on it is asked
// for on a card, and answered Once it is fetched that one time.
func TestMCPWebFetch(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	origin := httpOrigin(t, "<html><title>Docs</title><body><p>install it</p><script>x()</script></body></html>")
	m := w.connectMCP("", nil)
	done := make(chan string, 1)
	go func() {
		_, text := m.call("web_fetch", map[string]any{"url": "http://" + origin + "/", "reason": "read the docs"})
		done <- text
	}()
	var card string
	tstest.WaitFor(t, 20*time.Second, func() error {
		out, errs, _ := w.run("cards")
		if f := strings.Fields(out); len(f) > 0 && strings.Contains(out, origin) && strings.Contains(out, "(fetch;") {
			card = f[0]
			return nil
		}
		return fmt.Errorf("no fetch card: %q %s", out, errs)
	})
	if _, errs, code := w.run("answer", card, "once"); code != 0 {
		t.Fatalf("answer once: %s", errs)
	}
	if text := <-done; !strings.Contains(text, "title: Docs") || !strings.Contains(text, "install it") || strings.Contains(text, "x()") {
		t.Fatalf("web_fetch: %q", text)
	}
	// Once was that fetch only: the next one asks again.
	go func() {
		_, text := m.call("web_fetch", map[string]any{"url": "http://" + origin + "/"})
		done <- text
	}()
	tstest.WaitFor(t, 20*time.Second, func() error {
		out, _, _ := w.run("cards")
		if f := strings.Fields(out); len(f) > 0 && strings.Contains(out, origin) {
			card = f[0]
			return nil
		}
		return fmt.Errorf("the second fetch did not ask: %q", out)
	})
	w.run("answer", card, "deny")
	if text := <-done; !strings.Contains(text, "not fetched: denied") {
		t.Fatalf("after deny: %q", text)
	}
}

// With a progress token, a command's output comes as progress notifications while it runs,
// before the result.
func TestMCPProgressStreamsOutput(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	// The command writes its error line only once its first line has reached the client: so
	// the output comes while the command runs, and no pause in the script races the
	// notifications.
	gotFirst := filepath.Join(w.project, "got-first")
	var mu sync.Mutex
	var got []string
	m := w.connectMCP("", &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, req.Params.Message)
		mu.Unlock()
		if req.Params.Message == "stdout: first\n" {
			if err := os.WriteFile(gotFirst, nil, 0o644); err != nil {
				t.Error(err)
			}
		}
	}})
	params := &sdk.CallToolParams{Name: "run_command", Arguments: map[string]any{
		"command":         "echo first; while [ ! -e got-first ]; do sleep 0.01; done; echo second >&2",
		"timeout_seconds": 20,
	}}
	params.SetProgressToken("tok-1")
	res, err := m.cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("run_command: %v %+v", err, res)
	}
	// The client hands the result to its caller as it arrives but queues notifications for
	// their handler, so the last one may still be on its way there.
	tstest.WaitFor(t, 5*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(got, "|") != "stdout: first\n|stderr: second\n" {
			return fmt.Errorf("progress notifications: %q", got)
		}
		return nil
	})
}

// session_info answers at once while a command runs, and a second command waits its turn
// in the session's one shell rather than failing.
func TestMCPConcurrentCalls(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	m := w.connectMCP("", nil)
	// The first command runs until the test releases it, not for a scripted while that a
	// busy machine could outlast.
	ready, release := filepath.Join(w.project, "ready"), filepath.Join(w.project, "release")
	long := make(chan string, 1)
	// m.call fails the test from these goroutines; the deferred send still comes.
	go func() {
		var text string
		defer func() { long <- text }()
		_, text = m.call("run_command", map[string]any{
			"command":         "touch " + ready + "; while [ ! -e " + release + " ]; do sleep 0.01; done; echo long done",
			"timeout_seconds": 60,
		})
	}()
	tstest.WaitFor(t, 20*time.Second, func() error { _, err := os.Stat(ready); return err })
	if res, text := m.call("session_info", map[string]any{}); res.IsError {
		t.Fatalf("session_info during a command: %s", text)
	}
	select {
	case <-long:
		t.Fatal("session_info answered only once the running command had ended")
	default:
	}
	second := make(chan string, 1)
	go func() {
		var text string
		defer func() { second <- text }()
		_, text = m.call("run_command", map[string]any{"command": "echo second"})
	}()
	// That the second command waits has no signal: only a window in which it does not
	// return can show it.
	select {
	case text := <-second:
		t.Fatalf("the second command returned while the first still ran: %q", text)
	case <-time.After(300 * time.Millisecond):
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	first, secondText := <-long, <-second
	if !strings.Contains(first, "long done") || !strings.Contains(secondText, "second") {
		t.Fatalf("concurrent commands: %q %q", first, secondText)
	}
}

// web_fetch asks through the client's form when nobody watches cards: Once fetches that one
// time, and the next fetch asks again.
func TestMCPWebFetchThroughElicitation(t *testing.T) {
	for _, rev := range mcpRevisions {
		t.Run("revision_"+strings.ReplaceAll(rev+"current", "-", ""), func(t *testing.T) {
			w := newWorld(t)
			requireSandbox(t, w)
			origin := httpOrigin(t, "<title>Docs</title><p>the page</p>")
			var mu sync.Mutex
			var asked []string
			answer := "once"
			m := w.connectMCP(rev, &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, req.Params.Message)
				if answer == "decline" {
					return &sdk.ElicitResult{Action: "decline"}, nil
				}
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": answer}}, nil
			}})
			res, text := m.call("web_fetch", map[string]any{"url": "http://" + origin + "/", "reason": "read the docs"})
			if res.IsError || !strings.Contains(text, "the page") || len(asked) != 1 || !strings.Contains(asked[0], "web fetch wants to reach "+origin) {
				t.Fatalf("web_fetch answered Once: %q, asked %q", text, asked)
			}
			mu.Lock()
			answer = "decline"
			mu.Unlock()
			res, text = m.call("web_fetch", map[string]any{"url": "http://" + origin + "/"})
			if !res.IsError || !strings.Contains(text, "denied") || len(asked) != 2 {
				t.Fatalf("the second fetch, declined: %q, asked %d times", text, len(asked))
			}
			if out, _, _ := w.run("cards"); strings.Contains(out, origin) {
				t.Fatalf("a card was left up: %s", out)
			}
		})
	}
}
