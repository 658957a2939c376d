//go:build !linux

package agentshell

import (
	"os"
	"runtime"
	"syscall"
	"time"
)

const isDarwin = runtime.GOOS == "darwin"

// watchParent makes the host's end this shell's too: once the process that started it is
// gone (a host killed with SIGKILL stops nothing itself), the command in the sandbox is
// stopped as for the host's own SIGTERM.
func watchParent(sigs chan os.Signal) {
	ppid := os.Getppid()
	go func() {
		for range time.Tick(250 * time.Millisecond) {
			if os.Getppid() != ppid {
				sigs <- syscall.SIGTERM
				return
			}
		}
	}()
}
