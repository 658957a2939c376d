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
