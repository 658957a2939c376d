// Package caches keeps the tools' caches of a project between its sessions: Go's build and
// module caches, npm's, pip's, uv's, cargo's registry and git checkouts and what else the
// tools keep under XDG_CACHE_HOME, in OpenWorker's state folder, one folder per project,
// bounded in size with the least recently used going first. It also finds the person's own
// caches that a session may read without writing (Go's module download cache).
//
// A project is the set of a session's writable folders, keyed as the session's kept walks
// are (Key). The package binds nothing and enforces nothing: the session hands the folder
// to its provider, which makes it writable inside and nothing else of the state folder.
//
// Why sharing within a project is safe, and why caches are never shared across projects or
// with the person:
//
//   - A project's caches are given only to sessions whose writable folders are exactly the
//     project's (a folder added while a session runs only adds to them). Whatever a command
//     plants in them — a build output that is not what its inputs make, a module's source
//     changed after go.sum checked it, a package in npm's or pip's cache, a cargo setting —
//     runs, if ever, in a later session of the same project, behind the same wall, with the
//     same folders writable. The command could already plant as much in the project's own
//     files (a replace directive, a vendored copy, an install script, a test that runs
//     anything), which every later session of the project runs too: the cache gives it
//     nothing it did not have.
//   - A session of another project must neither write them (its plant would run in this
//     project's sessions, a write into folders it never had) nor read them (they hold this
//     project's private modules, build outputs of its code, what a tool cached of its
//     logins). So each project has a folder of its own, and a session is given its own only.
//   - The person's own caches are used by the person's tools outside every sandbox: a plant
//     there would run outside the wall. They are never given writable; what is read of them
//     is read-only, and only what holds packages (HostGo).
//   - The state folder is never a session folder (policy refuses it), so no session can
//     reach another project's caches by sharing it, and the person's tools never look there.
package caches

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/internal/randbytes"
	"github.com/openworker/openworker/core/internal/regularfile"
	"github.com/openworker/openworker/core/policy"
)

// Key is the name a project's kept state goes by: its writable folders, resolved and in
// the order the session's policy holds them, hashed. Sessions of the same folders get the
// same key, and their walks of the folders are kept under it too.
func Key(roots []string) string {
	sum := sha256.Sum256([]byte(strings.Join(roots, "\x00")))
	return hex.EncodeToString(sum[:16])
}

// Roots are the writable folders of a session given folders, as its policy holds them:
// resolved, sorted, each once, none inside another. Their Key names the project's caches.
func Roots(folders []string) ([]string, error) {
	var out []string
	for _, f := range folders {
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, err
		}
		r, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, err
		}
		out = append(out, filepath.Clean(r))
	}
	return policy.Minimal(out), nil
}

// Folder is the folder of a project's caches that its sessions get, writable, inside the
// project's folder in the store; the project's record and lock lie beside it, out of reach.
const Folder = "tools"

const (
	recordFile = "project.json"
	lockFile   = "lock"
	// usedFile's time is when a session of the project last ended, and lockFile's when one
	// last started: one started after the last end either runs or never ended. Times are
	// kept on files, not in the record, so that an end writes no record (replacing a file
	// made ext4 write it out, which took a millisecond of every end).
	usedFile = "used"
	// storeLock serialises trims and clears between processes.
	storeLock = ".lock"
	// trashPrefix names a project's folder moved aside to be removed: a session that starts
	// meanwhile makes a new one.
	trashPrefix = ".trash-"
	maxRecord   = 1 << 20
)

// MaxProjects bounds how many projects have caches kept, whatever their size: the least
// recently used go first. Folders made for a moment (a test's, a check's) would otherwise
// add up one empty project at a time.
const MaxProjects = 256

// ErrInUse is a project's caches that a running session uses: they are not removed.
var ErrInUse = errors.New("a session of this project is running and uses its caches")

// Store is the caches of every project, in the state folder.
type Store struct{ dir string }

// NewStore is the store in the state folder stateDir.
func NewStore(stateDir string) Store { return Store{dir: filepath.Join(stateDir, "caches")} }

// Dir is where the store keeps its projects.
func (st Store) Dir() string { return st.dir }

// Project is one project's kept caches, as its last session left them.
type Project struct {
	Key     string
	Folders []string
	// Size is what the caches took on disk when they were last measured.
	Size int64
	// Used is when the last session that used them ended.
	Used time.Time
	// InUse: a session uses them now.
	InUse bool
}

// record is what the store keeps of a project beside its caches.
type record struct {
	Folders []string `json:"folders"`
	Size    int64    `json:"size"`
	// Measured is when Size was measured: a walk of the caches, which takes some 40 ms a
	// GiB, is made at most once every MeasureEvery for a project.
	Measured time.Time `json:"measured"`
}

// MeasureEvery is how often, at most, a session's end measures its project's caches: a
// project run many times a minute (openworker run) pays for one walk of its caches a
// minute, not one a run. What its sessions add meanwhile is counted at the next.
const MeasureEvery = time.Minute

// Kept is a project's caches held by a running session: no trim or clear removes them
// until Close.
type Kept struct {
	// Dir is the folder the session's tools write (as the store's folder was given: the
	// session's policy resolves it).
	Dir     string
	key     string
	folders []string
	st      Store
	lock    *os.File
}

// Open holds the caches of the project of roots (its writable folders, resolved) for a
// session, making their folder when there is none. A trim or clear that holds them at that
// moment makes Open fail with ErrInUse rather than wait: the session then starts cold.
func (st Store) Open(roots []string) (*Kept, error) {
	if len(roots) == 0 {
		return nil, errors.New("caches: a project has at least one writable folder")
	}
	key := Key(roots)
	dir := filepath.Join(st.dir, key)
	// Removed by a trim between the steps below, the folder is made again once.
	for try := 0; ; try++ {
		k, err := st.open(key, dir)
		if err == nil {
			k.folders = slices.Clone(roots)
			if _, err := os.Lstat(filepath.Join(dir, recordFile)); errors.Is(err, fs.ErrNotExist) {
				// A new project's folders are recorded at once, for caches list; used
				// never yet, so that a crash before the end is measured (see entries).
				_ = writeRecord(dir, record{Folders: k.folders})
			}
			return k, nil
		}
		if !errors.Is(err, errMoved) || try == 1 {
			return nil, err
		}
	}
}

// errMoved: the project's folder was moved aside by a trim while it was opened.
var errMoved = errors.New("caches: the project's folder was removed while it was opened")

func (st Store) open(key, dir string) (*Kept, error) {
	if err := os.MkdirAll(filepath.Join(dir, Folder), 0o700); err != nil {
		return nil, fmt.Errorf("making the project's cache folder: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errMoved
	}
	if err != nil {
		return nil, fmt.Errorf("opening the project's cache lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrInUse
		}
		return nil, fmt.Errorf("locking the project's caches: %w", err)
	}
	// The lock taken must be the one at the path now: a trim that moved the folder aside
	// after it was opened holds (or held) another.
	held, err1 := lock.Stat()
	there, err2 := os.Lstat(filepath.Join(dir, lockFile))
	if err1 != nil || err2 != nil || !os.SameFile(held, there) {
		lock.Close()
		return nil, errMoved
	}
	// The lock's time says when a session last started with the caches: one after the
	// last end either runs or never ended (see entries).
	now := time.Now()
	_ = os.Chtimes(lock.Name(), now, now)
	tools := filepath.Join(dir, Folder)
	if fi, err := os.Lstat(tools); err != nil || !fi.IsDir() {
		lock.Close()
		return nil, fmt.Errorf("the project's cache folder %s is not a folder", tools)
	}
	return &Kept{Dir: tools, key: key, st: st, lock: lock}, nil
}

// Key is the project's key.
func (k *Kept) Key() string { return k.key }

// Close records when the project's caches were used and, at most once every MeasureEvery,
// what they take, lets them go, and, when it measured them, trims the store to max bytes
// (see Store.Trim). It is called once the session's sandbox is gone: nothing writes them
// then but other sessions of the same project.
func (k *Kept) Close(max int64) {
	if k == nil || k.lock == nil {
		return
	}
	dir := filepath.Join(k.st.dir, k.key)
	now := time.Now()
	r, ok := readRecord(dir)
	measured := !ok || r.Measured.IsZero() || now.Sub(r.Measured) >= MeasureEvery || now.Before(r.Measured)
	if measured {
		r = record{Folders: k.folders, Size: diskUsage(filepath.Join(dir, Folder)), Measured: now}
		_ = writeRecord(dir, r)
	}
	touch(filepath.Join(dir, usedFile), now)
	if measured && r.Size == 0 && syscall.Flock(int(k.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		// Nothing was kept: no folder is left for it (a project made for a moment).
		k.st.remove(dir)
	}
	k.lock.Close()
	k.lock = nil
	// What the store holds changes only with a measure: between two, a trim (which reads
	// every project's record, some 3.5 ms for 256 of them) would decide as the last did.
	if measured {
		k.st.Trim(max)
	}
}

// touch sets a file's time, making it when there is none.
func touch(path string, t time.Time) {
	if os.Chtimes(path, t, t) == nil {
		return
	}
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600); err == nil {
		f.Close()
		_ = os.Chtimes(path, t, t)
	}
}

// modTime is a file's modification time, or the zero time when it has none.
func modTime(path string) time.Time {
	if fi, err := os.Lstat(path); err == nil {
		return fi.ModTime()
	}
	return time.Time{}
}

// writeRecord writes a project's record in one piece.
func writeRecord(dir string, r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".record-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return errors.Join(werr, cerr)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, recordFile)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// readRecord reads a project's record; the store is written by OpenWorker alone, but a
// record that does not read back is treated as none.
func readRecord(dir string) (record, bool) {
	var r record
	b, err := regularfile.Read(filepath.Join(dir, recordFile), maxRecord)
	if err != nil || json.Unmarshal(b, &r) != nil {
		return record{}, false
	}
	return r, true
}

// entry is a project in the store while it is trimmed.
type entry struct {
	Project
	dir  string
	lock *os.File // held exclusively, or nil when a session holds it
}

// Trim removes the caches of the least recently used projects until those kept take at
// most max bytes and number at most MaxProjects; max 0 keeps none. Caches a session uses are
// never removed, and count at the size their last session recorded. It returns the folders
// of the projects it removed.
func (st Store) Trim(max int64) (removed [][]string) {
	if _, err := os.Lstat(st.dir); err != nil {
		return nil // nothing was ever kept
	}
	unlock, err := st.lockStore()
	if err != nil {
		return nil
	}
	defer unlock()
	entries := st.entries(true)
	defer func() {
		for _, e := range entries {
			if e.lock != nil {
				e.lock.Close()
			}
		}
	}()
	var total int64
	for _, e := range entries {
		total += e.Size
	}
	count := len(entries)
	// Oldest first; what no session left a record of yet (a crash before its end) counts as
	// used when its lock was last taken.
	slices.SortFunc(entries, func(a, b *entry) int { return a.Used.Compare(b.Used) })
	for _, e := range entries {
		if total <= max && count <= MaxProjects {
			break
		}
		if e.lock == nil {
			continue
		}
		st.remove(e.dir)
		total -= e.Size
		count--
		removed = append(removed, e.Folders)
	}
	return removed
}

// entries lists the store's projects; with lock, each is held exclusively where no session
// holds it, and a record that a crashed session left behind is made again from the disk.
// Leftovers of a removal that was cut short are removed.
func (st Store) entries(lock bool) []*entry {
	des, err := os.ReadDir(st.dir)
	if err != nil {
		return nil
	}
	var out []*entry
	for _, de := range des {
		name := de.Name()
		dir := filepath.Join(st.dir, name)
		if strings.HasPrefix(name, trashPrefix) && lock {
			removeTree(dir)
			continue
		}
		if !de.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		e := &entry{Project: Project{Key: name}, dir: dir}
		r, _ := readRecord(dir)
		e.Folders, e.Size, e.Used = r.Folders, r.Size, modTime(filepath.Join(dir, usedFile))
		l, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err == nil {
			if syscall.Flock(int(l.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
				e.InUse = true
				l.Close()
			} else if !lock {
				l.Close()
			} else {
				e.lock = l
			}
		}
		// Started after the last end: a session runs now, or ended without its end.
		crashed := false
		if opened := modTime(filepath.Join(dir, lockFile)); opened.After(e.Used) {
			crashed, e.Used = true, opened
		}
		// Used since it was last measured, and not measured for a while.
		unmeasured := e.Used.After(r.Measured) && time.Since(r.Measured) >= MeasureEvery
		if e.lock != nil && (crashed || unmeasured) {
			e.Size = diskUsage(filepath.Join(dir, Folder))
			_ = writeRecord(dir, record{Folders: r.Folders, Size: e.Size, Measured: time.Now()})
		}
		out = append(out, e)
	}
	return out
}

// List returns the store's projects, the most recently used first.
func (st Store) List() []Project {
	var out []Project
	for _, e := range st.entries(false) {
		out = append(out, e.Project)
	}
	slices.SortFunc(out, func(a, b Project) int { return b.Used.Compare(a.Used) })
	return out
}

// Clear removes the caches of the project of key; ErrInUse while a session uses them, and
// fs.ErrNotExist when none are kept.
func (st Store) Clear(key string) error {
	if key == "" || strings.ContainsAny(key, "/.") {
		return fmt.Errorf("caches: %q is not a project's key", key)
	}
	unlock, err := st.lockStore()
	if err != nil {
		return err
	}
	defer unlock()
	dir := filepath.Join(st.dir, key)
	if _, err := os.Lstat(dir); err != nil {
		return err
	}
	l, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer l.Close()
	if err := syscall.Flock(int(l.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return ErrInUse
	}
	st.remove(dir)
	return nil
}

// lockStore holds the store's own lock, so that two processes never trim or clear at once.
func (st Store) lockStore() (func(), error) {
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(st.dir, storeLock), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// remove moves a project's folder aside, under its exclusive lock, and removes it: a
// session that starts meanwhile finds no folder and makes a new one, never half of this.
func (st Store) remove(dir string) {
	var b [8]byte
	_ = randbytes.Read(b[:])
	trash := filepath.Join(st.dir, trashPrefix+hex.EncodeToString(b[:]))
	if os.Rename(dir, trash) != nil {
		trash = dir
	}
	removeTree(trash)
}

// diskUsage is what the files and folders under dir (not dir itself) take on disk, links
// not followed.
func diskUsage(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += onDisk(fi)
		}
		return nil
	})
	return n
}

// onDisk is what a file takes on disk: its blocks, where the system says.
func onDisk(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}
