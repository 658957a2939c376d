package codexexec

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestLines(t *testing.T) {
	var l Lines
	var got []string
	for _, p := range []string{"{\"a\":1}\n{\"b\"", ":2}\n\n", "{\"c\":3}"} {
		for _, line := range l.Add([]byte(p)) {
			got = append(got, string(line))
		}
	}
	if strings.Join(got, "|") != `{"a":1}|{"b":2}` {
		t.Fatal(got)
	}
}

// A note on the sites blocked while a process ran comes as its last output, and every later
// message of that process keeps counting from there.
func TestBlockedNoteComesBeforeTheExit(t *testing.T) {
	s := NewStream(func(from, to time.Time) string {
		if to.Before(from) {
			return ""
		}
		return "blocked x.example:443"
	})
	s.FromHost([]byte(`{"id":7,"method":"process/start","params":{"processId":"p1","argv":["true"]}}`))
	var out []string
	for _, line := range []string{
		`{"id":7,"result":{"processId":"p1"}}`,
		`{"method":"process/output","params":{"processId":"p1","seq":1,"stream":"pty","chunk":"aGk="}}`,
		`{"method":"process/exited","params":{"processId":"p1","seq":2,"exitCode":0}}`,
		`{"method":"process/closed","params":{"processId":"p1","seq":3}}`,
		`{"method":"process/output","params":{"processId":"other","seq":1,"stream":"stdout","chunk":""}}`,
	} {
		for _, m := range s.FromExecutor([]byte(line)) {
			out = append(out, string(m))
		}
	}
	if len(out) != 6 {
		t.Fatalf("%d messages:\n%s", len(out), strings.Join(out, "\n"))
	}
	var note struct {
		Method string
		Params struct {
			ProcessID string
			Seq       int64
			Stream    string
			Chunk     string
		}
	}
	if err := json.Unmarshal([]byte(out[2]), &note); err != nil || note.Method != "process/output" || note.Params.Seq != 2 || note.Params.Stream != "pty" {
		t.Fatalf("the note: %s %v", out[2], err)
	}
	if b, _ := base64.StdEncoding.DecodeString(note.Params.Chunk); !strings.Contains(string(b), "openworker: blocked x.example:443") {
		t.Fatalf("the note says %q", b)
	}
	for i, want := range map[int]string{3: `"seq":3`, 4: `"seq":4`, 5: `"seq":1`} {
		if !strings.Contains(out[i], want) {
			t.Errorf("message %d: %s; want %s", i, out[i], want)
		}
	}
}

// The project's configuration the executor reads inside never reaches Codex, which would
// start the MCP servers it names outside; the rest of the answer does.
func TestProjectConfigIsTakenOut(t *testing.T) {
	s := NewStream(nil)
	s.FromHost([]byte(`{"id":10,"method":"environmentConfig/read","params":{"cwd":"file:///w","configPaths":[["mcp_servers"]]}}`))
	out := s.FromExecutor([]byte(`{"id":10,"result":{"userHomeDir":"file:///h","config":{"layers":[{"mcp_servers":{"evil":{"command":"sh"}}}],"cloudInsertionIndex":0},"requirements":{"layers":[]}}}`))
	if len(out) != 1 || strings.Contains(string(out[0]), "evil") || !strings.Contains(string(out[0]), `"userHomeDir":"file:///h"`) || !strings.Contains(string(out[0]), `"layers":[]`) {
		t.Fatalf("%s", out)
	}
	// Another answer with the same shape is passed as it is.
	other := `{"id":11,"result":{"config":{"layers":[1]}}}`
	if out := s.FromExecutor([]byte(other)); string(out[0]) != other {
		t.Fatalf("%s", out)
	}
}
