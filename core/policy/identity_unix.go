//go:build unix

package policy

import (
	"os"
	"syscall"
)

// identify returns the device and inode of what fi describes, as the provider compares them
// with what it is about to bind.
func identify(fi os.FileInfo) (FileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return FileID{}, false
	}
	return FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, true
}
