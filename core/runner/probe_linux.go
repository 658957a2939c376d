package runner

import "syscall"

// stRdonly is ST_RDONLY, the read-only mount flag statfs reports (not in package syscall).
const stRdonly = 1

// mountReadOnly says whether the mount path lies on is read-only.
func mountReadOnly(path string) (bool, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return false, err
	}
	return st.Flags&stRdonly != 0, nil
}
