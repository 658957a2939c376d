//go:build linux

package linux

import "golang.org/x/sys/unix"

const (
	seccompArch = unix.AUDIT_ARCH_X86_64
	// seccompX32 is the bit x32 system call numbers carry; every number from it up is refused.
	seccompX32 = 0x40000000
)
