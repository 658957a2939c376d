package caches

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// removeTree removes dir and everything under it. Go's module cache makes its folders
// read-only, which os.RemoveAll cannot empty as an ordinary user; those are made writable
// first, each opened without following a link and changed through its descriptor, so that
// a link put where a folder was (by a command of a session still running on a Mac, where a
// process can outlive its session) never makes this change a file elsewhere.
func removeTree(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	fd, err := openDir(dir)
	if err != nil {
		return
	}
	makeWritable(fd, 0)
	_ = os.RemoveAll(dir)
}

// openDir opens a folder, never through a link at its end.
func openDir(dir string) (int, error) {
	return unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// maxDepth bounds how deep makeWritable goes: each level holds a descriptor.
const maxDepth = 256

// makeWritable gives the folder fd, and every folder under it, its owner's write and search
// permission; it closes fd.
func makeWritable(fd, depth int) {
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return
	}
	_ = unix.Fchmod(fd, uint32(st.Mode&0o7777)|0o700)
	if depth >= maxDepth {
		return
	}
	// A second descriptor to read the folder's entries through, so fd stays usable.
	dup, err := unix.Dup(fd)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(dup), "")
	defer f.Close()
	for {
		names, err := f.Readdirnames(256)
		for _, name := range names {
			const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
			sub, err := unix.Openat(fd, name, flags, 0)
			if errors.Is(err, unix.EACCES) {
				// A folder without read permission (a command's chmod 0): given it without
				// following a link, where the system can say so.
				if unix.Fchmodat(fd, name, 0o700, unix.AT_SYMLINK_NOFOLLOW) == nil {
					sub, err = unix.Openat(fd, name, flags, 0)
				}
			}
			if err != nil {
				continue // not a folder, or a link
			}
			makeWritable(sub, depth+1)
		}
		if err != nil {
			return
		}
	}
}
