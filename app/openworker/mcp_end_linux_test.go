package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stdioMCP is `openworker mcp` driven by hand over its standard input and output.
type stdioMCP struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan map[string]any
	ended chan error
}

func (w *world) stdioMCP(args ...string) *stdioMCP {
	w.t.Helper()
	c := w.cmd(append([]string{"mcp"}, args...)...)
	in, _ := c.StdinPipe()
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { c.Process.Kill() })
	m := &stdioMCP{t: w.t, in: in, lines: make(chan map[string]any, 16), ended: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var msg map[string]any
			if json.Unmarshal(sc.Bytes(), &msg) == nil {
				m.lines <- msg
			}
		}
		close(m.lines)
		m.ended <- c.Wait()
	}()
	m.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	m.next("initialize")
	m.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return m
}

func (m *stdioMCP) send(s string) { io.WriteString(m.in, s+"\n") }

func (m *stdioMCP) next(what string) map[string]any {
	m.t.Helper()
	select {
	case msg, ok := <-m.lines:
		if !ok {
			m.t.Fatalf("%s: the server ended", what)
		}
		return msg
	case <-time.After(60 * time.Second):
		m.t.Fatalf("%s: no answer", what)
	}
	return nil
}

// A host stops a server by closing its input, and kills it soon after: a request_site that
// still waits for the person ends at once (its session is ending), and the server exits
// within 2 s with its session ended, not at the end of its ask's wait.
func TestMCPEndOfInputEndsAWaitingAsk(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	m := w.stdioMCP("--no-forms", "--ask-wait", "40s")
	m.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"request_site","arguments":{"host":"example.com","port":443,"reason":"docs"}}}`)
	// The card is up once the daemon shows it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, _, _ := w.run("cards")
		if strings.Contains(out, "example.com:443") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no card: %s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	m.in.Close()
	select {
	case <-m.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not exit after the end of its input")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the server took %v to exit after the end of its input", took)
	}
	tstest := func() string {
		b, _ := os.ReadFile(filepath.Join(w.state, "audit.jsonl"))
		return string(b)
	}
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(tstest(), `"type":"session.ended"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the session did not end:\n%s", tstest())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A server whose daemon was killed starts one again (its own), with a new session, and says
// in the next result that the session was restarted and what was lost; it never tells the
// model of a command that would change its own sandbox.
func TestMCPSurvivesItsDaemon(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	d, _ := w.daemon()
	m := w.connectMCP("", nil)
	if _, text := m.call("run_command", map[string]any{"command": "cd / && echo first"}); !strings.Contains(text, "first") {
		t.Fatalf("run_command: %s", text)
	}
	d.Process.Kill()
	d.Wait()
	res, text := m.call("run_command", map[string]any{"command": "echo second; pwd"})
	if res.IsError || !strings.Contains(text, "second") {
		t.Fatalf("run_command after the daemon was killed: %s", text)
	}
	if !strings.Contains(text, "restarted") || !strings.Contains(text, "working folder") {
		t.Errorf("the result does not say the session was restarted and what was lost: %s", text)
	}
	if strings.Contains(text, "openworker serve") || strings.Contains(text, "start it with") {
		t.Errorf("the model is told a command to run: %s", text)
	}
	if _, text := m.call("run_command", map[string]any{"command": "echo third"}); strings.Contains(text, "restarted") {
		t.Errorf("the restart is told again: %s", text)
	}
}

// A server whose settings file was never valid does not run with the defaults: it answers
// the handshake, and every call names the broken file, its line and column.
func TestMCPNeverValidSettings(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	w.settings("sandbox_network_hosts = [\"github.com\"\nsandbox_provider = \"linux\"\n")
	m := w.connectMCP("", nil)
	res, text := m.call("run_command", map[string]any{"command": "echo ran"})
	if !res.IsError || strings.Contains(text, "ran\n") || !strings.Contains(text, "config.toml:") || !strings.Contains(text, "no earlier version of it was valid") {
		t.Fatalf("a call with settings never valid: %s", text)
	}
}
