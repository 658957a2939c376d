// Package audit is the audit trail: one JSON line per session or tool-call event, written
// from outside the wall, each with the enforcement level that produced it. It is written by
// the core only; nothing inside a sandbox can reach it.
package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Event types.
const (
	SessionStarted = "session.started"
	SessionRefused = "session.refused"
	SessionEnded   = "session.ended"
	SessionRestart = "session.restarted"
	ToolStarted    = "tool.started"
	ToolCall       = "tool.call"
	// GitMetadataMoved: repository hooks or settings a command planted were moved aside
	// outside a tool call (when the wall was made again, or at the session's end); inside
	// one, the tool.call event names them.
	GitMetadataMoved = "git_metadata.moved"
)

// Event is one line of the audit trail.
type Event struct {
	Time        time.Time `json:"time"`
	Type        string    `json:"type"`
	Session     string    `json:"session,omitempty"`
	Tool        string    `json:"tool,omitempty"`
	Summary     string    `json:"summary,omitempty"`
	Enforcement string    `json:"enforcement,omitempty"`
	Network     string    `json:"network,omitempty"`
	ExitCode    *int      `json:"exit_code,omitempty"`
	DurationMS  float64   `json:"duration_ms,omitempty"`
	Blocked     []string  `json:"blocked,omitempty"`
	Denials     []string  `json:"denials,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	// Outcome says how a tool call ended when it did not end by itself: "interrupted",
	// "timed out", "failed", or "daemon ended" (written at the next start).
	Outcome string   `json:"outcome,omitempty"`
	Folders []string `json:"folders,omitempty"`
	// GitMetadataMoved names each repository hook or settings file a command planted and
	// where it was moved (see sandbox_git_metadata).
	GitMetadataMoved []string `json:"git_metadata_moved,omitempty"`
}

// Log appends events to a file and rotates it by size.
type Log struct {
	mu      sync.Mutex
	path    string
	f       *os.File
	size    int64
	maxSize int64
	keep    int
	now     func() time.Time
}

// DefaultMaxSize is the size at which the file is rotated; Keep old files are kept.
const (
	DefaultMaxSize = 8 << 20
	DefaultKeep    = 3
)

// Open opens (creating, owner-only) the audit file at path.
func Open(path string) (*Log, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	l := &Log{path: path, maxSize: DefaultMaxSize, keep: DefaultKeep, now: time.Now}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Log) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: %w", err)
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Path is the file the log appends to; rotated files lie beside it.
func (l *Log) Path() string { return l.path }

// SetMaxSize changes the rotation size (for tests and settings).
func (l *Log) SetMaxSize(n int64) { l.mu.Lock(); l.maxSize = n; l.mu.Unlock() }

// Write appends one event. A zero Time is set to now.
func (l *Log) Write(e Event) error {
	if l == nil {
		return nil
	}
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("audit: log is closed")
	}
	if l.size > 0 && l.size+int64(len(b)) > l.maxSize {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	n, err := l.f.Write(b)
	l.size += int64(n)
	return err
}

func (l *Log) rotate() error {
	l.f.Close()
	for i := l.keep - 1; i >= 1; i-- {
		_ = os.Rename(l.path+"."+strconv.Itoa(i), l.path+"."+strconv.Itoa(i+1))
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("audit: rotating: %w", err)
	}
	return l.open()
}

// Close closes the file.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Format renders an event as one readable line. Every field is written as data: a control
// character or a terminal escape in a command (which the agent chose) is shown escaped, so
// that it can neither forge a line nor drive the terminal.
func Format(e Event) string {
	var b strings.Builder
	b.WriteString(e.Time.Local().Format("2006-01-02 15:04:05"))
	b.WriteString("  ")
	b.WriteString(Clean(e.Type))
	if e.Session != "" {
		b.WriteString("  " + Clean(e.Session))
	}
	if e.Enforcement != "" {
		b.WriteString("  [" + Clean(e.Enforcement))
		if e.Network != "" {
			b.WriteString(", " + Clean(e.Network))
		}
		b.WriteString("]")
	}
	if e.Tool != "" {
		b.WriteString("  " + Clean(e.Tool))
	}
	if e.Summary != "" {
		b.WriteString(": " + Clean(e.Summary))
	}
	if e.ExitCode != nil {
		b.WriteString("  exit " + strconv.Itoa(*e.ExitCode))
	}
	if e.DurationMS > 0 {
		b.WriteString("  " + strconv.FormatFloat(e.DurationMS, 'f', 1, 64) + " ms")
	}
	if e.Outcome != "" {
		b.WriteString("  (" + Clean(e.Outcome) + ")")
	}
	if len(e.Blocked) > 0 {
		b.WriteString("  blocked " + Clean(strings.Join(e.Blocked, ", ")))
	}
	if len(e.Denials) > 0 {
		b.WriteString("  denied " + Clean(strings.Join(e.Denials, "; ")))
	}
	if e.Reason != "" {
		b.WriteString("  — " + Clean(e.Reason))
	}
	return b.String()
}

// Clean returns s with what a terminal would act on escaped: control characters (C0, DEL,
// C1, which start escape sequences), bidirectional overrides that reorder what is shown, and
// invalid UTF-8. Everything else is kept as it is.
func Clean(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unsafeRune(r):
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f
}

// ShowOptions choose what Show prints.
type ShowOptions struct {
	// Follow keeps printing new events as they are written. It starts at the end of the
	// trail unless Since is set.
	Follow bool
	// Session, when set, keeps only that session's events.
	Session string
	// Since, when set, keeps only events at or after it.
	Since time.Time
	// atEnd, for tests, is called once a follow has read all there was.
	atEnd func()
}

func (o ShowOptions) keep(e Event) bool {
	return (o.Session == "" || e.Session == o.Session) && (o.Since.IsZero() || !e.Time.Before(o.Since))
}

// Show writes the events of the trail at path to w, readably, the rotated files first.
// With Follow it keeps going, printing new events as they are written, until ctx ends.
func Show(ctx context.Context, path string, w io.Writer, o ShowOptions) error {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !o.Follow {
			return fmt.Errorf("no audit trail yet at %s: nothing has run", path)
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	print := func(line []byte) {
		var e Event
		if json.Unmarshal(line, &e) == nil && o.keep(e) {
			fmt.Fprintln(w, Format(e))
		}
	}
	fromStart := !o.Follow || !o.Since.IsZero()
	if fromStart {
		for i := DefaultKeep; i >= 1; i-- {
			old, err := os.Open(path + "." + strconv.Itoa(i))
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(old)
			sc.Buffer(make([]byte, 64<<10), 16<<20)
			for sc.Scan() {
				print(sc.Bytes())
			}
			old.Close()
		}
	} else if f != nil {
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			return err
		}
	}
	var r *bufio.Reader
	var ino uint64
	if f != nil {
		defer func() { f.Close() }()
		r = bufio.NewReader(f)
		ino = inode(f)
	}
	var partial []byte
	for {
		if r != nil {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 && line[len(line)-1] == '\n' {
				line = append(partial, line...)
				partial = partial[:0]
				print(line)
				continue
			}
			partial = append(partial, line...)
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
		}
		if !o.Follow {
			return nil
		}
		if o.atEnd != nil {
			o.atEnd()
			o.atEnd = nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
		// The file was rotated or created: start reading the new one from its start.
		if nf, err := os.Open(path); err == nil {
			if n := inode(nf); f == nil || n != ino {
				if f != nil {
					f.Close()
				}
				f, r, ino, partial = nf, bufio.NewReader(nf), n, nil
			} else {
				nf.Close()
			}
		}
	}
}
