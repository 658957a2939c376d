// Package gitmeta finds, under a session's writable folders, the repository metadata that
// the person's own git runs or obeys outside the sandbox — each repository's hooks, its
// settings files (config, config.worktree), a worktree's or submodule's .git file — and moves
// aside what a command planted there: a new hook, a settings file that gained a key that runs
// a program (core.fsmonitor, core.hooksPath, filter.*, …), a .git that is a symlink.
//
// It reads what commands wrote, so it reads it as hostile: no symlink is followed, nothing
// but a regular file is opened for reading, every read and the walk itself are bounded. It
// decides nothing about whether metadata is protected (the policy says) and binds nothing
// (a provider does, from the Snapshot's Protect list).
package gitmeta

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/internal/wire"
)

// Bounds bound one walk. A walk that reaches them stops there and says so (Truncated):
// repositories deeper, or past the first MaxEntries folder entries, are not looked at.
type Bounds struct {
	// MaxDepth is how many folders below each root the walk goes (a repository's .git
	// folder counts as one more).
	MaxDepth int
	// MaxEntries is how many folder entries the walk reads, all roots together.
	MaxEntries int
}

// DefaultBounds are far past what a project holds, so that a command cannot put a repository
// beyond them by making one deep or beside a node_modules: a walk holds one open folder per
// level, and a walk of a million entries is a few hundred milliseconds, once (later walks read
// only the folders that changed; see BenchmarkCheck). A walk that stops says where
// (Snapshot.Unchecked), and the session says so after every command.
var DefaultBounds = Bounds{MaxDepth: 256, MaxEntries: 1_000_000}

// maxConfig bounds a settings file that is read; a bigger new one is moved aside unread.
const maxConfig = 1 << 20

// maxGitFile bounds a .git file that is read ("gitdir: PATH").
const maxGitFile = 4 << 10

// Kind says what an Entry is.
type Kind string

const (
	// Hooks is a repository's hooks folder.
	Hooks Kind = "hooks folder"
	// Hook is a file in a hooks folder (not a *.sample, which git never runs).
	Hook Kind = "hook"
	// Config is a repository's settings file: config, or config.worktree.
	Config Kind = "settings file"
	// GitFile is a .git file, which names the repository's folder elsewhere.
	GitFile Kind = "git file"
	// CommonDir is a repository folder's commondir file, which names the folder whose
	// settings and hooks git uses (a worktree's names the main repository's).
	CommonDir Kind = "commondir file"
	// Link is a .git, hooks folder, settings file or hook that is a symlink, or a settings
	// file that is not a regular file: git follows the one and blocks on the other.
	Link Kind = "symlink or special file"
	// Todo is what an interactive rebase or a cherry-pick has left to do
	// (rebase-merge/git-rebase-todo, sequencer/todo): git rebase --continue runs its exec
	// lines.
	Todo Kind = "rebase's steps"
)

// Entry is one piece of metadata found.
type Entry struct {
	Path string
	Kind Kind
	// Dev and Ino are what the file was when found, for a bind that must be that file.
	Dev, Ino uint64
	stamp    stamp
	// keys are a settings file's dangerous keys; bad says it could not be read or parsed.
	keys []string
	bad  string
	// gitdir is what a .git or commondir file names, made absolute.
	gitdir string
	// hooksPath is a settings file's core.hooksPath, as written.
	hooksPath string
}

// IsDir says whether the entry is a folder.
func (e Entry) IsDir() bool { return e.Kind == Hooks }

// stamp is what says a file has not changed since it was last seen.
type stamp struct {
	dev, ino, size uint64
	mode           uint32
	mtime, ctime   int64
}

// Snapshot is what one walk found.
type Snapshot struct {
	Entries []Entry
	// Truncated says the walk stopped at its bounds; Unchecked is the first folder it did
	// not read then.
	Truncated bool
	Unchecked string
	roots     []string
	// gitDirs are the repository folders the walk looked into.
	gitDirs map[string]bool
	// dirs are the folders the walk read whose stamps the next walk may trust (see
	// folder): what it found in each, by path.
	dirs map[string]*folder
	// held are the paths a command cannot write (Hold): what changes there is the person's.
	held []string
}

// Hold says that no command can write at paths, or below them (a provider bound them
// read-only, or the profile refuses them): what changes there was changed by the person,
// outside, and Check leaves it. Snapshots Check returns hold them too.
func (s *Snapshot) Hold(paths []string) { s.held = append(s.held, paths...) }

// holds says whether path is at or below a path held.
func (s *Snapshot) holds(path string) bool {
	return slices.ContainsFunc(s.held, func(h string) bool { return within(h, path) })
}

// folder is what a walk found in a folder it read, kept so that the next walk, finding the
// folder's stamp unchanged, need not read it again: a folder's entries cannot change without
// its change time (ctime) changing, which no program can set. Reading every folder of a large
// project after every command took most of the command's time (BenchmarkCheck).
type folder struct {
	st stamp
	// n is how many entries it holds, which count against Bounds.MaxEntries.
	n int
	// subdirs are the folders in it, but .git.
	subdirs []string
	// git is the type of its .git entry; typeNone when it has none.
	git uint8
	// repo says it holds what git takes for a repository's own folder (see dir).
	repo bool
}

// racyWindow: a folder whose times are within this of the walk's start may change again
// without its times changing (file systems keep them to a clock tick, some to a second or
// two), so the next walk reads it again, as git treats an index entry as racy.
var racyWindow = 3 * time.Second

// Protect returns what a provider binds read-only over itself: the hooks folders, settings
// files, .git and commondir files found (symlinks excepted, which a bind cannot name without following).
func (s *Snapshot) Protect() []Entry {
	var out []Entry
	for _, e := range s.Entries {
		if e.Kind == Hooks || e.Kind == Config || e.Kind == GitFile || e.Kind == CommonDir {
			out = append(out, e)
		}
	}
	return out
}

// Anchor is a folder bound over itself, writable, so that it cannot be renamed or removed
// while the sandbox runs (a mount point cannot be): a repository's own folder and every folder
// from a root down to the repository. A command can then neither move the person's .git
// aside and make its own in its place, nor do the same with a folder that holds it; inside
// them everything stays writable.
type Anchor struct {
	Path     string
	Dev, Ino uint64
}

// Anchors returns the folders to anchor for the repositories the walk found: each
// repository's own folder (a .git, a linked worktree's or submodule's in it, a bare one),
// the folder that holds it or a .git file, and every folder between that and its root. A
// folder that is not one any more (a link in its place) is left out.
func (s *Snapshot) Anchors() []Anchor {
	seen := map[string]bool{}
	var out []Anchor
	add := func(path string) {
		if seen[path] || slices.Contains(s.roots, path) {
			return // a root is the provider's to bind
		}
		seen[path] = true
		var st unix.Stat_t
		if unix.Lstat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return
		}
		out = append(out, Anchor{Path: path, Dev: uint64(st.Dev), Ino: uint64(st.Ino)})
	}
	up := func(dir string) {
		root := ""
		for _, r := range s.roots {
			if within(r, dir) && len(r) > len(root) {
				root = r
			}
		}
		if root == "" {
			return
		}
		for d := dir; d != root && within(root, d); d = filepath.Dir(d) {
			add(d)
		}
	}
	// Every repository's own folder: each .git, and each linked worktree's, submodule's or
	// bare repository's, which git takes settings and hooks from as it does a .git's.
	var dirs []string
	for d := range s.gitDirs {
		dirs = append(dirs, d)
	}
	for _, e := range s.Entries {
		if e.Kind == GitFile {
			dirs = append(dirs, e.Path)
		}
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		if s.gitDirs[d] {
			add(d)
		}
		up(filepath.Dir(d))
	}
	return out
}

// Scan walks roots (absolute, resolved folders) within b.
func Scan(roots []string, b Bounds) *Snapshot { return scan(roots, b, nil) }

// topRoots are the roots a walk starts from: a root inside another is walked with it.
func topRoots(roots []string) []string {
	var top []string
	for _, r := range roots {
		if !slices.ContainsFunc(roots, func(o string) bool { return o != r && within(o, r) }) && !slices.Contains(top, r) {
			top = append(top, r)
		}
	}
	return top
}

func scan(roots []string, b Bounds, prev *Snapshot) *Snapshot {
	top := topRoots(roots)
	w := &walker{b: b, out: &Snapshot{roots: top, gitDirs: map[string]bool{}, dirs: map[string]*folder{}}, start: time.Now()}
	if prev != nil {
		w.prev = map[string]*Entry{}
		for i := range prev.Entries {
			w.prev[prev.Entries[i].Path] = &prev.Entries[i]
		}
		w.prevDirs = prev.dirs
	}
	for _, r := range top {
		fd, err := openDirNoLinks(r)
		if err != nil {
			continue // a folder gone since holds nothing git will read
		}
		// Folders on the root's own file system, when it keeps change times as they must
		// be kept, are trusted to be unchanged while their stamps are (see folder).
		w.trustDev, w.trusted = trustsStamps(fd)
		w.dir(fd, r, 0)
	}
	slices.SortFunc(w.out.Entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	w.out.Truncated = w.truncated
	return w.out
}

type walker struct {
	b         Bounds
	entries   int
	truncated bool
	prev      map[string]*Entry
	prevDirs  map[string]*folder
	out       *Snapshot
	buf       []byte
	start     time.Time
	// trusted says the root being walked is on a file system whose folders' stamps the
	// walk trusts, trustDev which one.
	trusted  bool
	trustDev uint64
}

// caseInsensitive says that names are found in any letter case here (a Mac's volumes, by
// default): git, looking for .git or HEAD, finds .GIT and head too, and so must the walk.
var caseInsensitive = runtime.GOOS == "darwin"

// gitName is the name git looks for that a folder entry answers to: name, or, where names
// are found in any case, the one of git's names it is in another case.
func gitName(name string) string {
	if caseInsensitive {
		for _, g := range []string{".git", "HEAD", "objects", "commondir"} {
			if strings.EqualFold(name, g) {
				return g
			}
		}
	}
	return name
}

// Types of folder entries.
const (
	typeNone uint8 = iota
	typeOther
	typeDir
	typeLink
	typeFile
	typeUnknown
)

type dent struct {
	name string
	typ  uint8
}

// stop says the walk stopped at its bounds at path, which it did not read (or not whole).
func (w *walker) stop(path string) {
	w.truncated = true
	if w.out.Unchecked == "" {
		w.out.Unchecked = path
	}
}

// read lists the folder open as fd at path, within the bound.
func (w *walker) read(fd int, path string) []dent {
	if w.buf == nil {
		w.buf = make([]byte, 32<<10)
	}
	left := w.b.MaxEntries - w.entries
	if left <= 0 {
		w.stop(path)
		return nil
	}
	list, more := readDir(fd, left, w.buf)
	w.entries += len(list)
	if more {
		w.stop(path)
	}
	for i := range list {
		if list[i].typ == typeUnknown {
			// A file system that does not say: asked, without following a link.
			var st unix.Stat_t
			list[i].typ = typeOther
			if unix.Fstatat(fd, list[i].name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				switch st.Mode & unix.S_IFMT {
				case unix.S_IFDIR:
					list[i].typ = typeDir
				case unix.S_IFLNK:
					list[i].typ = typeLink
				case unix.S_IFREG:
					list[i].typ = typeFile
				}
			}
		}
	}
	return list
}

// openDir opens the folder name in the folder open as parent, following no symlink.
func openDir(parent int, name string) (int, error) {
	return unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// dir walks the folder open as fd (which it closes) at path, depth folders below its root.
func (w *walker) dir(fd int, path string, depth int) {
	defer unix.Close(fd)
	// Its stamp before its entries are read: a change while they are read shows next time.
	// On a file system whose stamps are not trusted there is nothing to keep it for.
	var st unix.Stat_t
	stamped := w.trusted && unix.Fstat(fd, &st) == nil
	list := w.read(fd, path)
	f := &folder{n: len(list)}
	var head, objects, commondir bool
	for _, e := range list {
		name := gitName(e.name)
		switch name {
		case ".git":
			f.git = e.typ
		case "HEAD":
			head = true
		case "objects":
			objects = true
		case "commondir":
			commondir = true
		}
		if e.typ == typeDir && name != ".git" {
			f.subdirs = append(f.subdirs, e.name)
		}
	}
	// A folder that holds what git takes for a repository's own folder (a bare repository,
	// or one a .git file names) is one: git finds it when the person's shell is in it. The
	// walk goes on below it all the same, so that such a folder hides nothing.
	f.repo = head && (objects || commondir)
	if stamped && w.trustable(&st) && !w.truncated {
		f.st = stampOf(&st)
		w.out.dirs[path] = f
	}
	w.walk(fd, f, path, depth)
}

// trustable says a folder's stamp st may be trusted at the next walk: on the trusted file
// system, and not changed so lately that it may change again within the same times.
func (w *walker) trustable(st *unix.Stat_t) bool {
	if !w.trusted || uint64(st.Dev) != w.trustDev || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false
	}
	recent := w.start.Add(-racyWindow).UnixNano()
	return st.Ctim.Nano() < recent && st.Mtim.Nano() < recent
}

// walk looks at what the folder at path holds, as f says: its .git, whether it is a
// repository's own folder, and its folders, each walked in turn. fd is the folder open, or
// -1 when it was not opened (its stamp was unchanged); it is opened when its .git or its
// being a repository needs it.
func (w *walker) walk(fd int, f *folder, path string, depth int) {
	if fd < 0 && (f.git != typeNone || f.repo) {
		var err error
		if fd, err = openDirNoLinks(path); err != nil {
			return // gone since its stamp was taken: the next walk reads its parent again
		}
		defer unix.Close(fd)
	}
	if f.git != typeNone {
		w.dotGit(fd, filepath.Join(path, ".git"), f.git, depth)
	}
	if f.repo {
		w.gitDir(fd, path, depth)
	}
	for _, name := range f.subdirs {
		sub := filepath.Join(path, name)
		if depth >= w.b.MaxDepth {
			w.stop(sub)
			return
		}
		if p := w.unchanged(sub); p != nil {
			w.entries += p.n
			w.out.dirs[sub] = p
			w.walk(-1, p, sub, depth+1)
			continue
		}
		var subfd int
		var err error
		if fd >= 0 {
			subfd, err = openDir(fd, name)
		} else {
			subfd, err = openDirNoLinks(sub)
		}
		if err != nil {
			continue
		}
		w.dir(subfd, sub, depth+1)
	}
}

// unchanged is what the last walk found in the folder at path, when its stamp is what it was
// then: the same folder (device and inode), with the same entries (no change of its times or
// size since). Its path is looked up whole, without following a link at its end: a link
// anywhere on the way would have changed a folder above it, which the walk looked at first.
// nil when the folder must be read.
func (w *walker) unchanged(path string) *folder {
	p := w.prevDirs[path]
	if p == nil || w.b.MaxEntries-w.entries < p.n {
		return nil
	}
	var st unix.Stat_t
	if unix.Fstatat(unix.AT_FDCWD, path, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || stampOf(&st) != p.st || !w.trustable(&st) {
		return nil
	}
	return p
}

// dotGit looks at the .git entry of the folder open as parent.
func (w *walker) dotGit(parent int, path string, typ uint8, depth int) {
	switch typ {
	case typeDir:
		fd, err := openDir(parent, ".git")
		if err != nil {
			return
		}
		defer unix.Close(fd)
		w.gitDir(fd, path, depth+1)
	case typeLink:
		w.add(parent, ".git", path, Link)
	default:
		w.add(parent, ".git", path, GitFile)
	}
}

// gitDir looks at a repository's own folder open as fd (which it does not close): its
// settings files and hooks, and those of its worktrees and submodules.
func (w *walker) gitDir(fd int, path string, depth int) {
	w.out.gitDirs[path] = true
	for _, name := range []string{"config", "config.worktree"} {
		w.add(fd, name, filepath.Join(path, name), Config)
	}
	w.add(fd, "commondir", filepath.Join(path, "commondir"), CommonDir)
	for _, t := range [][2]string{{"rebase-merge", "git-rebase-todo"}, {"sequencer", "todo"}} {
		if sub, err := openDir(fd, t[0]); err == nil {
			w.add(sub, t[1], filepath.Join(path, t[0], t[1]), Todo)
			unix.Close(sub)
		}
	}
	w.hooks(fd, path)
	// worktrees/NAME and modules/NAME[/…]: each a repository folder of its own, whose
	// settings git reads when the person is in that worktree or submodule.
	for _, group := range []string{"worktrees", "modules"} {
		g, err := openDir(fd, group)
		if err != nil {
			continue
		}
		w.nested(g, filepath.Join(path, group), depth+1)
	}
}

// nested walks a worktrees or modules folder open as fd (which it closes): every folder in
// it that holds HEAD is a repository folder; a submodule's name may hold slashes.
func (w *walker) nested(fd int, path string, depth int) {
	defer unix.Close(fd)
	if depth > w.b.MaxDepth {
		w.stop(path)
		return
	}
	for _, e := range w.read(fd, path) {
		if e.typ != typeDir {
			continue
		}
		sub, err := openDir(fd, e.name)
		if err != nil {
			continue
		}
		p := filepath.Join(path, e.name)
		var st unix.Stat_t
		if unix.Fstatat(sub, "HEAD", &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			w.gitDir(sub, p, depth)
			unix.Close(sub)
		} else {
			w.nested(sub, p, depth+1)
		}
	}
}

// hooks looks at the hooks folder of the repository folder open as fd.
func (w *walker) hooks(fd int, path string) {
	path = filepath.Join(path, "hooks")
	e, ok := w.add(fd, "hooks", path, Hooks)
	if !ok || e.Kind != Hooks {
		return
	}
	h, err := openDir(fd, "hooks")
	if err != nil {
		return
	}
	defer unix.Close(h)
	for _, d := range w.read(h, path) {
		// Samples are never run; folders are not run either (a hook is executed by path).
		if strings.HasSuffix(d.name, ".sample") || d.typ == typeDir {
			continue
		}
		w.add(h, d.name, filepath.Join(path, d.name), Hook)
	}
}

// add records name in the folder open as parent, if it is there, as kind — or as Link when
// it is a symlink, or something git would block on where it reads a file.
func (w *walker) add(parent int, name, path string, kind Kind) (Entry, bool) {
	var st unix.Stat_t
	if err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Entry{}, false
	}
	e := Entry{Path: path, Kind: kind, Dev: uint64(st.Dev), Ino: uint64(st.Ino), stamp: stampOf(&st)}
	ft := st.Mode & unix.S_IFMT
	switch {
	case ft == unix.S_IFLNK:
		e.Kind = Link
	case kind == Hooks && ft != unix.S_IFDIR:
		// Not a folder: git runs nothing from it.
		return Entry{}, false
	case kind == Hook && ft != unix.S_IFREG:
		// A FIFO or device named like a hook is not run.
		return Entry{}, false
	case (kind == Config || kind == GitFile || kind == CommonDir || kind == Todo) && ft == unix.S_IFDIR:
		return Entry{}, false
	case (kind == Config || kind == GitFile || kind == CommonDir || kind == Todo) && ft != unix.S_IFREG:
		e.Kind = Link
	}
	switch e.Kind {
	case Config:
		if p := w.prev[path]; p != nil && p.stamp == e.stamp {
			e.keys, e.bad, e.hooksPath = p.keys, p.bad, p.hooksPath
		} else {
			e.keys, e.bad, e.hooksPath = readConfig(parent, name, filepath.Dir(path), w.inside)
		}
	case GitFile:
		if p := w.prev[path]; p != nil && p.stamp == e.stamp {
			e.gitdir, e.bad = p.gitdir, p.bad
		} else {
			e.gitdir, e.bad = readGitFile(parent, name, filepath.Dir(path))
		}
	case Todo:
		if p := w.prev[path]; p != nil && p.stamp == e.stamp {
			e.keys, e.bad = p.keys, p.bad
		} else {
			e.keys, e.bad = readTodo(parent, name)
		}
	case CommonDir:
		if p := w.prev[path]; p != nil && p.stamp == e.stamp {
			e.gitdir, e.bad = p.gitdir, p.bad
		} else {
			e.gitdir, e.bad = readCommonDir(parent, name, filepath.Dir(path))
		}
	}
	w.out.Entries = append(w.out.Entries, e)
	return e, true
}

// readFile reads a regular file of at most limit bytes without following a symlink or
// blocking on a FIFO.
func readFile(parent int, name string, limit int64) ([]byte, error) {
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > limit {
		return nil, errors.New("larger than " + sizeWord(limit))
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = errors.New("larger than " + sizeWord(limit))
	}
	return data, err
}

func sizeWord(n int64) string {
	if n >= 1<<20 {
		return itoa(n>>20) + " MiB"
	}
	return itoa(n>>10) + " KiB"
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// readConfig returns a settings file's dangerous keys, or why it could not be read.
// dir is the file's folder and inside says a path is in the walk's roots (for core.worktree).
// It returns the file's core.hooksPath too.
func readConfig(parent int, name, dir string, inside func(string) bool) ([]string, string, string) {
	data, err := readFile(parent, name, maxConfig)
	if err != nil {
		return nil, "could not be read (" + err.Error() + ")", ""
	}
	keys, err := dangerousKeys(data, dir, inside)
	if err != nil {
		return nil, err.Error(), ""
	}
	return keys, "", hooksPathOf(data)
}

// readGitFile returns the folder a .git file names, made absolute against dir.
func readGitFile(parent int, name, dir string) (string, string) {
	data, err := readFile(parent, name, maxGitFile)
	if err != nil {
		return "", "could not be read (" + err.Error() + ")"
	}
	line, rest, _ := strings.Cut(string(data), "\n")
	target, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "gitdir: ")
	if !ok || target == "" {
		return "", notGitFile
	}
	if strings.TrimSpace(rest) != "" {
		// git takes the whole file for the path; this reads one line.
		return "", "holds more than one line"
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	return filepath.Clean(target), ""
}

// notGitFile is what a .git file that git would refuse (empty, or begun by something else
// than "gitdir: ") is: one being written, or harmless.
const notGitFile = `does not start with "gitdir: "`

// readCommonDir returns the folder a commondir file names, made absolute against dir.
func readCommonDir(parent int, name, dir string) (string, string) {
	data, err := readFile(parent, name, maxGitFile)
	if err != nil {
		return "", "could not be read (" + err.Error() + ")"
	}
	target, _, _ := strings.Cut(string(data), "\n")
	target = strings.TrimRight(target, "\r")
	if target == "" {
		return "", "is empty"
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	return filepath.Clean(target), ""
}

// openDirNoLinks opens the folder at path (absolute) following no symlink on the way.
func openDirNoLinks(path string) (int, error) {
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(strings.Trim(filepath.Clean(path), "/"), "/") {
		if c == "" {
			continue
		}
		next, err := openDir(fd, c)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// ScanFrom walks roots as Scan does, but reads again only the folders whose stamps differ
// from what hint, a walk taken earlier (DecodeFolders), found in them: a folder's record
// holds by its path and stamp, whatever else that walk covered. Only the folders are taken
// from hint: every repository found is looked into again.
func ScanFrom(roots []string, b Bounds, hint *Snapshot) *Snapshot {
	if hint == nil {
		return scan(roots, b, nil)
	}
	return scan(roots, b, &Snapshot{dirs: hint.dirs})
}

// foldersVersion changes whenever EncodeFolders's layout does.
const foldersVersion = 1

// EncodeFolders is what s found in the folders whose stamps a later walk may trust, for
// ScanFrom: kept by the caller where nothing a walk reads can write it.
func (s *Snapshot) EncodeFolders() []byte {
	e := wire.NewEncoder(foldersVersion)
	e.Strings(s.roots)
	e.Uint(uint64(len(s.dirs)))
	for path, f := range s.dirs {
		e.String(path)
		e.Uint(f.st.dev)
		e.Uint(f.st.ino)
		e.Uint(f.st.size)
		e.Uint(uint64(f.st.mode))
		e.Int(f.st.mtime)
		e.Int(f.st.ctime)
		e.Uint(uint64(f.n))
		e.Strings(f.subdirs)
		e.Byte(f.git)
		e.Flags(f.repo)
	}
	return e.Message()
}

// DecodeFolders reads what EncodeFolders wrote, within b's bounds; anything else is an error.
func DecodeFolders(data []byte, b Bounds) (*Snapshot, error) {
	d := wire.NewDecoder(data, foldersVersion)
	s := &Snapshot{roots: d.Strings(), dirs: map[string]*folder{}}
	// A folder takes at least eleven bytes, which bounds what a wrong count can allocate.
	n := d.Count(11)
	if n > b.MaxEntries {
		return nil, errors.New("more folders than a walk reads")
	}
	for i := 0; i < n; i++ {
		path := d.String()
		f := &folder{st: stamp{dev: d.Uint(), ino: d.Uint(), size: d.Uint(), mode: uint32(d.Uint()), mtime: d.Int(), ctime: d.Int()}}
		f.n = int(d.Uint())
		f.subdirs = d.Strings()
		f.git = d.Byte()
		f.repo = wire.Flag(d.Byte(), 0)
		if !filepath.IsAbs(path) || f.git > typeUnknown || f.n < 0 || f.n > b.MaxEntries {
			return nil, errors.New("a folder record is not one a walk writes")
		}
		for _, name := range f.subdirs {
			if name == "" || name == "." || name == ".." || name == ".git" || strings.ContainsRune(name, '/') {
				return nil, errors.New("a folder record names a folder a walk does not")
			}
		}
		s.dirs[path] = f
	}
	if err := d.End(); err != nil {
		return nil, err
	}
	return s, nil
}

// inside says whether path lies in one of the walk's roots.
func (w *walker) inside(path string) bool {
	return slices.ContainsFunc(w.out.roots, func(r string) bool { return within(r, path) })
}

// readTodo returns the exec lines of a rebase's or cherry-pick's steps (exec, x), each as a
// key, or why it could not be read.
func readTodo(parent int, name string) ([]string, string) {
	data, err := readFile(parent, name, maxConfig)
	if err != nil {
		return nil, "could not be read (" + err.Error() + ")"
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "exec" || f[0] == "x") {
			out = append(out, "exec "+strings.Join(f[1:], " "))
		}
	}
	return out, ""
}
