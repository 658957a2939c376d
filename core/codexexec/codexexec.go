// Package codexexec reads the messages between Codex and its executor (codex exec-server,
// JSON-RPC a line) as they pass through OpenWorker, which starts the executor inside the
// session: to know when each process the executor runs starts and ends, to add to a process's
// output, as it ends, the sites the session's proxy blocked meanwhile, and to take out of the
// executor's answer the project's configuration it reads inside, where a command could have
// written it. It changes nothing else, and decides nothing.
package codexexec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"time"
)

// Lines splits a stream into lines.
type Lines struct{ rest []byte }

// Add takes the next piece of the stream and returns the lines it completed.
func (l *Lines) Add(data []byte) [][]byte {
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

// Stream follows the executor's processes: when each started, and by how much its
// messages' sequence numbers are moved by what was added.
type Stream struct {
	mu      sync.Mutex
	started map[string]time.Time
	offset  map[string]int64
	stream  map[string]string // the stream each process's output came on last
	// configReads are the host's reads of the project's configuration, by request ID.
	configReads map[string]bool
	blocked     func(from, to time.Time) string
}

// FromHost notes a process the host asks the executor to start, and a read of the
// project's configuration.
func (t *Stream) FromHost(msg []byte) {
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

// FromExecutor returns what the host gets for one message of the executor's: the message,
// its sequence number moved past what was added before it, and, before a process's exit, a
// piece of error output that names the sites blocked while it ran.
func (t *Stream) FromExecutor(line []byte) [][]byte {
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

// NewStream follows a connection; blocked returns what a model reads of the sites blocked
// between two times ("" for none), or is nil.
func NewStream(blocked func(from, to time.Time) string) *Stream {
	return &Stream{started: map[string]time.Time{}, offset: map[string]int64{}, stream: map[string]string{}, configReads: map[string]bool{}, blocked: blocked}
}
