package linux

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter is the wall's last layer: system calls that reach past what the
// namespaces and Landlock close, refused for every thread of the builder and everything
// started from it.
//   - New user namespaces, the usual door to kernel code an unprivileged process cannot
//     otherwise reach: unshare and clone with CLONE_NEWUSER are refused, and clone3, whose
//     flags a filter cannot read, answers ENOSYS, so that libc falls back to clone.
//   - The kernel's keyrings, which namespaces do not separate: a session keyring is
//     inherited, and without a user namespace of its own the sandbox's uid 0 would share the
//     host root's user keyring. Secrets there stay absent.
//   - Set-user-ID and set-group-ID files. A root caller's sandbox has no user namespace, so
//     a command is the host's uid 0 and owns what it makes: a file made setuid in a session
//     folder would be a root shell for any user of the machine afterwards (nosuid stops it
//     inside only). A user namespace would not help: mapped to itself, root owns its files
//     there too, and mapped elsewhere, its files would belong to someone else on the host.
//     Nor does umask: it never touches chmod, and a command sets its own. So every call that
//     sets a mode refuses S_ISUID and S_ISGID with EPERM, as chmod on a file one does not
//     own would: the chmod family, and the calls that make a file with a mode (open and
//     openat with O_CREAT or O_TMPFILE, creat, mknod, mkdir). openat2 carries its mode in a
//     structure a filter cannot read, so it answers ENOSYS, as on kernels before 5.6, and
//     programs fall back to openat. File capabilities (the security.capability attribute)
//     need CAP_SETFCAP, which no thread inside holds; the attribute's name is out of a
//     filter's sight, and refusing every extended attribute would refuse user.* ones.
//   - io_uring, whose operations (open, mkdir, socket, setxattr, …) the kernel carries out
//     without passing them through this filter: io_uring_setup, _enter and _register answer
//     ENOSYS, as where the kernel was built without it, and programs fall back to the calls.
//   - Sockets of any family but AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK, and the obsolete
//     SOCK_PACKET type the kernel turns into a packet socket. The others are kernel code no
//     command needs, and AF_VSOCK is not separated by a network namespace at all: on a
//     virtual machine it reaches the hypervisor's services whatever the network mode. They
//     answer EAFNOSUPPORT, as a family the kernel lacks does.
//   - On x86-64, the x32 and 32-bit entry points, which number the same calls differently.
//
// A call no rule names costs nothing: since Linux 5.11 the kernel remembers, per call, a
// filter's answer that does not depend on the arguments, and skips the filter for it.

// seccomp_data field offsets (linux/seccomp.h): nr, arch, then the arguments, 64 bits each;
// the low half of an argument comes first on the little-endian machines handled here. Every
// argument checked is an int or a mode, of which the kernel reads only the low half.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
)

// setID are the mode bits no call may set.
const setID = unix.S_ISUID | unix.S_ISGID

// createFlags are the open flags with which a call makes a file with its mode argument:
// O_CREAT, and O_TMPFILE's own bit (O_TMPFILE includes O_DIRECTORY, which alone makes
// nothing).
const createFlags = unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY)

// socketFamilies are the address families a sandbox keeps.
var socketFamilies = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}

// sysRule is what the filter does with one system call.
type sysRule struct {
	nr    uintptr
	errno unix.Errno
	// Without a test, the call is always refused; with one, only when it holds.
	test ruleTest
}

// ruleTest says which argument is looked at: refuse when arg&mask != 0, and, with
// flagsArg >= 0, only when the flags argument has a bit of flags as well.
type ruleTest struct {
	arg, flagsArg int
	mask, flags   uint32
	// families: the call (socket, socketpair) is refused unless argument 0 is one of
	// socketFamilies, and its type (argument 1) is not SOCK_PACKET.
	families bool
}

func always(nr uintptr, errno unix.Errno) sysRule { return sysRule{nr: nr, errno: errno} }

// modeArg refuses a set-user-ID or set-group-ID mode in argument arg.
func modeArg(nr uintptr, arg int) sysRule {
	return sysRule{nr: nr, errno: unix.EPERM, test: ruleTest{arg: arg, flagsArg: -1, mask: setID}}
}

// createMode refuses such a mode in argument arg when the flags in argument flagsArg make a
// file; without them the kernel ignores the mode.
func createMode(nr uintptr, flagsArg, arg int) sysRule {
	return sysRule{nr: nr, errno: unix.EPERM, test: ruleTest{arg: arg, flagsArg: flagsArg, mask: setID, flags: createFlags}}
}

func familyRule(nr uintptr) sysRule {
	return sysRule{nr: nr, errno: unix.EAFNOSUPPORT, test: ruleTest{families: true}}
}

// seccompRules are the filter's rules, the same on every architecture but for the calls
// only some have (seccompLegacyRules).
func seccompRules() []sysRule {
	rules := []sysRule{
		always(unix.SYS_CLONE3, unix.ENOSYS),
		always(unix.SYS_KEYCTL, unix.EPERM),
		always(unix.SYS_ADD_KEY, unix.EPERM),
		always(unix.SYS_REQUEST_KEY, unix.EPERM),
		{nr: unix.SYS_UNSHARE, errno: unix.EPERM, test: ruleTest{arg: 0, flagsArg: -1, mask: unix.CLONE_NEWUSER}},
		{nr: unix.SYS_CLONE, errno: unix.EPERM, test: ruleTest{arg: 0, flagsArg: -1, mask: unix.CLONE_NEWUSER}},
		modeArg(unix.SYS_FCHMOD, 1),
		modeArg(unix.SYS_FCHMODAT, 2),
		modeArg(unix.SYS_FCHMODAT2, 2),
		createMode(unix.SYS_OPENAT, 2, 3),
		always(unix.SYS_OPENAT2, unix.ENOSYS),
		modeArg(unix.SYS_MKNODAT, 2),
		modeArg(unix.SYS_MKDIRAT, 2),
		always(unix.SYS_IO_URING_SETUP, unix.ENOSYS),
		always(unix.SYS_IO_URING_ENTER, unix.ENOSYS),
		always(unix.SYS_IO_URING_REGISTER, unix.ENOSYS),
		familyRule(unix.SYS_SOCKET),
		familyRule(unix.SYS_SOCKETPAIR),
	}
	return append(rules, seccompLegacyRules...)
}

// seccompFilter is the program; nil when this architecture has none (seccompArch is 0).
func seccompFilter() []unix.SockFilter {
	if seccompArch == 0 {
		return nil
	}
	deny := func(errno unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(errno) }
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	// jump is a conditional jump; jt and jf count the instructions skipped when the test
	// holds and when it does not.
	jump := func(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
	}
	const (
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		and   = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset  = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
	)
	arg := func(i int) uint32 { return uint32(offArg0 + 8*i) }
	prog := []unix.SockFilter{
		stmt(ld, offArch),
		jump(jeq, seccompArch, 1, 0),
		stmt(ret, deny(unix.EPERM)), // another architecture's numbering
		stmt(ld, offNr),
	}
	if seccompX32 != 0 {
		prog = append(prog, jump(jge, seccompX32, 0, 1), stmt(ret, deny(unix.EPERM)))
	}
	// Each rule is "if nr is not this one, skip my body"; a body always returns, so the
	// accumulator still holds nr for the next rule.
	for _, r := range seccompRules() {
		var body []unix.SockFilter
		t := r.test
		switch {
		case t.families:
			// ld arg0; one jeq per kept family, each to the type check; refuse; type check.
			n := len(socketFamilies)
			body = append(body, stmt(ld, arg(0)))
			for i, f := range socketFamilies {
				body = append(body, jump(jeq, f, uint8(n-i), 0))
			}
			body = append(body,
				stmt(ret, deny(r.errno)),
				stmt(ld, arg(1)),
				stmt(and, 0xf), // the type without SOCK_NONBLOCK and SOCK_CLOEXEC
				jump(jeq, unix.SOCK_PACKET, 0, 1),
				stmt(ret, deny(r.errno)),
				stmt(ret, allow),
			)
		case t.mask != 0 && t.flagsArg >= 0:
			body = append(body,
				stmt(ld, arg(t.flagsArg)),
				jump(jset, t.flags, 1, 0),
				stmt(ret, allow),
				stmt(ld, arg(t.arg)),
				jump(jset, t.mask, 0, 1),
				stmt(ret, deny(r.errno)),
				stmt(ret, allow),
			)
		case t.mask != 0:
			body = append(body,
				stmt(ld, arg(t.arg)),
				jump(jset, t.mask, 0, 1),
				stmt(ret, deny(r.errno)),
				stmt(ret, allow),
			)
		default:
			body = append(body, stmt(ret, deny(r.errno)))
		}
		prog = append(prog, jump(jeq, uint32(r.nr), 0, uint8(len(body))))
		prog = append(prog, body...)
	}
	return append(prog, stmt(ret, allow))
}

// applySeccomp installs the filter on every thread of this process at once (TSYNC), which
// sets no_new_privs on each of them too; no_new_privs must be set on this one already. It
// returns false, and installs nothing, where this architecture has no filter.
func applySeccomp() (bool, error) {
	prog := seccompFilter()
	if prog == nil {
		return false, nil
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return false, fmt.Errorf("seccomp: %w", errno)
	}
	if r != 0 {
		// TSYNC names the thread it could not bring along, and installs nothing.
		return false, fmt.Errorf("seccomp: thread %d could not take the filter, so no thread has it", r)
	}
	return true, nil
}

// seccompParts says what the filter refuses, for Active.
const seccompParts = "seccomp (no new user namespaces, no kernel keyrings, no set-user-ID or set-group-ID files, " +
	"no io_uring, sockets of AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK only)"
