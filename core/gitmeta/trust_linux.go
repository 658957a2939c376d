package gitmeta

import "golang.org/x/sys/unix"

// trustsStamps says whether the file system of the folder open as fd keeps a folder's change
// time as the walk relies on (every entry made, removed or renamed in it changes it), and
// which device it is: the local file systems that do. Network and FUSE file systems may
// serve cached or made-up times, so their folders are read every time.
func trustsStamps(fd int) (uint64, bool) {
	var fs unix.Statfs_t
	var st unix.Stat_t
	if unix.Fstatfs(fd, &fs) != nil || unix.Fstat(fd, &st) != nil {
		return 0, false
	}
	switch fs.Type {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC, unix.F2FS_SUPER_MAGIC:
		return uint64(st.Dev), true
	}
	return 0, false
}
