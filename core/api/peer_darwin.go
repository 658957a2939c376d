package api

import "golang.org/x/sys/unix"

// socketPeerUID asks the kernel for the peer's credentials (LOCAL_PEERCRED).
func socketPeerUID(fd int) (int, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}

// socketPeerProgram says nothing on macOS: the peer's path needs libproc (proc_pidpath),
// which a build without cgo has not; the client's own word for its program stands.
func socketPeerProgram(int) string { return "" }
