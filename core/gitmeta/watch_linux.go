package gitmeta

import (
	"fmt"
	"os"
	"path/filepath"
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
	unwatched string // the first folder left unwatched, or ""
}

// watched is a folder watched: its path when last seen, and whether it lies in a
// repository's folder or an agent host's settings, where any change is told.
type watched struct {
	path string
	meta bool
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
	w := &watcher{f: os.NewFile(uintptr(fd), "inotify"), c: c, paths: map[int32]watched{}}
	for _, r := range topRoots(roots) {
		w.addTree(r, false)
	}
	go w.read()
	return &Watcher{C: c, w: w}, nil
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

// isMeta says whether the folder name, in a folder that is (parentMeta) or is not in a
// repository's folder, is in one or in an agent host's settings.
func isMeta(parentMeta bool, name string) bool {
	return parentMeta || name == ".git" || name == ".claude" || name == ".codex" || name == ".gemini" || name == ".cursor"
}

// addTree watches the folder at path and every folder in it, following no symlink.
func (w *watcher) addTree(path string, meta bool) {
	fd, err := openDirNoLinks(path)
	if err != nil {
		return
	}
	w.addOpen(fd, path, meta)
}

// addOpen watches the folder open as fd (which it closes) at path, and what it holds.
func (w *watcher) addOpen(fd int, path string, meta bool) {
	defer unix.Close(fd)
	if !w.add(path, meta) {
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
		if meta && unwatched[e.name] {
			continue
		}
		sub, err := openDir(fd, e.name)
		if err != nil {
			continue
		}
		w.addOpen(sub, filepath.Join(path, e.name), isMeta(meta, e.name))
	}
}

// add watches the one folder at path; false when it is not watched.
func (w *watcher) add(path string, meta bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.paths) >= maxWatched {
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
	w.paths[int32(wd)] = watched{path: path, meta: meta}
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
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return
		}
		tell := false
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			end := off + unix.SizeofInotifyEvent + int(ev.Len)
			if end > n {
				break
			}
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:end]), "\x00")
			off = end
			if w.event(ev.Wd, ev.Mask, name) {
				tell = true
			}
		}
		if tell {
			select {
			case w.c <- struct{}{}:
			default:
			}
		}
	}
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
			if !(p.meta && unwatched[name]) {
				w.addTree(child, isMeta(p.meta, name))
			}
		}
		// A folder made or moved in may hold a repository; one moved away, left a place
		// for another.
		return true
	}
	return p.meta || metaNames[name]
}
