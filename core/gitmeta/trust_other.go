//go:build !linux && !darwin

package gitmeta

// trustsStamps trusts no file system here: every folder is read at every walk.
func trustsStamps(fd int) (uint64, bool) { return 0, false }
