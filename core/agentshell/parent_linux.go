package agentshell

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

const isDarwin = false

// watchParent makes the host's end this shell's too: the kernel sends SIGTERM when the
// process that started it dies (a host killed with SIGKILL stops nothing itself), and the
// command in the sandbox is stopped as for the host's own SIGTERM.
func watchParent(sigs chan os.Signal) {
	ppid := os.Getppid()
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0)
	if os.Getppid() != ppid {
		sigs <- syscall.SIGTERM // it died before the request
	}
}
