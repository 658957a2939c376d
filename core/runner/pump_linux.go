package runner

import (
	"errors"

	"golang.org/x/sys/unix"
)

// canPoll: Linux has pidfd_open, so the server waits for a command and its connection at once.
const canPoll = true

// pumpUntilExit hands the connection's messages to take (signals and standard input for the
// running commands, calls to queue or to start beside them) until the process pid has
// exited. It returns early, leaving the command to Wait, when the connection ends or cannot
// be read.
func pumpUntilExit(in *reader, fd, pid int, take func(msg []byte) error) error {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err // (a kernel before 5.3) the command runs without signals from the core
	}
	defer unix.Close(pidfd)
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}, {Fd: int32(fd), Events: unix.POLLIN}}
	for {
		if in.r.Buffered() == 0 {
			fds[0].Revents, fds[1].Revents = 0, 0
			if _, err := unix.Poll(fds, -1); err != nil {
				if errors.Is(err, unix.EINTR) {
					continue
				}
				return err
			}
			if fds[0].Revents != 0 {
				return nil // the command has exited
			}
			if fds[1].Revents == 0 {
				continue
			}
		}
		msg, err := in.next()
		if err != nil {
			return err // the core hung up: the command is waited for, and nobody reads on
		}
		if err := take(msg); err != nil {
			return err
		}
	}
}
