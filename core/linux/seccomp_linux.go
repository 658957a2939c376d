package linux

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter is the wall's last layer: a few system calls that reach past what the
// namespaces and Landlock close, refused for this thread and everything started from it.
//   - New user namespaces, the usual door to kernel code an unprivileged process cannot
//     otherwise reach: unshare and clone with CLONE_NEWUSER are refused, and clone3, whose
//     flags a filter cannot read, answers ENOSYS, so that libc falls back to clone.
//   - The kernel's keyrings, which namespaces do not separate: a session keyring is
//     inherited, and without a user namespace of its own the sandbox's uid 0 would share the
//     host root's user keyring. Secrets there stay absent.
//   - On x86-64, the x32 and 32-bit entry points, which number the same calls differently.

// seccomp_data field offsets (linux/seccomp.h): nr, arch, then the arguments, 64 bits each;
// the low half of an argument comes first on the little-endian machines handled here.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
)

// seccompFilter is the program; nil when this architecture has none (seccompArch is 0).
func seccompFilter() []unix.SockFilter {
	if seccompArch == 0 {
		return nil
	}
	deny := func(errno unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(errno) }
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	const (
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset  = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
	)
	prog := []unix.SockFilter{
		stmt(ld, offArch),
		{Code: jeq, Jt: 1, Jf: 0, K: seccompArch},
		stmt(ret, deny(unix.EPERM)), // another architecture's numbering
		stmt(ld, offNr),
	}
	if seccompX32 != 0 {
		prog = append(prog, unix.SockFilter{Code: jge, Jt: 0, Jf: 1, K: seccompX32}, stmt(ret, deny(unix.EPERM)))
	}
	// Each of these is "if nr is this one, return that".
	for _, c := range []struct {
		nr    uintptr
		errno unix.Errno
	}{
		{unix.SYS_CLONE3, unix.ENOSYS},
		{unix.SYS_KEYCTL, unix.EPERM},
		{unix.SYS_ADD_KEY, unix.EPERM},
		{unix.SYS_REQUEST_KEY, unix.EPERM},
	} {
		prog = append(prog, unix.SockFilter{Code: jeq, Jt: 0, Jf: 1, K: uint32(c.nr)}, stmt(ret, deny(c.errno)))
	}
	// unshare(flags) and clone(flags, …): flags are the first argument on both. Jt and Jf
	// count the instructions skipped when the test holds and when it does not.
	prog = append(prog,
		unix.SockFilter{Code: jeq, Jt: 1, Jf: 0, K: uint32(unix.SYS_UNSHARE)},
		unix.SockFilter{Code: jeq, Jt: 0, Jf: 3, K: uint32(unix.SYS_CLONE)},
		stmt(ld, offArg0),
		unix.SockFilter{Code: jset, Jt: 0, Jf: 1, K: unix.CLONE_NEWUSER},
		stmt(ret, deny(unix.EPERM)),
		stmt(ret, allow),
	)
	return prog
}

// applySeccomp installs the filter on this thread; no_new_privs must be set already. It
// returns false, and installs nothing, where this architecture has no filter.
func applySeccomp() (bool, error) {
	prog := seccompFilter()
	if prog == nil {
		return false, nil
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return false, fmt.Errorf("seccomp: %w", errno)
	}
	return true, nil
}
