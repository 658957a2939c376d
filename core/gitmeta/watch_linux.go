package gitmeta

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Linux watcher is inotify's: a watch on every folder under the roots (but a repository
// folder's objects, refs and logs), added as folders are made or moved in. A folder made is
// watched only once the event that says so is read, and may have been filled by then: that
// event is itself a change told, and the check that follows reads the folder whole.

type watcher struct {
	f *os.File
	c chan struct{}

	mu        sync.Mutex
	paths     map[int32]watched
	max       int    // how many folders it may watch
	unwatched string // the first folder left unwatched, or ""

	// rmu is held to read the events and take them in, by the reading goroutine or Settle;
	// told counts the events that may change what git reads.
	rmu  sync.Mutex
	buf  []byte
	told uint64
}

// watched is a folder watched: its path when last seen, and what kind of folder it is.
type watched struct {
	path string
	kind watchKind
}

// watchKind says which changes in a folder are told.
type watchKind uint8

const (
	// plain: a project's folder; folders made or moved in, and git's names, are told.
	plain watchKind = iota
	// gitDir: a repository's own folder: only changes to git's names (config, hooks,
	// commondir, worktrees, ...) are told, not its index, HEAD or refs, which every git status
	// and commit writes.
	gitDir
	// group: a repository's worktrees or modules folder, whose folders are repositories'
	// own (a submodule's name may hold slashes: so are theirs).
	group
	// every: a hooks folder, what a rebase has left to do, an agent host's settings: any
	// change is told.
	every
)

// kindOf is the kind of the folder name in a folder of kind parent.
func kindOf(parent watchKind, name string) watchKind {
	switch {
	case parent == every:
		return every
	case name == ".claude" || name == ".codex" || name == ".gemini" || name == ".cursor":
		return every
	case parent == gitDir && (name == "hooks" || name == "rebase-merge" || name == "rebase-apply" || name == "sequencer"):
		return every
	case parent == gitDir && (name == "worktrees" || name == "modules"):
		return group
	case name == ".git", parent == group:
		return gitDir
	}
	return plain
}

const watchMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE |
	unix.IN_CLOSE_WRITE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// Watch watches roots (absolute, resolved folders) and what they hold.
func Watch(roots []string) (*Watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoWatch, err)
	}
	c := make(chan struct{}, 1)
	w := &watcher{f: os.NewFile(uintptr(fd), "inotify"), c: c, paths: map[int32]watched{}, max: watchBound()}
	for _, r := range topRoots(roots) {
		w.addTree(r, plain)
	}
	go w.read()
	return &Watcher{C: c, w: w}, nil
}

// watchBound is how many folders one watcher may watch: maxWatched, and at most a quarter
// of what the kernel lets the person's processes watch together (fs.inotify.max_user_watches,
// 8,192 on older systems), so that the person's editor and build tools keep theirs.
func watchBound() int {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	if err != nil {
		return maxWatched / 8
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return maxWatched / 8
	}
	return min(maxWatched, n/4)
}

// Unwatched is the first folder that is not watched (past maxWatched, or refused by the
// kernel's limit), or "".
func (w *Watcher) Unwatched() string {
	if w == nil || w.w == nil {
		return ""
	}
	w.w.mu.Lock()
	defer w.w.mu.Unlock()
	return w.w.unwatched
}

// Close stops watching; C is told nothing more.
func (w *Watcher) Close() {
	if w != nil && w.w != nil {
		w.w.f.Close()
	}
}

// addTree watches the folder at path and every folder in it, following no symlink.
func (w *watcher) addTree(path string, kind watchKind) {
	fd, err := openDirNoLinks(path)
	if err != nil {
		return
	}
	w.addOpen(fd, path, kind)
}

// addOpen watches the folder open as fd (which it closes) at path, and what it holds.
func (w *watcher) addOpen(fd int, path string, kind watchKind) {
	defer unix.Close(fd)
	if !w.add(path, kind) {
		return
	}
	buf := make([]byte, 16<<10)
	list, _ := readDir(fd, maxWatched, buf)
	for _, e := range list {
		if e.typ == typeUnknown {
			var st unix.Stat_t
			if unix.Fstatat(fd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
				continue
			}
		} else if e.typ != typeDir {
			continue
		}
		if kind == gitDir && unwatched[e.name] {
			continue
		}
		sub, err := openDir(fd, e.name)
		if err != nil {
			continue
		}
		w.addOpen(sub, filepath.Join(path, e.name), kindOf(kind, e.name))
	}
}

// add watches the one folder at path; false when it is not watched.
func (w *watcher) add(path string, kind watchKind) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.paths) >= w.max {
		if w.unwatched == "" {
			w.unwatched = path
		}
		return false
	}
	wd, err := unix.InotifyAddWatch(int(w.f.Fd()), path, watchMask)
	if err != nil {
		if err == unix.ENOSPC && w.unwatched == "" {
			w.unwatched = path
		}
		return false
	}
	w.paths[int32(wd)] = watched{path: path, kind: kind}
	return true
}

// forget stops watching the folders at path and below, moved away: those that are still under
// the roots are watched again at their new paths when the event of their arrival is read.
func (w *watcher) forget(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for wd, p := range w.paths {
		if within(path, p.path) {
			unix.InotifyRmWatch(int(w.f.Fd()), uint32(wd))
			delete(w.paths, wd)
		}
	}
}

// read reads the events until the watcher is closed, and tells C of those that may change
// what git reads.
func (w *watcher) read() {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return
	}
	// The function reads until the queue is empty and asks to wait for more; Read returns
	// only when the file is closed.
	_ = rc.Read(func(fd uintptr) bool {
		_, err := w.drain(int(fd))
		return err != unix.EAGAIN
	})
}

// drain reads the events queued on fd and takes them in; n is how many were told.
func (w *watcher) drain(fd int) (n int, err error) {
	w.rmu.Lock()
	defer w.rmu.Unlock()
	if w.buf == nil {
		w.buf = make([]byte, 64<<10)
	}
	for {
		got, err := unix.Read(fd, w.buf)
		if err != nil {
			return n, err
		}
		if got <= 0 {
			return n, unix.EAGAIN
		}
		for off := 0; off+unix.SizeofInotifyEvent <= got; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			end := off + unix.SizeofInotifyEvent + int(ev.Len)
			if end > got {
				break
			}
			name := strings.TrimRight(string(w.buf[off+unix.SizeofInotifyEvent:end]), "\x00")
			off = end
			if w.event(ev.Wd, ev.Mask, name) {
				n++
				w.told++
				select {
				case w.c <- struct{}{}:
				default:
				}
			}
		}
	}
}

// Settle takes in every change made so far (the kernel queues each as it is made), and says
// how many were told since the watcher started, and whether every folder under the roots is
// watched. Two calls that give the same count, with every folder watched, had no change
// between them that could change what git reads: a check then would find what the one
// before found.
func (w *Watcher) Settle() (told uint64, whole bool) {
	if w == nil || w.w == nil {
		return 0, false
	}
	rc, err := w.w.f.SyscallConn()
	if err != nil {
		return 0, false
	}
	if rc.Control(func(fd uintptr) { w.w.drain(int(fd)) }) != nil {
		return 0, false
	}
	w.w.rmu.Lock()
	told = w.w.told
	w.w.rmu.Unlock()
	return told, w.Unwatched() == ""
}

// event takes one event; true when it may change what git reads.
func (w *watcher) event(wd int32, mask uint32, name string) bool {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		return true // events were lost: the check reads everything that changed
	}
	w.mu.Lock()
	p, ok := w.paths[wd]
	if mask&unix.IN_IGNORED != 0 {
		delete(w.paths, wd)
	}
	w.mu.Unlock()
	if !ok || mask&unix.IN_IGNORED != 0 {
		return false
	}
	if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
		// A folder moved or removed: what takes its place may be a repository.
		return true
	}
	if mask&unix.IN_ISDIR != 0 {
		child := filepath.Join(p.path, name)
		switch {
		case mask&unix.IN_MOVED_FROM != 0:
			w.forget(child)
		case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
			if !(p.kind == gitDir && unwatched[name]) {
				w.addTree(child, kindOf(p.kind, name))
			}
		}
		// A folder made or moved in may hold a repository; one moved away, left a place
		// for another. In a repository's folder, only git's own names matter.
		return p.kind != gitDir || gitDirNames[name]
	}
	if mask&unix.IN_Q_OVERFLOW != 0 {
		return true
	}
	switch p.kind {
	case every:
		return true
	case gitDir:
		return gitDirNames[name]
	}
	return metaNames[name]
}
