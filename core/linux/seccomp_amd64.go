//go:build linux

package linux

import "golang.org/x/sys/unix"

const (
	seccompArch = unix.AUDIT_ARCH_X86_64
	// seccompX32 is the bit x32 system call numbers carry; every number from it up is refused.
	seccompX32 = 0x40000000
)

// seccompLegacyRules cover the calls x86-64 keeps besides the *at ones: they set modes too.
var seccompLegacyRules = []sysRule{
	modeArg(unix.SYS_CHMOD, 1),
	createMode(unix.SYS_OPEN, 1, 2),
	modeArg(unix.SYS_CREAT, 1),
	modeArg(unix.SYS_MKNOD, 1),
	modeArg(unix.SYS_MKDIR, 1),
}
