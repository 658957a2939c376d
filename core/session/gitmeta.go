package session

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/caches"
	"github.com/openworker/openworker/core/gitmeta"
	"github.com/openworker/openworker/core/internal/regularfile"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/termtext"
)

// Repository metadata (hooks, .git/config) is run and obeyed by the person's own git,
// outside the wall. Seatbelt's profile keeps it read-only by pattern, in repositories made
// later too. The Linux wall can only bind what exists when it is made, so there the session
// binds what it finds at start read-only, and after each call moves aside what a command
// planted where no bind was (a repository made inside, a .git moved away and made again)
// before the call's result returns. It is moved, not deleted, into a folder of the state
// folder per session: outside every sandbox (no session may share the state folder), so
// nothing inside can put it back, and the person can see what a command tried to plant.

// guardsGitMetadata says whether the session checks repository metadata after each call.
// Seatbelt's sessions are checked too: its rules see each path a call names, but a rename
// is checked on the folder moved, not on what it holds, so a repository moved through the
// private tmp, changed there and moved back would bring a planted hook or setting past
// them; the check after the call catches what arrives that way.
func (s *Session) guardsGitMetadata(pol *policy.Policy) bool {
	return (s.Enforcement == sandbox.Linux || s.Enforcement == sandbox.Seatbelt) && pol != nil && !pol.GitMetadataWritable
}

// quarantineDir is where this session's planted metadata is moved.
func (s *Session) quarantineDir() string {
	return filepath.Join(s.m.opts.StateDir, "quarantine", s.ID)
}

// scanGitMetadata finds the metadata in pol's writable folders, to bind read-only and to
// check later calls against.
func (s *Session) scanGitMetadata(pol *policy.Policy) {
	s.gitMu.Lock()
	defer s.gitMu.Unlock()
	s.gitSnap = nil
	if !s.guardsGitMetadata(pol) {
		return
	}
	// The walk is kept by the folders the session shares, not its private tmp, which is
	// new each time.
	s.gitRoots = s.projectRoots(pol)
	snap := gitmeta.ScanFrom(pol.Writable, gitmeta.DefaultBounds, s.keptWalk(s.gitRoots))
	for _, e := range snap.Protect() {
		pol.Protected = append(pol.Protected, policy.Protected{Path: e.Path, Dir: e.IsDir(), ID: policy.FileID{Dev: e.Dev, Ino: e.Ino}})
	}
	for _, a := range snap.Anchors() {
		pol.Protected = append(pol.Protected, policy.Protected{Path: a.Path, Dir: true, ID: policy.FileID{Dev: a.Dev, Ino: a.Ino}, Anchor: true})
	}
	// The hooks folders repositories use instead of .git/hooks (core.hooksPath: husky's
	// .husky/_, lefthook's, the person's own), read-only as .git/hooks is.
	var gitFiles []string
	if home := s.m.opts.UserHome; home != "" {
		gitFiles = []string{filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config")}
	}
	_, rel := gitmeta.GlobalSettingsPaths(gitFiles, s.m.opts.UserHome)
	for _, e := range snap.HookFolders(rel) {
		pol.Protected = append(pol.Protected, policy.Protected{Path: e.Path, Dir: true, ID: policy.FileID{Dev: e.Dev, Ino: e.Ino}, Explicit: true})
	}
	// The agent hosts' settings in the project, read-only as its repositories' settings are.
	s.hostKnown = gitmeta.FindHostSettings(snap.HostPlaces())
	for _, e := range s.hostKnown {
		fi, err := os.Lstat(e.Path)
		if err != nil {
			continue
		}
		pol.Protected = append(pol.Protected, policy.Protected{Path: e.Path, Dir: fi.IsDir(), ID: policy.FileID{Dev: e.Dev, Ino: e.Ino}})
	}
	s.gitSnap = snap
}

// The folders a walk found are kept in the state folder, one file per set of writable
// folders, so that the next session of the same folders (each openworker run of a project)
// reads again only the folders that changed since (gitmeta.ScanFrom): the first walk of a
// project of 2,000 folders took 35 ms of every run's start (gitmeta.BenchmarkFirstWalk).
// The state folder is outside every sandbox, so what is read back was written here; it is
// checked all the same, and a file that does not read back is ignored.

// walksKept bounds how many sets of folders have a walk kept: the oldest go first.
const walksKept = 64

// maxKeptWalk bounds a kept walk's file.
const maxKeptWalk = 16 << 20

// keptWalkPath is where the walk of the folders roots is kept: by the project's key, as its
// tools' caches are.
func (s *Session) keptWalkPath(roots []string) string {
	return filepath.Join(s.m.opts.StateDir, "walks", caches.Key(roots))
}

// keptWalk is the walk kept of roots, or nil.
func (s *Session) keptWalk(roots []string) *gitmeta.Snapshot {
	if s.m.opts.StateDir == "" {
		return nil
	}
	data, err := regularfile.Read(s.keptWalkPath(roots), maxKeptWalk)
	if err != nil {
		return nil
	}
	snap, err := gitmeta.DecodeFolders(data, gitmeta.DefaultBounds)
	if err != nil {
		return nil
	}
	return snap
}

// keepWalk keeps the session's last walk for the next session of the same folders, and lets
// the oldest kept walks go past walksKept.
func (s *Session) keepWalk() {
	if s.gitSnap == nil || s.m.opts.StateDir == "" || len(s.gitRoots) == 0 {
		return
	}
	path := s.keptWalkPath(s.gitRoots)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, ".walk-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(s.gitSnap.EncodeFolders())
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		os.Remove(tmp.Name())
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) <= walksKept {
		return
	}
	type kept struct {
		name string
		at   time.Time
	}
	var all []kept
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			all = append(all, kept{e.Name(), fi.ModTime()})
		}
	}
	slices.SortFunc(all, func(a, b kept) int { return a.at.Compare(b.at) })
	for _, k := range all[:max(0, len(all)-walksKept)] {
		os.Remove(filepath.Join(dir, k.name))
	}
}

// checkGitMetadata moves aside what the calls since the last check planted, and returns
// one line for each thing it moved.
func (s *Session) checkGitMetadata() []string {
	s.gitMu.Lock()
	defer s.gitMu.Unlock()
	if s.gitSnap == nil {
		return nil
	}
	moved, next := s.gitSnap.Check(gitmeta.DefaultBounds, s.quarantineDir())
	s.gitSnap = next
	moved = append(moved, gitmeta.CheckHostSettings(next.HostPlaces(), s.hostKnown, s.quarantineDir())...)
	var lines []string
	for _, m := range moved {
		lines = append(lines, m.String())
	}
	return lines
}

// uncheckedNote says, when the last walk stopped at its bounds, where, and what the person
// should do: said after every command that leaves it so, since a command can make the walk
// stop before a repository it planted in. s.gitMu is held, or the session is not yet shared.
func (s *Session) uncheckedNote() string {
	if s.gitSnap == nil || !s.gitSnap.Truncated {
		return ""
	}
	return fmt.Sprintf("openworker: the repository check stopped at %s (it reads %d folders deep and %d entries): "+
		"what a command planted in a repository there or past it is not moved aside; before you run git or an agent host in that folder, "+
		"look at its .git/config and .git/hooks, or remove what made the folders so many (a node_modules, a build's output)\n",
		termtext.Escape(s.gitSnap.Unchecked), gitmeta.DefaultBounds.MaxDepth, gitmeta.DefaultBounds.MaxEntries)
}

// gitNote is what a command's result says after its check: what was moved, and where the
// check could not reach.
func (s *Session) gitNote(moved []string) string {
	s.gitMu.Lock()
	defer s.gitMu.Unlock()
	return gitMetadataNote(moved) + s.uncheckedNote()
}

// gitMetadataNote is what a result's error output says of what was moved.
func gitMetadataNote(moved []string) string {
	if len(moved) == 0 {
		return ""
	}
	// A path is a command's to name: shown escaped, so that no \r or escape sequence in it
	// erases the line that tells the person.
	escaped := make([]string, len(moved))
	for i, m := range moved {
		escaped[i] = termtext.Escape(m)
	}
	return "openworker: what the person's git or agent host runs or obeys outside the sandbox (repository metadata, an agent host's project settings) was planted, and moved aside " +
		"(sandbox_git_metadata = \"protected\"):\n  " + strings.Join(escaped, "\n  ") + "\n"
}

// gitMetadataMoved tells of metadata moved aside outside a call (at a restart or the end):
// in the audit trail, and with the next result.
func (s *Session) gitMetadataMoved(moved []string, when string) {
	s.m.audit(audit.Event{Type: audit.GitMetadataMoved, Session: s.ID, Enforcement: string(s.Enforcement), Network: string(s.Network),
		GitMetadataMoved: moved, Summary: when})
	s.fwdMu.Lock()
	s.lateHints = append(s.lateHints, gitMetadataNote(moved))
	s.fwdMu.Unlock()
}

// gitWatchEvery is how often a session whose last command left processes running checks
// repository metadata between calls: such a process may plant a hook while the person uses
// git in the folder. A check costs a walk of the folders (see gitmeta.BenchmarkCheck).
const gitWatchEvery = 2 * time.Second

// startGitWatch starts watchGitMetadata once a command has left processes running; s.mu is
// held. teardown stops it.
func (s *Session) startGitWatch() {
	s.gitMu.Lock()
	defer s.gitMu.Unlock()
	if s.gitSnap != nil && (!s.idle || s.aparts.running() > 0) && s.gitWatch == nil {
		s.gitWatch = make(chan struct{})
		go s.watchGitMetadata(s.gitWatch)
	}
}

// watchGitMetadata checks, until stop is closed, every gitWatchEvery while no call runs and
// the last one left processes running.
func (s *Session) watchGitMetadata(stop <-chan struct{}) {
	t := time.NewTicker(gitWatchEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if !s.mu.TryLock() {
			continue // a call runs; it checks when it ends
		}
		if !s.ended && (s.hints.firstDone && !s.idle || s.aparts.running() > 0) {
			if moved := s.checkGitMetadata(); len(moved) > 0 {
				s.gitMetadataMoved(moved, "while no command ran")
			}
		}
		s.mu.Unlock()
	}
}
