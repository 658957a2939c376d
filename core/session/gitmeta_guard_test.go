package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/gitmeta"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
)

// Both walls check repository metadata after each call: Linux for repositories its binds do
// not cover, Seatbelt for what a rename brings past its rules. Only a direct session, or the
// person's "writable", does not.
func TestWhichSessionsCheckGitMetadata(t *testing.T) {
	for _, tc := range []struct {
		e        sandbox.Enforcement
		writable bool
		want     bool
	}{
		{sandbox.Linux, false, true},
		{sandbox.Seatbelt, false, true},
		{sandbox.Direct, false, false},
		{sandbox.Linux, true, false},
		{sandbox.Seatbelt, true, false},
	} {
		s := &Session{Enforcement: tc.e}
		if got := s.guardsGitMetadata(&policy.Policy{GitMetadataWritable: tc.writable}); got != tc.want {
			t.Errorf("%s, writable %v: checks %v, want %v", tc.e, tc.writable, got, tc.want)
		}
	}
}

// A walk that stopped at its bounds is said after every command, naming the folder escaped,
// and what the person should do; one that read everything says nothing.
func TestUncheckedIsSaidAfterEveryCommand(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b\x1b[2K\r")
	if err := os.MkdirAll(filepath.Join(deep, "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Session{gitSnap: gitmeta.Scan([]string{root}, gitmeta.Bounds{MaxDepth: 1, MaxEntries: 100})}
	for range 2 {
		note := s.gitNote(nil)
		if !strings.Contains(note, "check stopped at "+root+"/a/b\\x1b[2K\\r") || !strings.Contains(note, "before you run git") {
			t.Errorf("note = %q", note)
		}
	}
	s.gitSnap = gitmeta.Scan([]string{root}, gitmeta.DefaultBounds)
	if note := s.gitNote(nil); note != "" {
		t.Errorf("a whole walk: note = %q", note)
	}
}
