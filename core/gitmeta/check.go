package gitmeta

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Moved is one piece of metadata a command planted, moved aside.
type Moved struct {
	Path string
	Kind Kind
	// Why says what made it dangerous: the keys it gained, a new hook, a symlink.
	Why string
	// To is where it now is; "" when it could not be kept (it was removed) or not moved.
	To string
	// Err says it could not be moved or removed: it is still in place.
	Err error
}

func (m Moved) String() string {
	switch {
	case m.Err != nil:
		return fmt.Sprintf("%s (%s: %s) could NOT be moved aside: %v; do not run git in that repository until you have removed it", m.Path, m.Kind, m.Why, m.Err)
	case m.To == "":
		return fmt.Sprintf("%s (%s: %s) was removed", m.Path, m.Kind, m.Why)
	}
	return fmt.Sprintf("%s (%s: %s) was moved to %s", m.Path, m.Kind, m.Why, m.To)
}

// Check walks s's roots again and moves into quarantine (a folder it makes owner-only,
// outside every sandbox) what appeared or changed since s that the person's git would run
// or obey: a hook that is new or changed, a settings file that gained a dangerous key (or
// that cannot be read as one), a .git file that names a folder outside the roots, and any
// of these that is a symlink. It returns what it moved and the snapshot to check against
// next time.
func (s *Snapshot) Check(b Bounds, quarantine string) ([]Moved, *Snapshot) {
	next := scan(s.roots, b, s)
	next.held = s.held
	prev := map[string]*Entry{}
	for i := range s.Entries {
		prev[s.Entries[i].Path] = &s.Entries[i]
	}
	q := &quarantiner{dir: quarantine}
	var moved []Moved
	kept := next.Entries[:0]
	for _, e := range next.Entries {
		p := prev[e.Path]
		if p != nil && p.stamp == e.stamp && p.Kind == e.Kind || s.holds(e.Path) {
			kept = append(kept, e)
			continue
		}
		why := s.danger(e, p, next)
		if why == notYet {
			// Not kept: looked at again, as new, by every check until what it names is a
			// repository's folder (git obeys nothing else) or it is gone.
			continue
		}
		if why == "" {
			kept = append(kept, e)
			continue
		}
		m := q.move(e, why)
		if m.Err != nil {
			// Still there: the next check says it again.
			kept = append(kept, e)
		}
		moved = append(moved, m)
	}
	next.Entries = kept
	return moved, next
}

// danger says why e, new or changed since p (nil: new), is dangerous, or "".
func (s *Snapshot) danger(e Entry, p *Entry, next *Snapshot) string {
	switch e.Kind {
	case Hook:
		if p == nil {
			return "a new hook"
		}
		return "a changed hook"
	case Link:
		return "a symlink or special file where git reads metadata"
	case Todo:
		if e.bad != "" {
			return "it " + e.bad
		}
		if len(e.keys) > 0 {
			return "git rebase --continue would run " + strings.Join(e.keys, "; ")
		}
	case Config:
		if e.bad != "" {
			return "it " + e.bad
		}
		var gained []string
		for _, k := range e.keys {
			if p == nil || !slices.Contains(p.keys, k) {
				gained = append(gained, k)
			}
		}
		if len(gained) > 0 {
			return "it sets " + strings.Join(gained, ", ")
		}
	case GitFile, CommonDir:
		// What it names must be a repository folder whose own metadata is checked: one
		// elsewhere, or a folder that does not look like one, could hold settings git reads
		// that no walk looks at.
		if e.bad == notGitFile || e.bad == "is empty" {
			// git refuses it: being written (git writes it empty first), or harmless.
			return notYet
		}
		if e.bad != "" {
			return "it " + e.bad
		}
		if !slices.ContainsFunc(s.roots, func(r string) bool { return within(r, e.gitdir) }) {
			return "it names " + e.gitdir + ", outside the session's writable folders"
		}
		if !next.gitDirs[e.gitdir] {
			if !looksLikeGitDir(e.gitdir, e.Kind == CommonDir) || walkReads(e.gitdir) {
				// Nothing git would take for a repository's folder, yet (git clone and git
				// submodule write the .git file before the folder it names is whole), or one
				// made whole since the walk passed it, where the next walk reads it.
				return notYet
			}
			return "it names " + e.gitdir + ", which is not a repository folder the check reads"
		}
	}
	return ""
}

// walkReads says whether a walk that reaches dir reads it as a repository's folder when it
// is one: anywhere but inside a .git, where only its worktrees' and submodules' are.
func walkReads(dir string) bool {
	parts := strings.Split(dir, "/")
	for i, p := range parts {
		if gitName(p) != ".git" {
			continue
		}
		rest := parts[i+1:]
		switch {
		case len(rest) == 2 && rest[0] == "worktrees":
			return true
		case len(rest) >= 2 && rest[0] == "modules":
			// A submodule's name may hold slashes: the walk goes down modules/ until a
			// folder with HEAD, and reads that one only.
			base := strings.Join(parts[:i+2], "/")
			for j := 1; j < len(rest)-1; j++ {
				base += "/" + rest[j]
				if gitName(rest[j]) == ".git" || looksLikeGitDir(base, false) {
					return false
				}
			}
			return true
		}
		return false
	}
	return true
}

// notYet is what danger says of a .git or commondir file that names, inside the roots, a
// folder that is not a repository's folder yet.
const notYet = "\x00not yet"

// looksLikeGitDir says whether git could take dir for a repository's folder (common: for
// the folder a commondir file names): it holds HEAD, and objects or a commondir file; or,
// named by a commondir file, objects (git's is_git_directory asks more; this asks no less).
func looksLikeGitDir(dir string, common bool) bool {
	fd, err := openDirNoLinks(dir)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	has := func(name string) bool { return unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil }
	if common {
		return has("objects")
	}
	return has("HEAD") && (has("objects") || has("commondir"))
}

func within(dir, path string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// quarantiner moves files into one folder, keeping each one's path below it.
type quarantiner struct {
	dir  string
	made bool
}

func (q *quarantiner) move(e Entry, why string) Moved {
	m := Moved{Path: e.Path, Kind: e.Kind, Why: why}
	parent, err := openDirNoLinks(filepath.Dir(e.Path))
	if err != nil {
		m.Err = err
		return m
	}
	defer unix.Close(parent)
	name := filepath.Base(e.Path)
	if !q.made {
		if err := os.MkdirAll(q.dir, 0o700); err != nil {
			m.Err = fmt.Errorf("make the quarantine folder: %w", err)
			return m
		}
		q.made = true
	}
	to := filepath.Join(q.dir, strings.TrimPrefix(e.Path, "/"))
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		m.Err = fmt.Errorf("make the quarantine folder: %w", err)
		return m
	}
	for i := 1; ; i++ {
		if _, err := os.Lstat(to); errors.Is(err, os.ErrNotExist) {
			break
		}
		to = filepath.Join(q.dir, strings.TrimPrefix(e.Path, "/")) + "." + strconv.Itoa(i)
	}
	// A rename keeps the file whole; it works where the folder and the quarantine share a
	// file system. Elsewhere a copy is kept (bounded) and the file removed.
	err = unix.Renameat(parent, name, unix.AT_FDCWD, to)
	if errors.Is(err, unix.EXDEV) {
		err = copyOut(parent, name, to)
		if err == nil || errors.Is(err, errNotKept) {
			if err == nil {
				m.To = to
			}
			err = unix.Unlinkat(parent, name, 0)
		}
		if err != nil {
			m.Err = err
		}
		return m
	}
	if err != nil {
		m.Err = err
		return m
	}
	m.To = to
	// Inert where it lies now: nothing executes it by accident.
	if e.Kind != Link {
		_ = unix.Fchmodat(unix.AT_FDCWD, to, 0o600, 0)
	}
	return m
}

var errNotKept = errors.New("not kept")

// copyOut copies name in parent to path: a symlink as a file saying where it led, a regular
// file of at most maxConfig bytes; anything else is not kept (errNotKept).
func copyOut(parent int, name, path string) error {
	var data []byte
	var st unix.Stat_t
	if err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(parent, name, buf)
		if err != nil {
			return err
		}
		data = []byte("a symlink to " + string(buf[:n]) + "\n")
	case unix.S_IFREG:
		var err error
		if data, err = readFile(parent, name, maxConfig); err != nil {
			return errNotKept
		}
	default:
		return errNotKept
	}
	return os.WriteFile(path, data, 0o600)
}
