package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
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
	if err := Show(context.Background(), path, &out, ShowOptions{}); err != nil {
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
	// Every file is older than KeepFor by the log's clock: only Keep rotated files stay.
	l.now = func() time.Time { return time.Now().Add(DefaultKeepFor + time.Hour) }
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

func TestFollowStartsAtTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, _ := Open(path)
	defer l.Close()
	l.Write(Event{Type: SessionStarted, Session: "old"})
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw, _ := os.Pipe()
	done := make(chan error)
	atEnd := make(chan struct{})
	go func() {
		done <- Show(ctx, path, pw, ShowOptions{Follow: true, atEnd: func() { close(atEnd) }})
		pw.Close()
	}()
	<-atEnd
	l.Write(Event{Type: SessionStarted, Session: "abc"})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.Contains(line, "session.started  abc") {
		t.Fatalf("followed %q %v; want the new event first, not the old one", line, err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("follow did not stop")
	}
}

func TestShowEscapesAndFilters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, _ := Open(path)
	then := time.Now().Add(-time.Hour)
	l.Write(Event{Time: then, Type: ToolCall, Session: "s1", Summary: "echo old"})
	// A command that tries to forge a line and to drive the terminal.
	l.Write(Event{Type: ToolCall, Session: "s1", Summary: "true\n2026-01-01 00:00:00  session.ended  s1\x1b]0;owned\x07 \u202e"})
	l.Write(Event{Type: ToolCall, Session: "s2", Summary: "echo other"})
	l.Close()
	var out strings.Builder
	if err := Show(context.Background(), path, &out, ShowOptions{Session: "s1", Since: then.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.Count(got, "\n") != 1 {
		t.Fatalf("want one line (session s1, since), got:\n%s", got)
	}
	for _, bad := range []string{"\x1b", "\x07", "\u202e", "echo other", "echo old"} {
		if strings.Contains(got, bad) {
			t.Errorf("the output holds %q:\n%q", bad, got)
		}
	}
	if !strings.Contains(got, `true\n2026-01-01`) || !strings.Contains(got, `\x1b]0;owned\x07 \u202e`) {
		t.Errorf("the summary is not shown escaped: %q", got)
	}
}

// What a command or an agent chose (a path, a summary, a reason, the sites it tried) is
// kept only to a bound, and the record says which fields were cut: five reads of a 4.5 MiB
// path must not rotate the trail away.
func TestFieldsAreBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, _ := Open(path)
	l.Write(Event{Type: SessionStarted, Session: "s0"})
	huge := strings.Repeat("é", 9<<19) // 9 MiB
	many := make([]string, 10000)
	for i := range many {
		many[i] = "h" + strconv.Itoa(i) + ".example.com:443"
	}
	for i := 0; i < 5; i++ {
		if err := l.Write(Event{Type: ToolCall, Session: "s1", Tool: "read", Summary: huge, Reason: huge, Blocked: many, Denials: []string{huge}}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if _, err := os.Stat(path + ".1"); err == nil {
		t.Fatal("five calls rotated the trail")
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 6 || !strings.Contains(lines[0], `"s0"`) {
		t.Fatalf("%d lines", len(lines))
	}
	var e Event
	if err := json.Unmarshal([]byte(lines[1]), &e); err != nil {
		t.Fatal(err)
	}
	if len(lines[1]) > 64<<10 || len(e.Summary) > MaxField+len("…") || len(e.Blocked) > MaxItems+1 || !utf8.ValidString(e.Summary) {
		t.Fatalf("a record of %d bytes, summary %d, %d blocked", len(lines[1]), len(e.Summary), len(e.Blocked))
	}
	if strings.Join(e.Cut, ",") != "summary,reason,blocked,denials" {
		t.Fatalf("cut fields %v", e.Cut)
	}
	if !strings.Contains(Format(e), "(cut: summary, reason, blocked, denials)") {
		t.Fatalf("the readable line does not say what was cut: %.300q", Format(e))
	}
}

// Rotation never deletes records younger than KeepFor: more files are kept instead, and
// audit shows them all.
func TestRotationKeepsRecentRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, _ := Open(path)
	l.SetMaxSize(1000)
	for i := 0; i < 100; i++ {
		if err := l.Write(Event{Type: ToolCall, Session: "s1", Summary: "call " + strconv.Itoa(i) + strings.Repeat("x", 50)}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	var out bytes.Buffer
	if err := Show(context.Background(), path, &out, ShowOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if !strings.Contains(out.String(), "call "+strconv.Itoa(i)+"x") {
			t.Fatalf("record %d of today was rotated away", i)
		}
	}
}

// Past MaxFiles files, the oldest goes whatever its age, and the trail says so.
func TestRotationPastMaxFilesSaysSo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, _ := Open(path)
	l.SetMaxSize(300)
	for i := 0; i < 3*(MaxFiles+5); i++ {
		if err := l.Write(Event{Type: ToolCall, Session: "s1", Summary: strings.Repeat("x", 80)}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if n := rotated(path); n != MaxFiles {
		t.Fatalf("%d rotated files, want %d", n, MaxFiles)
	}
	var out bytes.Buffer
	Show(context.Background(), path, &out, ShowOptions{})
	if !strings.Contains(out.String(), Dropped) || !strings.Contains(out.String(), "the trail had reached") {
		t.Fatalf("no record says young records were deleted:\n%.2000s", out.String())
	}
}
