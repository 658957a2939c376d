package runner

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The file tools are carried out by the runner's own process, which on Linux is the
// sandbox's first process, not a command: a path into its own /proc entries (its memory,
// its descriptors, its threads, some of which live outside the sandbox's namespaces) would
// give the agent what no command has. Forking a walled child per call would cost a Go
// program's start and the runner's binary inside the sandbox, so the calls stay here and
// every file is opened so that it cannot lead there:
//
//   - openat2 with RESOLVE_NO_MAGICLINKS: no /proc/PID/fd/N, exe, cwd, root or map_files
//     link is followed, so no descriptor of the runner's is reached through its name (inside
//     a Linux sandbox, where openat2 does not exist, the same walk made here);
//   - a file that turns out to be on procfs is refused when it belongs to the runner's own
//     process, as the kernel names it after resolving (/proc/self, /proc/net and
//     /proc/mounts lead there by ordinary symbolic links), whichever of its threads names it;
//   - O_NONBLOCK, and only regular files are read or written, so that a FIFO or a device
//     cannot hold the runner in open or write while every other call waits;
//   - a listing stats and reads links relative to the opened folder, never by a path that
//     could be swapped meanwhile.
//
// A command's /proc entries stay reachable, as they are to the command itself.

// openTool opens path for a file tool, as above. flags are open(2) flags.
func openTool(path string, flags int, mode uint32) (int, error) {
	how := &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY), Mode: uint64(mode), Resolve: unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, path, how)
	if errors.Is(err, unix.ENOSYS) {
		// Inside a Linux sandbox openat2 does not exist (the seccomp filter cannot read the
		// mode it carries), nor before Linux 5.6.
		fd, err = openNoMagicLinks(path, int(how.Flags), mode)
	}
	switch {
	case errors.Is(err, unix.ELOOP):
		return -1, &fs.PathError{Op: "open", Path: path, Err: errors.New("it leads through a process's descriptor link (/proc/PID/fd and the like), which the file tools do not follow; use exec")}
	case err != nil:
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if err := notOwnProc(fd); err != nil {
		unix.Close(fd)
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// openNoMagicLinks is openat2 with RESOLVE_NO_MAGICLINKS where there is no openat2: the path
// is walked a component at a time (O_PATH|O_NOFOLLOW), ordinary symbolic links are read and
// followed here, and a symbolic link on procfs is followed only when it is one of the
// ordinary ones (/proc/self, /proc/thread-self, /proc/mounts, /proc/net); any other there
// (a descriptor's, cwd, root, exe, a namespace's) is ELOOP, as openat2 answers.
func openNoMagicLinks(path string, flags int, mode uint32) (int, error) {
	const maxLinks = 40 // as the kernel's own walk
	start := "."
	if filepath.IsAbs(path) {
		start = "/"
	}
	dir, err := unix.Open(start, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer func() { unix.Close(dir) }()
	rest := strings.Split(path, "/")
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		if name == "" && len(rest) > 0 {
			continue // "//" and the leading "/"
		}
		if name == "" {
			name = "." // a trailing "/"
		}
		var next int
		if len(rest) == 0 {
			next, err = unix.Openat(dir, name, flags|unix.O_NOFOLLOW, mode)
		} else {
			next, err = unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		link := ""
		switch {
		case err == nil && len(rest) > 0:
			var st unix.Stat_t
			if err := unix.Fstat(next, &st); err != nil {
				unix.Close(next)
				return -1, err
			}
			if st.Mode&unix.S_IFMT != unix.S_IFLNK {
				unix.Close(dir)
				dir = next
				continue
			}
			unix.Close(next)
			link, err = readLinkAt(dir, name)
		case err == nil:
			return next, nil
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) && flags&unix.O_DIRECTORY != 0:
			// The last name is a symbolic link (O_NOFOLLOW), or names one to a folder.
			var st unix.Stat_t
			if serr := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
				return -1, err
			}
			link, err = readLinkAt(dir, name)
		default:
			return -1, err
		}
		if err != nil {
			return -1, err
		}
		if links++; links > maxLinks {
			return -1, unix.ELOOP
		}
		var sfs unix.Statfs_t
		if err := unix.Fstatfs(dir, &sfs); err != nil {
			return -1, err
		}
		if sfs.Type == unix.PROC_SUPER_MAGIC && !ordinaryProcLink(link) {
			return -1, unix.ELOOP
		}
		if filepath.IsAbs(link) {
			root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return -1, err
			}
			unix.Close(dir)
			dir = root
		}
		rest = append(strings.Split(link, "/"), rest...)
	}
	return -1, unix.ENOENT
}

// ordinaryProcLink says whether a symbolic link's target on procfs is one of the ordinary
// links (to a process's or a thread's folder, or self/mounts and self/net), not a magic one.
func ordinaryProcLink(target string) bool {
	if target == "self/mounts" || target == "self/net" {
		return true
	}
	pid, task, hasTask := strings.Cut(target, "/task/")
	digits := func(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }
	return digits(pid) && (!hasTask || digits(task))
}

// readLinkAt reads the symbolic link name in dir.
func readLinkAt(dir int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", err
	}
	if n == len(buf) {
		return "", unix.ENAMETOOLONG
	}
	return string(buf[:n]), nil
}

// errOwnProc refuses a file of the runner's own process.
var errOwnProc = errors.New("it is the tool runner's own process entry in /proc, which the file tools do not reach; a command's own entries are reachable with exec")

// notOwnProc refuses fd when it is a procfs file of this process or any of its threads.
func notOwnProc(fd int) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return err
	}
	if st.Type != unix.PROC_SUPER_MAGIC {
		return nil
	}
	// What the kernel calls the file once resolved: /proc/<pid>/… for a process's entry,
	// whatever the path said (self, thread-self, net, a symbolic link in a shared folder).
	name, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return err
	}
	if name == "/proc" {
		return nil
	}
	rest, ok := strings.CutPrefix(name, "/proc/")
	if !ok {
		// The only procfs inside is the sandbox's /proc; another is not one to judge.
		return errOwnProc
	}
	first, _, _ := strings.Cut(rest, "/")
	if first == "" || strings.Trim(first, "0123456789") != "" {
		return nil // /proc/cpuinfo, /proc/sys/… are the same for every process
	}
	// A thread's PID is an entry of its own (/proc/<tid>, unlisted); its Tgid says whose
	// thread it is. An entry whose owner cannot be read is refused: it is gone, or not
	// ours to judge. The runner's threads never end (none is locked to a goroutine that
	// returns), so a PID of one of them is never reused by another process meanwhile.
	status, err := os.ReadFile("/proc/" + first + "/status")
	if err != nil {
		return errOwnProc
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if strings.TrimSpace(v) == strconv.Itoa(os.Getpid()) {
				return errOwnProc
			}
			return nil
		}
	}
	return errOwnProc
}

// regular refuses a descriptor that is not a regular file.
func regular(fd int, path string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return &st, nil
	case unix.S_IFDIR:
		return nil, fmt.Errorf("%s is a folder; use list", path)
	}
	return nil, fmt.Errorf("%s is not a regular file (a FIFO, a socket or a device); use exec", path)
}

func readFile(path string, off, limit int64) (*Result, error) {
	fd, err := openTool(path, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	st, err := regular(fd, path)
	if err != nil {
		return nil, err
	}
	if limit <= 0 || limit > MaxRead {
		limit = MaxRead
	}
	if off < 0 {
		return nil, fmt.Errorf("read %s: a negative offset", path)
	}
	buf := make([]byte, limit)
	n := 0
	for n < len(buf) {
		m, err := unix.Pread(fd, buf[n:], off+int64(n))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
	}
	return &Result{Content: buf[:n], Size: st.Size}, nil
}

func writeFile(path string, content []byte) (*Result, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	fd, err := openTool(path, unix.O_WRONLY|unix.O_CREAT, 0o644)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	// Truncated only once it is known to be a regular file that is not the runner's.
	if _, err := regular(fd, path); err != nil {
		return nil, err
	}
	if err := unix.Ftruncate(fd, 0); err != nil {
		return nil, &fs.PathError{Op: "truncate", Path: path, Err: err}
	}
	for rest := content; len(rest) > 0; {
		n, err := unix.Write(fd, rest)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "write", Path: path, Err: err}
		}
		rest = rest[n:]
	}
	return &Result{Size: int64(len(content))}, nil
}

func listDir(path string) (*Result, error) {
	fd, err := openTool(path, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var names []string
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: path, Err: err}
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	slices.Sort(names) // as os.ReadDir gives them
	res := &Result{Entries: make([]Entry, 0, len(names))}
	for _, name := range names {
		e := Entry{Name: name}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
			mode := fileMode(st.Mode)
			e.Dir = mode.IsDir()
			e.Size, e.Mode, e.MTime = st.Size, mode.String(), st.Mtim.Sec
			if mode&fs.ModeSymlink != 0 {
				link := make([]byte, unix.PathMax)
				if n, err := unix.Readlinkat(fd, name, link); err == nil {
					e.Link = string(bytes.Clone(link[:n]))
				}
			}
		}
		res.Entries = append(res.Entries, e)
	}
	return res, nil
}

// fileMode is os.FileMode for a stat(2) mode, as os.Lstat gives it.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
