package api

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// socketPeerUID asks the kernel for the peer's credentials (SO_PEERCRED).
func socketPeerUID(fd int) (int, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}

// socketPeerProgram is the program the peer runs, from its process's /proc entry, or "":
// a program replaced or removed since it started is no longer at that path.
func socketPeerProgram(fd int) string {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil || cred.Pid <= 0 {
		return ""
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(int(cred.Pid)) + "/exe")
	if err != nil || strings.HasSuffix(exe, " (deleted)") {
		return ""
	}
	return exe
}
