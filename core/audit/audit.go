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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openworker/openworker/core/termtext"
)

// Event types.
const (
	SessionStarted = "session.started"
	SessionRefused = "session.refused"
	SessionEnded   = "session.ended"
	SessionRestart = "session.restarted"
	ToolStarted    = "tool.started"
	ToolCall       = "tool.call"
	// SiteChanged: a person changed a session's sites or the machine's list (By says how).
	SiteChanged = "site.changed"
	// GitMetadataMoved: repository hooks or settings a command planted were moved aside
	// outside a tool call (when the wall was made again, or at the session's end); inside
	// one, the tool.call event names them.
	GitMetadataMoved = "git_metadata.moved"
	// SSHSigned and SSHRefused: OpenWorker's SSH agent signed with one of the person's keys
	// for a session (Host, Key, Command say for what), or refused to (Reason says why).
	// Summary is the signature's kind: "login" (Host is the server) or "signing" (Host is
	// what it signs for, its namespace).
	SSHSigned  = "ssh.signed"
	SSHRefused = "ssh.refused"
	// SSHAnswered: a person answered an SSH card (By says how): Summary is its kind, as
	// above, Host and Key what it allows or denies, Outcome the answer.
	SSHAnswered = "ssh.answered"
	// LoginStandIn: OpenWorker's proxy put a stand-in login's real secret on a request in
	// place of its stand-in: Login is the login, Host where the request went, Command the
	// command that sent it. The secret itself is never written.
	LoginStandIn = "login.stand_in"
)

// Event is one line of the audit trail.
type Event struct {
	Time        time.Time `json:"time"`
	Type        string    `json:"type"`
	Session     string    `json:"session,omitempty"`
	Tool        string    `json:"tool,omitempty"`
	Summary     string    `json:"summary,omitempty"`
	By          string    `json:"by,omitempty"` // who made a person's change: the app, the CLI, a card
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
	// Host, Key and Command are an SSH signature's server (or what it signs for), the key's
	// fingerprint and the command that asked.
	Host    string `json:"host,omitempty"`
	Key     string `json:"key,omitempty"`
	Command string `json:"command,omitempty"`
	// Login is the shared login a stand-in stood for (LoginStandIn).
	Login string `json:"login,omitempty"`
	// Cut names the fields that were longer than their bound (MaxField bytes, MaxItems
	// entries) and were cut to it when the event was written.
	Cut []string `json:"cut,omitempty"`
}

// A field a command or an agent chose is kept to a bound, so that no record can rotate the
// trail away or make the daemon hold megabytes for it.
const (
	MaxField = 4096 // bytes of one text field, cut on a character boundary
	MaxItems = 64   // entries of a list; the rest are counted in one more entry
	maxItem  = 1024 // bytes of one entry of a list
)

// bound cuts every field to its bound and notes which were cut.
func (e *Event) bound() {
	text := func(name string, s *string, n int) {
		if c, cut := termtext.Cut(*s, n); cut {
			*s = c + "…"
			e.Cut = append(e.Cut, name)
		}
	}
	list := func(name string, l *[]string) {
		cut := false
		if len(*l) > MaxItems {
			*l = append((*l)[:MaxItems:MaxItems], strconv.Itoa(len(*l)-MaxItems)+" more")
			cut = true
		}
		for i := range *l {
			if c, ok := termtext.Cut((*l)[i], maxItem); ok {
				(*l)[i] = c + "…"
				cut = true
			}
		}
		if cut {
			e.Cut = append(e.Cut, name)
		}
	}
	e.Cut = nil
	text("type", &e.Type, 64)
	text("session", &e.Session, 64)
	text("tool", &e.Tool, 64)
	text("summary", &e.Summary, MaxField)
	text("by", &e.By, 128)
	text("enforcement", &e.Enforcement, 64)
	text("network", &e.Network, 64)
	text("reason", &e.Reason, MaxField)
	text("outcome", &e.Outcome, 256)
	text("host", &e.Host, 512)
	text("key", &e.Key, 128)
	text("command", &e.Command, MaxField)
	text("login", &e.Login, 128)
	list("blocked", &e.Blocked)
	list("denials", &e.Denials)
	list("folders", &e.Folders)
	list("git_metadata_moved", &e.GitMetadataMoved)
}

// Log appends events to a file and rotates it by size.
type Log struct {
	mu      sync.Mutex
	path    string
	f       *os.File
	size    int64
	maxSize int64
	keep    int
	keepFor time.Duration
	now     func() time.Time
}

// The file is rotated at DefaultMaxSize. DefaultKeep rotated files are kept, and more while
// their newest record is younger than DefaultKeepFor: rotation never deletes a record of
// the last week, up to MaxFiles files (512 MiB). Past that the oldest file goes whatever its
// age, and the trail says so in an audit.dropped record.
const (
	DefaultMaxSize = 8 << 20
	DefaultKeep    = 3
	DefaultKeepFor = 7 * 24 * time.Hour
	MaxFiles       = 64
)

// Dropped is the type of the record that says rotation deleted records younger than
// DefaultKeepFor (the trail had reached MaxFiles files).
const Dropped = "audit.dropped"

// Open opens (creating, owner-only) the audit file at path.
func Open(path string) (*Log, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	l := &Log{path: path, maxSize: DefaultMaxSize, keep: DefaultKeep, keepFor: DefaultKeepFor, now: time.Now}
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
	// The lists are the caller's: cut copies.
	e.Blocked, e.Denials, e.Folders = slices.Clone(e.Blocked), slices.Clone(e.Denials), slices.Clone(e.Folders)
	e.bound()
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
		dropped, err := l.rotate()
		if err != nil {
			return err
		}
		if !dropped.IsZero() {
			note, _ := json.Marshal(Event{Time: l.now(), Type: Dropped,
				Reason: fmt.Sprintf("rotation deleted records up to %s, younger than %s: the trail had reached %d files", dropped.Format(time.RFC3339), l.keepFor, MaxFiles)})
			n, _ := l.f.Write(append(note, '\n'))
			l.size += int64(n)
		}
	}
	n, err := l.f.Write(b)
	l.size += int64(n)
	return err
}

// rotated counts the rotated files beside path: path.1 … path.N.
func rotated(path string) int {
	n := 0
	for {
		if _, err := os.Lstat(path + "." + strconv.Itoa(n+1)); err != nil {
			return n
		}
		n++
	}
}

// rotate starts a new file, deleting rotated files beyond keep whose newest record is older
// than keepFor, and beyond MaxFiles any. It returns the time of the newest record deleted
// that was younger than keepFor, if one was.
func (l *Log) rotate() (time.Time, error) {
	l.f.Close()
	n := rotated(l.path)
	for i := n; i >= 1; i-- {
		_ = os.Rename(l.path+"."+strconv.Itoa(i), l.path+"."+strconv.Itoa(i+1))
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return time.Time{}, fmt.Errorf("audit: rotating: %w", err)
	}
	n++
	var dropped time.Time
	for ; n > l.keep; n-- {
		old := l.path + "." + strconv.Itoa(n)
		fi, err := os.Stat(old)
		if err != nil {
			continue
		}
		// A file's time is that of its last write, its newest record.
		young := l.now().Sub(fi.ModTime()) < l.keepFor
		if young && n <= MaxFiles {
			break
		}
		if young && fi.ModTime().After(dropped) {
			dropped = fi.ModTime()
		}
		os.Remove(old)
	}
	return dropped, l.open()
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
	b.WriteString(termtext.Escape(e.Type))
	if e.Session != "" {
		b.WriteString("  " + termtext.Escape(e.Session))
	}
	if e.Enforcement != "" {
		b.WriteString("  [" + termtext.Escape(e.Enforcement))
		if e.Network != "" {
			b.WriteString(", " + termtext.Escape(e.Network))
		}
		b.WriteString("]")
	}
	if e.Tool != "" {
		b.WriteString("  " + termtext.Escape(e.Tool))
	}
	if e.Summary != "" {
		b.WriteString(": " + termtext.Escape(e.Summary))
	}
	if e.By != "" {
		b.WriteString("  by " + termtext.Escape(e.By))
	}
	if e.ExitCode != nil {
		b.WriteString("  exit " + strconv.Itoa(*e.ExitCode))
	}
	if e.DurationMS > 0 {
		b.WriteString("  " + strconv.FormatFloat(e.DurationMS, 'f', 1, 64) + " ms")
	}
	if e.Outcome != "" {
		b.WriteString("  (" + termtext.Escape(e.Outcome) + ")")
	}
	if len(e.Blocked) > 0 {
		b.WriteString("  blocked " + termtext.Escape(strings.Join(e.Blocked, ", ")))
	}
	if len(e.Denials) > 0 {
		b.WriteString("  denied " + termtext.Escape(strings.Join(e.Denials, "; ")))
	}
	if e.Host != "" {
		b.WriteString("  host " + termtext.Escape(e.Host))
	}
	if e.Key != "" {
		b.WriteString("  key " + termtext.Escape(e.Key))
	}
	if e.Command != "" {
		b.WriteString("  command " + termtext.Escape(e.Command))
	}
	if e.Reason != "" {
		b.WriteString("  — " + termtext.Escape(e.Reason))
	}
	if len(e.Cut) > 0 {
		b.WriteString("  (cut: " + termtext.Escape(strings.Join(e.Cut, ", ")) + ")")
	}
	return b.String()
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
		for i := rotated(path); i >= 1; i-- {
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
