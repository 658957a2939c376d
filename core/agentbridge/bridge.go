// Package agentbridge carries an agent host's remote executor into a session: Codex runs
// every tool that touches the machine (its shell, apply_patch, view_image) on an executor it
// reaches over a WebSocket (CODEX_EXEC_SERVER_URL), and openworker agent serves that
// WebSocket on loopback and starts the executor for each connection inside the session,
// behind the wall, passing the executor's JSON-RPC messages both ways.
//
// It reads what passes only to do two things: to know when each process the executor runs
// starts and ends, and to add to that process's error output, as it ends, the sites the
// session's proxy blocked meanwhile, in the words a model reads. It decides nothing.
package agentbridge

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/websocket"
)

// Executor runs the executor's program in the session: with stdin as its standard input,
// handing its output to onChunk as it comes, until it ends or ctx does.
type Executor func(ctx context.Context, stdin io.Reader, onChunk func(stream string, data []byte)) error

// Bridge serves an executor's WebSocket.
type Bridge struct {
	// Token is the path a client must ask for (/TOKEN): the URL the host is given is the
	// only place it is written, so another program on this machine cannot connect.
	Token string
	// Run starts the executor inside the session, once per connection.
	Run Executor
	// Blocked returns what a model should read of the sites the session's proxy blocked
	// between two times ("" for none).
	Blocked func(from, to time.Time) string
	// Log is told of what went wrong, for the person's terminal.
	Log func(format string, a ...any)
}

// ServeHTTP takes a WebSocket on /TOKEN from a loopback client.
func (b *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(strings.TrimPrefix(r.URL.Path, "/")), []byte(b.Token)) != 1 || b.Token == "" {
		http.Error(w, "refused: this executor is openworker agent's, for the agent host it started", http.StatusUnauthorized)
		return
	}
	if r.Header.Get("Origin") != "" {
		// A web page's WebSocket always says where it comes from; the host's does not.
		http.Error(w, "refused: a web page may not connect here", http.StatusForbidden)
		return
	}
	websocket.Server{Handler: b.serve, Handshake: func(*websocket.Config, *http.Request) error { return nil }}.ServeHTTP(w, r)
}

// serve is one connection: one executor inside, its messages both ways.
func (b *Bridge) serve(ws *websocket.Conn) {
	defer ws.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in, feed := io.Pipe()
	t := &tracker{started: map[string]time.Time{}, offset: map[string]int64{}, stream: map[string]string{}, configReads: map[string]bool{}, blocked: b.Blocked}
	var sendMu sync.Mutex
	send := func(msg []byte) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return websocket.Message.Send(ws, string(msg))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var lines lineBuffer
		err := b.Run(ctx, in, func(stream string, data []byte) {
			if stream != "stdout" {
				return // the executor's own log
			}
			for _, line := range lines.add(data) {
				for _, msg := range t.fromExecutor(line) {
					if send(msg) != nil {
						cancel()
						return
					}
				}
			}
		})
		if err != nil && ctx.Err() == nil && b.Log != nil {
			b.Log("the host's executor in the session stopped: %v", err)
		}
		ws.Close()
	}()
	for {
		var msg []byte
		if err := websocket.Message.Receive(ws, &msg); err != nil {
			break
		}
		t.fromHost(msg)
		if _, err := feed.Write(append(bytes.TrimRight(msg, "\n"), '\n')); err != nil {
			break
		}
	}
	// The host went: the executor ends at the end of its input (and with ctx).
	feed.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cancel()
		<-done
	}
}

// lineBuffer splits a stream into lines.
type lineBuffer struct{ rest []byte }

func (l *lineBuffer) add(data []byte) [][]byte {
	l.rest = append(l.rest, data...)
	var out [][]byte
	for {
		i := bytes.IndexByte(l.rest, '\n')
		if i < 0 {
			return out
		}
		if i > 0 {
			out = append(out, bytes.Clone(l.rest[:i]))
		}
		l.rest = l.rest[i+1:]
	}
}

// tracker follows the executor's processes: when each started, and by how much its
// messages' sequence numbers are moved by what the bridge added.
type tracker struct {
	mu      sync.Mutex
	started map[string]time.Time
	offset  map[string]int64
	stream  map[string]string // the stream each process's output came on last
	// configReads are the host's reads of the project's configuration, by request ID.
	configReads map[string]bool
	blocked     func(from, to time.Time) string
}

// fromHost notes a process the host asks the executor to start, and a read of the
// project's configuration.
func (t *tracker) fromHost(msg []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProcessID string `json:"processId"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case m.Method == "process/start" && m.Params.ProcessID != "":
		t.started[m.Params.ProcessID] = time.Now()
	case m.Method == "environmentConfig/read" && len(m.ID) > 0:
		t.configReads[string(m.ID)] = true
	}
}

// withoutProjectConfig is the executor's answer to a read of the project's configuration
// with the configuration's layers taken out: they are read inside, where a command can have
// written the project's .codex/config.toml, and Codex would start the MCP servers they name
// outside the sandbox. The person's own configuration (~/.codex) Codex reads itself.
func withoutProjectConfig(top map[string]json.RawMessage) bool {
	var result map[string]json.RawMessage
	if json.Unmarshal(top["result"], &result) != nil {
		return false
	}
	var config map[string]json.RawMessage
	if json.Unmarshal(result["config"], &config) != nil || config == nil {
		return false
	}
	config["layers"] = json.RawMessage("[]")
	result["config"], _ = json.Marshal(config)
	top["result"], _ = json.Marshal(result)
	return true
}

// fromExecutor returns what the host gets for one message of the executor's: the message,
// its sequence number moved past what was added before it, and, before a process's exit, a
// piece of error output that names the sites blocked while it ran.
func (t *tracker) fromExecutor(line []byte) [][]byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(line, &top) != nil {
		return [][]byte{line}
	}
	if id, ok := top["id"]; ok && top["method"] == nil {
		t.mu.Lock()
		read := t.configReads[string(id)]
		delete(t.configReads, string(id))
		t.mu.Unlock()
		if read && withoutProjectConfig(top) {
			if b, err := json.Marshal(top); err == nil {
				return [][]byte{b}
			}
		}
		return [][]byte{line}
	}
	var method string
	var params map[string]json.RawMessage
	if json.Unmarshal(top["method"], &method) != nil || !strings.HasPrefix(method, "process/") || json.Unmarshal(top["params"], &params) != nil {
		return [][]byte{line}
	}
	var id string
	var seq int64
	if json.Unmarshal(params["processId"], &id) != nil || json.Unmarshal(params["seq"], &seq) != nil || id == "" {
		return [][]byte{line}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out [][]byte
	if method == "process/output" {
		var stream string
		if json.Unmarshal(params["stream"], &stream) == nil && stream != "" {
			t.stream[id] = stream
		}
	}
	if method == "process/exited" && t.blocked != nil {
		if start, ok := t.started[id]; ok {
			if note := t.blocked(start, time.Now()); note != "" {
				stream := t.stream[id]
				if stream == "" {
					stream = "stdout"
				}
				chunk := base64.StdEncoding.EncodeToString([]byte("\nopenworker: " + note + "\n"))
				added, _ := json.Marshal(map[string]any{"method": "process/output", "params": map[string]any{
					"processId": id, "seq": seq + t.offset[id], "stream": stream, "chunk": chunk}})
				out = append(out, added)
				t.offset[id]++
			}
		}
	}
	if off := t.offset[id]; off != 0 {
		params["seq"], _ = json.Marshal(seq + off)
		top["params"], _ = json.Marshal(params)
		if b, err := json.Marshal(top); err == nil {
			line = b
		}
	}
	if method == "process/closed" {
		delete(t.started, id)
		delete(t.offset, id)
		delete(t.stream, id)
	}
	return append(out, line)
}
