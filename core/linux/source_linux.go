package linux

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// What a sandbox is shown is decided on the host, by the policy, which resolves every folder
// and records what it was. Between that check and the bind, a command in any session's
// writable folder may change the path that leads there: swap a component for a symlink
// (renameat2 RENAME_EXCHANGE does it atomically, as often as it likes) or for another folder.
// mount(2) follows every symlink on a path, so a bind by path binds whatever the path leads
// to at that instant. So the builder opens each source once without following any symlink,
// checks that it is the very file the policy saw, and binds that descriptor; and it reaches
// each mount point inside a bound folder the same way, one component at a time.

// errLink is a path that goes through a symlink where the policy saw none.
var errLink = errors.New("it goes through a symlink that was not there when the policy checked it (a command may have planted it); start the session again")

// errReplaced is a source that is another file than the one the policy checked.
var errReplaced = errors.New("it is no longer the folder that was checked (it was moved or replaced since); start the session again")

// openNoLinks opens path (absolute) as an O_PATH descriptor without following a symlink in
// any component, the last included.
func openNoLinks(path string) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case errors.Is(err, unix.ELOOP):
		return -1, errLink
	case errors.Is(err, unix.ENOSYS):
		// Before Linux 5.6: one component at a time.
		return openBeneath("/", strings.TrimPrefix(path, "/"), false, false)
	}
	if err != nil {
		return -1, err
	}
	// O_NOFOLLOW with O_PATH opens a last component that is a symlink as the link itself.
	if isLink(fd) {
		unix.Close(fd)
		return -1, errLink
	}
	return fd, nil
}

func isLink(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// openBeneath opens rel (clean and relative) below the folder root as an O_PATH descriptor,
// one component at a time and following no symlink. With create, what is missing on the way
// is made: folders, and at the end a folder if dir, else an empty file.
func openBeneath(root, rel string, create, dir bool) (int, error) {
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil || rel == "" {
		return fd, err
	}
	parts := strings.Split(rel, "/")
	for i, c := range parts {
		last := i == len(parts)-1
		if c == "" || c == "." || c == ".." {
			unix.Close(fd)
			return -1, fmt.Errorf("%q is not a clean path", rel)
		}
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if last && !dir {
				err = unix.Mknodat(fd, c, unix.S_IFREG|0o444, 0)
			} else {
				err = unix.Mkdirat(fd, c, 0o755)
			}
			if err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
		if isLink(fd) {
			unix.Close(fd)
			return -1, errLink
		}
	}
	return fd, nil
}

// checkSource says whether fd is what m's policy saw, and whether it is a folder.
func checkSource(fd int, m mountStep) (dir bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	if (m.Dev != 0 || m.Ino != 0) && (st.Dev != m.Dev || st.Ino != m.Ino) {
		return false, errReplaced
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR, nil
}

// fdPath names descriptor fd by its magic link in the host's /proc, for the calls that
// take only paths. The kernel follows that link to the very file, not to its name.
func fdPath(fd int) string { return fmt.Sprintf("%s/proc/self/fd/%d", oldRoot, fd) }

// bindFrom binds the file or folder open as src on the mount point open as dst (or, when
// dst < 0, at dstPath on the root tmpfs, which holds nothing a command made), with its
// submounts, and sets attr (when not 0) on all of them before they are visible. dstPath is
// where dst is, for kernels too old to bind by descriptor alone.
func bindFrom(src, dst int, dstPath string, attr uint64) error {
	tree, err := unix.OpenTree(src, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if errors.Is(err, unix.ENOSYS) {
		// Before Linux 5.2: a bind of the source's magic link, on the mount point as it was
		// just checked.
		if attr == 0 {
			return unix.Mount(fdPath(src), dstPath, "", unix.MS_BIND|unix.MS_REC, "")
		}
		return bind(fdPath(src), dstPath, attr)
	}
	if err != nil {
		return err
	}
	defer unix.Close(tree)
	later := false
	if attr != 0 {
		err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: attr})
		if errors.Is(err, unix.ENOSYS) {
			later = true // before Linux 5.12: remounted once in place, below
		} else if err != nil {
			return err
		}
	}
	to, toPath, flags := unix.AT_FDCWD, dstPath, unix.MOVE_MOUNT_F_EMPTY_PATH
	if dst >= 0 {
		to, toPath, flags = dst, "", flags|unix.MOVE_MOUNT_T_EMPTY_PATH
	}
	if err := unix.MoveMount(tree, "", to, toPath, flags); err != nil {
		return err
	}
	if later {
		return remountBind(fdPath(src), dstPath, attr)
	}
	return nil
}
