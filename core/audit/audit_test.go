package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWriteAndShow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	code := 0
	l.Write(Event{Type: ToolCall, Session: "s1", Tool: "exec", Summary: "true", Enforcement: "linux", Network: "allowlist", ExitCode: &code, Blocked: []string{"example.com:443"}})
	l.Close()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit file mode: %v %v", fi.Mode(), err)
	}
	b, _ := os.ReadFile(path)
	var e Event
	if err := json.Unmarshal(bytes.TrimSpace(b), &e); err != nil || e.Enforcement != "linux" || e.Time.IsZero() {
		t.Fatalf("line %s: %v %+v", b, err, e)
	}
	var out bytes.Buffer
	if err := Show(context.Background(), path, &out, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "tool.call  s1  [linux, allowlist]  exec: true  exit 0  blocked example.com:443") {
		t.Fatalf("readable line: %q", out.String())
	}
}

func TestRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, _ := Open(path)
	l.SetMaxSize(1000)
	for i := 0; i < 100; i++ {
		if err := l.Write(Event{Type: ToolCall, Summary: strings.Repeat("x", 50)}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	for _, p := range []string{path, path + ".1", path + ".2", path + ".3"} {
		fi, err := os.Stat(p)
		if err != nil || fi.Size() > 1000 {
			t.Fatalf("%s: %v size %d", p, err, fi.Size())
		}
	}
	if _, err := os.Stat(path + ".4"); err == nil {
		t.Fatal("kept more than 3 rotated files")
	}
	f, _ := os.Open(path)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("torn line after rotation: %q", sc.Text())
		}
	}
}

func TestFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, _ := Open(path)
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw, _ := os.Pipe()
	done := make(chan error)
	go func() { done <- Show(ctx, path, pw, true); pw.Close() }()
	l.Write(Event{Type: SessionStarted, Session: "abc"})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.Contains(line, "session.started  abc") {
		t.Fatalf("followed %q %v", line, err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("follow did not stop")
	}
}
