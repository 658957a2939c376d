package session

import (
	"context"
	"errors"
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
	s.gitWatcher, s.gitSettled = nil, false // the folders may change: no check is skipped on the old watch
	if s.gitWatch != nil {
		// The folders may have changed (a folder added): the next call watches anew.
		close(s.gitWatch)
		s.gitWatch = nil
	}
	if !s.guardsGitMetadata(pol) {
		return
	}
	s.gitWatchRoots = slices.Clone(pol.Writable)
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
	// What is read-only inside changes only by the person's hand: a hook they install, a
	// setting they make while the session runs stays theirs.
	var held []string
	for _, p := range pol.Protected {
		if !p.Anchor {
			held = append(held, p.Path)
		}
	}
	snap.Hold(held)
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
// one line for each thing it moved, with those that checks moved while the call ran.
// What was moved aside before since the last command started and is moved again was planted
// again, by a process that runs on: the sandbox is stopped (stopPlanter).
func (s *Session) checkGitMetadata() []string {
	lines, again := s.checkGit()
	if len(again) > 0 {
		s.stopPlanter(again)
	}
	return lines
}

func (s *Session) checkGit() (lines, again []string) {
	s.gitMu.Lock()
	defer s.gitMu.Unlock()
	return s.checkGitLocked()
}

// checkGitLocked is checkGit with s.gitMu held.
func (s *Session) checkGitLocked() (lines, again []string) {
	lines, s.gitMidCall = s.gitMidCall, nil
	if s.gitSnap == nil {
		return lines, nil
	}
	// Where every folder is watched and nothing git reads changed since the last check,
	// the walk is not made again: it would find what that one found.
	told, whole := s.gitWatcher.Settle()
	if whole && s.gitSettled && told == s.gitTold {
		return lines, nil
	}
	s.gitTold, s.gitSettled = told, whole
	moved, next := s.gitSnap.Check(gitmeta.DefaultBounds, s.quarantineDir())
	s.gitSnap = next
	moved = append(moved, gitmeta.CheckHostSettings(next.HostPlaces(), s.hostKnown, s.quarantineDir())...)
	if s.gitMovedSince == nil {
		s.gitMovedSince = map[string]bool{}
	}
	for _, m := range moved {
		lines = append(lines, m.String())
		if m.Err != nil {
			continue
		}
		if s.gitMovedSince[m.Path] {
			again = append(again, m.Path)
		}
		s.gitMovedSince[m.Path] = true
	}
	return lines, again
}

// commandStarts forgets what was moved before: a command that plants what an earlier one
// did (a second npm install whose prepare script sets core.hooksPath) is not planting again.
func (s *Session) commandStarts() {
	s.gitMu.Lock()
	defer s.gitMu.Unlock()
	s.gitMovedSince = nil
}

// stopPlanter stops everything in the sandbox, because a process in it planted again what
// was moved aside (paths): each plant lives only until the check that follows it, within
// milliseconds where changes are watched, but a process that plants again after each move
// would keep a window open for as long as it runs. The sandbox is made again, as a folder
// added makes it (its shell state is lost); the next result says why.
func (s *Session) stopPlanter(paths []string) {
	if !s.planterStopping.CompareAndSwap(false, true) {
		return
	}
	escaped := make([]string, len(paths))
	for i, p := range paths {
		escaped[i] = termtext.Escape(p)
	}
	note := "openworker: a process in the sandbox planted again what was moved aside (" + strings.Join(escaped, ", ") +
		"): every process in the sandbox was stopped so that it cannot plant more, and the sandbox made again (its shell state is lost)\n"
	s.m.audit(audit.Event{Type: audit.GitMetadataMoved, Session: s.ID, Enforcement: string(s.Enforcement), Network: string(s.Network),
		GitMetadataMoved: paths, Summary: "planted again: every process in the sandbox stopped"})
	s.fwdMu.Lock()
	s.lateHints = append(s.lateHints, note)
	s.fwdMu.Unlock()
	go func() {
		defer s.planterStopping.Store(false)
		s.Interrupt()
		// A call the kill cut short answers first; then the sandbox is made again.
		for range 600 {
			err := s.restartWith(context.Background(), "stop what planted repository metadata again", "making the sandbox again",
				"a new wall after repository metadata was planted again", "restarted: repository metadata planted again", func(*Spec) {})
			var busy *BusyError
			if !errors.As(err, &busy) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
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

// startGitWatch starts watchGitMetadata when a call starts, if it does not run. teardown,
// and a new wall's walk (scanGitMetadata), stop it.
func (s *Session) startGitWatch() {
	s.gitMu.Lock()
	defer s.gitMu.Unlock()
	if s.gitSnap != nil && s.gitWatch == nil {
		s.gitWatch = make(chan struct{})
		go s.watchGitMetadata(s.gitWatch, s.gitWatchRoots)
	}
}

// watchGitMetadata checks, until stop is closed, as soon as a change under roots may have
// planted something (gitmeta.Watch), whether a call runs or not; where changes cannot all be
// watched (no watcher on this system, or folders past its bound), also every gitWatchEvery
// while a call or a process it left runs. Checks take at most a fifth of the time: a build
// that makes folders by the thousand is not slowed by one check after each.
func (s *Session) watchGitMetadata(stop <-chan struct{}, roots []string) {
	var told <-chan struct{}
	w, err := gitmeta.Watch(roots)
	if err == nil {
		told = w.C
		s.gitMu.Lock()
		s.gitWatcher, s.gitSettled = w, false
		s.gitMu.Unlock()
		defer func() {
			s.gitMu.Lock()
			if s.gitWatcher == w {
				s.gitWatcher, s.gitSettled = nil, false
			}
			s.gitMu.Unlock()
			w.Close()
		}()
	}
	t := time.NewTicker(gitWatchEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-told:
		case <-t.C:
			if w != nil && w.Unwatched() == "" || !s.mayRun() {
				continue
			}
		}
		start := time.Now()
		s.checkWhileRunning()
		select {
		case <-stop:
			return
		case <-time.After(4 * time.Since(start)):
		}
	}
}

// mayRun says whether a process may run in the sandbox: a call, or what the last one left.
func (s *Session) mayRun() bool {
	if s.busy.Load() != nil || s.aparts.running() > 0 {
		return true
	}
	if !s.mu.TryLock() {
		return true // a call is starting or ending
	}
	defer s.mu.Unlock()
	return !s.ended && s.hints.firstDone && !s.idle
}

// checkWhileRunning checks between the checks after calls: what it moves is said with the
// result of the call that runs, or, when none runs, with the next and in the audit trail.
func (s *Session) checkWhileRunning() {
	s.gitMu.Lock()
	lines, again := s.checkGitLocked()
	if s.busy.Load() != nil || s.aparts.running() > 0 {
		s.gitMidCall, lines = lines, nil
	}
	s.gitMu.Unlock()
	if len(lines) > 0 {
		s.gitMetadataMoved(lines, "while no command ran")
	}
	if len(again) > 0 {
		s.stopPlanter(again)
	}
}
