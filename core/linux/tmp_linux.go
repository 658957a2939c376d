package linux

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/sandbox"
)

// The private tmp (which holds the sandbox home) is a folder on the host, which the session
// makes, writes the sandbox home into and removes, and which both the host and the sandbox
// see: a command's /tmp is it. On its own it lies on the host's disk, which a command could
// fill. So where the machine lets this process mount, it is made a tmpfs of a bounded size
// on the host, at the same path. The pages of a tmpfs are charged to the memory cgroup of
// the process that writes them, so the sandbox's memory limit bounds it too.
//
// A tmpfs rather than a disk quota or a loop device: project quotas need the host's file
// system mounted with them, and a loop device needs an image file on the host's disk and
// a file system made on it for every session; a tmpfs costs one mount and gives back all it
// held at the end. Mounting on the host takes root: for an ordinary user the private tmp
// stays on the disk with no size limit, and every sandbox's Active list says so.
//
// The builder does not find the tmpfs at its path: it may have been started (Prepare)
// before the mount was made, and its copy of the host's mounts would show the folder
// beneath. The provider sends it a clone of the mount (open_tree) with the setup instead,
// which the builder puts at that path in its own copy before it binds anything.

// tmpState is what BoundTmp made of a private tmp folder.
type tmpState struct {
	bounded bool
	word    string // for the Active list
}

// BoundTmp mounts a tmpfs of tmp's size at dir, owned by this process's user, mode 0700.
func (pv *Provider) BoundTmp(dir string, tmp sandbox.Amount) error {
	size := tmp.Of(memTotal(), sandbox.DefaultTmpPercent)
	if size < 1<<20 {
		return fmt.Errorf("linux sandbox: the private tmp's size limit would be %d bytes (the machine's memory read as %d bytes); the session is refused", size, memTotal())
	}
	// An inode for every 16 KiB: a package cache's many small files fit, and what the
	// inodes themselves take is bounded.
	inodes := max(size/(16<<10), 16384)
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700,uid=%d,gid=%d", size, inodes, os.Geteuid(), os.Getegid())
	st := tmpState{bounded: true, word: "private tmp: a tmpfs of " + sandbox.FormatBytes(size)}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EACCES) {
			return fmt.Errorf("linux sandbox: mount a tmpfs of %s at the private tmp %s: %w", sandbox.FormatBytes(size), dir, err)
		}
		st = tmpState{word: fmt.Sprintf("limit not in force: private tmp size %s: mounting a tmpfs on the host takes root "+
			"(uid %d may not: %v); the private tmp is a folder on the host's disk", sandbox.FormatBytes(size), os.Geteuid(), err)}
	}
	pv.mu.Lock()
	if pv.tmps == nil {
		pv.tmps = map[string]tmpState{}
	}
	pv.tmps[dir] = st
	pv.mu.Unlock()
	return nil
}

// ReleaseTmp detaches the tmpfs at dir: its files go once no sandbox holds the mount.
func (pv *Provider) ReleaseTmp(dir string) {
	pv.mu.Lock()
	delete(pv.tmps, dir)
	pv.mu.Unlock()
	// Also for a folder this process did not bound: a dead owner's. Only a tmpfs is
	// unmounted, and only one mounted right at dir.
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil && st.Type == unix.TMPFS_MAGIC && isMountPoint(dir) {
		_ = unix.Unmount(dir, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	}
}

// isMountPoint says whether something is mounted at dir itself.
func isMountPoint(dir string) bool {
	var a, b unix.Stat_t
	if unix.Lstat(dir, &a) != nil || unix.Lstat(dir+"/..", &b) != nil {
		return false
	}
	if a.Dev != b.Dev {
		return true
	}
	// A mount of the same file system as its parent's (a bind) has the same device.
	var stx unix.Statx_t
	return unix.Statx(unix.AT_FDCWD, dir, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, &stx) == nil &&
		stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
}

// tmpFor says what the sandbox's Active list says of its private tmp dir and, where it is a
// bounded tmpfs, returns a clone of the mount for the builder (the caller closes it).
func (pv *Provider) tmpFor(dir string) (word string, mount *os.File, err error) {
	pv.mu.Lock()
	st, ok := pv.tmps[dir]
	pv.mu.Unlock()
	switch {
	case dir == "":
		return "", nil, nil
	case !ok:
		return "limit not in force: private tmp size: its folder was not made a bounded file system (the caller did not ask)", nil, nil
	case !st.bounded:
		return st.word, nil, nil
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return "", nil, fmt.Errorf("linux sandbox: take the private tmp's tmpfs at %s into the sandbox: %w; the session is refused", dir, err)
	}
	return st.word, os.NewFile(uintptr(fd), "private-tmp"), nil
}

// attachTmp is the builder's half: the private tmp's mount, sent with the setup, is put
// where the builder sees the host's root, over the folder it is mounted on there, before
// any source is opened. The private tmp's binds then open and check it as they do every
// source: it is what the host checked.
func attachTmp(s *wallSetup) error {
	fd := s.tmpFD
	s.tmpFD = -1
	defer unix.Close(fd)
	for _, m := range s.Mounts {
		if !m.Tmp {
			continue
		}
		if err := unix.MoveMount(fd, "", unix.AT_FDCWD, oldRoot+m.Src, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return step("attach the private tmp's tmpfs at "+m.Src, err)
		}
		return nil
	}
	return step("attach the private tmp's tmpfs", errors.New("the setup carries it but binds no private tmp"))
}
