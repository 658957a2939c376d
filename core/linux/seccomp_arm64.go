//go:build linux

package linux

import "golang.org/x/sys/unix"

const (
	seccompArch = unix.AUDIT_ARCH_AARCH64
	seccompX32  = 0
)

// seccompLegacyRules: arm64 has only the *at calls.
var seccompLegacyRules []sysRule
