package linux

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/policy"
)

// underAttempts makes this test binary, started inside a wall, try a group of escapes by
// raw system calls (no C compiler, no tool that might not be installed) and print one line
// per attempt, "name: outcome", where the outcome is "ok" for an attempt that succeeded, the
// errno's name (EPERM) for one the kernel refused, or "skip: why".
const underAttempts = "OPENWORKER_LINUX_TEST_ATTEMPTS"

// attempt is one try; a nil error means it worked.
type attempt struct {
	name string
	try  func() error
}

// runAttempts runs the group named by underAttempts in the working folder and exits.
func runAttempts(group string) {
	var list []attempt
	switch group {
	case "modes":
		list = modeAttempts()
	case "sockets":
		list = socketAttempts()
	case "proc":
		list = procAttempts()
	case "threads":
		list = threadAttempts()
	default:
		fmt.Printf("no attempt group %q\n", group)
		os.Exit(2)
	}
	for _, a := range list {
		fmt.Printf("%s: %s\n", a.name, outcome(a.try()))
	}
	os.Exit(0)
}

func outcome(err error) string {
	var errno unix.Errno
	var skip skipped
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &skip):
		return "skip: " + string(skip)
	case errors.As(err, &errno):
		return unix.ErrnoName(errno)
	}
	return "failed: " + err.Error()
}

// skipped is an attempt that does not apply here.
type skipped string

func (s skipped) Error() string { return string(s) }

// sysFD is a raw system call that returns a descriptor (closed at once) or an errno.
func sysFD(nr uintptr, args ...uintptr) error {
	var a [6]uintptr
	copy(a[:], args)
	fd, _, e := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
	if e != 0 {
		return e
	}
	unix.Close(int(fd))
	return nil
}

func sys(nr uintptr, args ...uintptr) error {
	var a [6]uintptr
	copy(a[:], args)
	if _, _, e := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]); e != 0 {
		return e
	}
	return nil
}

func cstr(s string) uintptr {
	p, err := unix.BytePtrFromString(s)
	if err != nil {
		panic(err)
	}
	return uintptr(unsafe.Pointer(p))
}

// atFDCWD is AT_FDCWD as a system call argument.
var atFDCWD = func() uintptr { fd := unix.AT_FDCWD; return uintptr(fd) }()

const (
	setuid = unix.S_ISUID | 0o755
	setgid = unix.S_ISGID | 0o755
)

// plain makes an ordinary executable file to change the mode of.
func plain(name string) {
	fd, err := unix.Open(name, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o755)
	if err == nil {
		unix.Close(fd)
	}
}

// capsV2 is a security.capability value (VFS_CAP_REVISION_2) granting CAP_SETUID, effective.
var capsV2 = func() []byte {
	b := make([]byte, 20)
	*(*uint32)(unsafe.Pointer(&b[0])) = 0x02000000 | 1 // revision 2, effective
	*(*uint32)(unsafe.Pointer(&b[4])) = 1 << unix.CAP_SETUID
	return b
}()

// modeAttempts try every call that sets a mode to make a set-user-ID or set-group-ID file,
// and every call that adds file capabilities, each on a file named after itself. The test
// outside looks at what is left on the host.
func modeAttempts() []attempt {
	chmodLike := func(name string, mode uint32, do func(path string, mode uint32) error) attempt {
		return attempt{name, func() error { plain(name); return do(name, mode) }}
	}
	list := []attempt{
		chmodLike("fchmod_setuid", setuid, func(p string, m uint32) error {
			fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return sys(unix.SYS_FCHMOD, uintptr(fd), uintptr(m))
		}),
		chmodLike("fchmodat_setuid", setuid, func(p string, m uint32) error {
			return sys(unix.SYS_FCHMODAT, atFDCWD, cstr(p), uintptr(m))
		}),
		chmodLike("fchmodat_setgid", setgid, func(p string, m uint32) error {
			return sys(unix.SYS_FCHMODAT, atFDCWD, cstr(p), uintptr(m))
		}),
		chmodLike("fchmodat2_setuid", setuid, func(p string, m uint32) error {
			return sys(unix.SYS_FCHMODAT2, atFDCWD, cstr(p), uintptr(m), 0)
		}),
		{"openat_create_setuid", func() error {
			return sysFD(unix.SYS_OPENAT, atFDCWD, cstr("openat_create_setuid"), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, setuid)
		}},
		{"openat_create_setgid", func() error {
			return sysFD(unix.SYS_OPENAT, atFDCWD, cstr("openat_create_setgid"), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, setgid)
		}},
		// An unnamed file made with the mode, then given a name.
		{"openat_tmpfile_setuid", func() error {
			fd, _, e := unix.Syscall6(unix.SYS_OPENAT, atFDCWD, cstr("."), unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, setuid, 0, 0)
			if e != 0 {
				return e
			}
			defer unix.Close(int(fd))
			return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, "openat_tmpfile_setuid", unix.AT_SYMLINK_FOLLOW)
		}},
		// Its mode is in a structure a seccomp filter cannot read: the call must not exist.
		{"openat2_create_setuid", func() error {
			how := unix.OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY | unix.O_CLOEXEC, Mode: setuid}
			return sysFD(unix.SYS_OPENAT2, atFDCWD, cstr("openat2_create_setuid"), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how))
		}},
		{"mknodat_setuid", func() error {
			return sys(unix.SYS_MKNODAT, atFDCWD, cstr("mknodat_setuid"), unix.S_IFREG|setuid, 0)
		}},
		{"mkdirat_setgid", func() error {
			return sys(unix.SYS_MKDIRAT, atFDCWD, cstr("mkdirat_setgid"), setgid)
		}},
		// io_uring carries out opens, mkdirs and xattr changes without passing through the
		// seccomp filter: the ring must not be made.
		{"io_uring_setup", func() error {
			var params [120]byte
			return sysFD(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&params[0])))
		}},
		{"setxattr_capability", func() error {
			plain("setxattr_capability")
			return unix.Setxattr("setxattr_capability", "security.capability", capsV2, 0)
		}},
		{"lsetxattr_capability", func() error {
			plain("lsetxattr_capability")
			return unix.Lsetxattr("lsetxattr_capability", "security.capability", capsV2, 0)
		}},
		{"fsetxattr_capability", func() error {
			plain("fsetxattr_capability")
			fd, err := unix.Open("fsetxattr_capability", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Fsetxattr(fd, "security.capability", capsV2, 0)
		}},
		{"setxattrat_capability", func() error {
			plain("setxattrat_capability")
			// struct xattr_args: value pointer, size, flags.
			args := struct {
				value       uint64
				size, flags uint32
			}{uint64(uintptr(unsafe.Pointer(&capsV2[0]))), uint32(len(capsV2)), 0}
			return sys(unix.SYS_SETXATTRAT, atFDCWD, cstr("setxattrat_capability"), 0,
				cstr("security.capability"), uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args))
		}},
	}
	// What stays allowed: modes without those bits, and a mode the call ignores.
	list = append(list,
		chmodLike("kept_fchmodat_sticky", unix.S_ISVTX|0o777, func(p string, m uint32) error {
			return sys(unix.SYS_FCHMODAT, atFDCWD, cstr(p), uintptr(m))
		}),
		attempt{"kept_openat_existing_with_setuid_mode", func() error {
			plain("kept_openat_existing_with_setuid_mode")
			// Without O_CREAT the mode is not used; some programs pass one anyway.
			return sysFD(unix.SYS_OPENAT, atFDCWD, cstr("kept_openat_existing_with_setuid_mode"), unix.O_RDONLY|unix.O_CLOEXEC, setuid)
		}},
		attempt{"kept_openat_create", func() error {
			return sysFD(unix.SYS_OPENAT, atFDCWD, cstr("kept_openat_create"), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o755)
		}},
		attempt{"kept_mknodat_fifo", func() error {
			return sys(unix.SYS_MKNODAT, atFDCWD, cstr("kept_mknodat_fifo"), unix.S_IFIFO|0o644, 0)
		}},
		attempt{"kept_mkdirat", func() error {
			return sys(unix.SYS_MKDIRAT, atFDCWD, cstr("kept_mkdirat"), 0o755)
		}},
	)
	return append(list, legacyModeAttempts()...)
}

// refusedFamilies are every address family but the four a sandbox keeps, up to the highest
// the kernel headers know, and a few beyond.
func refusedFamilies() []int {
	var fams []int
	for f := 0; f <= unix.AF_MAX+2; f++ {
		if !slices.Contains([]int{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}, f) {
			fams = append(fams, f)
		}
	}
	return append(fams, 255, 1<<16)
}

// socketAttempts make a socket of every family a sandbox does not keep (each with the types
// that family takes), the kept ones (which must still work), the obsolete packet type that
// the kernel turns into a packet socket, and a socketpair of each family.
func socketAttempts() []attempt {
	var list []attempt
	try := func(name string, domain, typ, proto int) attempt {
		return attempt{name, func() error {
			fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto)
			if err == nil {
				unix.Close(fd)
			}
			return err
		}}
	}
	for _, f := range refusedFamilies() {
		for _, typ := range []int{unix.SOCK_STREAM, unix.SOCK_DGRAM, unix.SOCK_SEQPACKET, unix.SOCK_RAW} {
			list = append(list, try(fmt.Sprintf("socket_%d_%d", f, typ), f, typ, 0))
		}
		list = append(list, attempt{fmt.Sprintf("socketpair_%d", f), func() error {
			fds, err := unix.Socketpair(f, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err == nil {
				unix.Close(fds[0])
				unix.Close(fds[1])
			}
			return err
		}})
	}
	list = append(list,
		try("inet_sock_packet", unix.AF_INET, unix.SOCK_PACKET, 0x0300),
		try("kept_unix", unix.AF_UNIX, unix.SOCK_STREAM, 0),
		try("kept_inet", unix.AF_INET, unix.SOCK_STREAM, 0),
		try("kept_inet6", unix.AF_INET6, unix.SOCK_DGRAM, 0),
		try("kept_netlink", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE),
		attempt{"kept_socketpair_unix", func() error {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err == nil {
				unix.Close(fds[0])
				unix.Close(fds[1])
			}
			return err
		}},
	)
	return list
}

// procAttempts open for writing, without writing, every file of /proc that has a write bit
// (the host-wide ones and those of the sandbox's PID 1; other processes' are alike), and
// say how /proc is mounted.
func procAttempts() []attempt {
	list := []attempt{{"proc_mounted_read_only", func() error {
		ro, err := mountedReadOnly("/proc")
		if err == nil && !ro {
			return errors.New("/proc is mounted read-write")
		}
		return err
	}}}
	self := fmt.Sprint(os.Getpid())
	filepath.WalkDir("/proc", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && filepath.Dir(path) == "/proc" && path != "/proc/1" && strings.Trim(d.Name(), "0123456789") == "" {
			return fs.SkipDir
		}
		if d.IsDir() && (path == "/proc/1/task" || path == "/proc/"+self) {
			return fs.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil || fi.Mode().Perm()&0o222 == 0 {
			return nil
		}
		list = append(list, attempt{"write " + path, func() error {
			fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == nil {
				unix.Close(fd)
			}
			return err
		}})
		return nil
	})
	return list
}

// mountedReadOnly says whether the mount at dir (exactly) is read-only, from mountinfo.
func mountedReadOnly(dir string) (bool, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	found, ro := false, false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 5 && fields[4] == dir {
			// The last mount at dir is the one in sight.
			found, ro = true, slices.Contains(strings.Split(fields[5], ","), "ro")
		}
	}
	if !found {
		return false, fmt.Errorf("nothing is mounted at %s", dir)
	}
	return ro, sc.Err()
}

// threadStatus are the lines of a thread's status that say what walls it is behind.
var threadStatus = []string{"NoNewPrivs", "Seccomp", "Seccomp_filters", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}

// threadAttempts compare every thread of every process in the sandbox, PID 1's first, with
// this one: the same restrictions, the same network. An attempt fails naming what differs.
func threadAttempts() []attempt {
	own, err := statusOf("/proc/thread-self")
	if err != nil {
		return []attempt{{"own_status", func() error { return err }}}
	}
	ownNet, err := os.ReadFile("/proc/thread-self/net/dev")
	if err != nil {
		return []attempt{{"own_net", func() error { return err }}}
	}
	var list []attempt
	tasks, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*")
	for _, task := range tasks {
		list = append(list, attempt{"thread " + strings.TrimPrefix(task, "/proc/"), func() error {
			st, err := statusOf(task)
			if errors.Is(err, fs.ErrNotExist) {
				return nil // ended since the listing
			}
			if err != nil {
				return err
			}
			var diff []string
			for _, k := range threadStatus {
				if st[k] != own[k] {
					diff = append(diff, fmt.Sprintf("%s %s (here %s)", k, st[k], own[k]))
				}
			}
			if net, err := os.ReadFile(task + "/net/dev"); err == nil && string(net) != string(ownNet) {
				diff = append(diff, "another network: "+strings.Join(strings.Fields(string(net)), " "))
			}
			if diff != nil {
				return errors.New(strings.Join(diff, "; "))
			}
			return nil
		}})
	}
	if len(list) < 2 {
		list = append(list, attempt{"threads_listed", func() error { return errors.New("fewer than two threads in /proc") }})
	}
	return list
}

func statusOf(task string) (map[string]string, error) {
	b, err := os.ReadFile(task + "/status")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m, nil
}

// attempts runs a group inside a wall built from p (this binary is added to its runner
// files), in dir, and returns each attempt's outcome by name and the whole output.
func attempts(t *testing.T, w *world, p *policy.Policy, group, dir string) (map[string]string, string) {
	t.Helper()
	self, err := os.Executable()
	must(t, err)
	self = resolved(t, self)
	p.RunnerFiles = append(p.RunnerFiles, self)
	out, code := run(t, w, p, `cd "$DIR" && exec "$SELF"`, "SELF="+self, "DIR="+dir, underAttempts+"="+group)
	if code != 0 {
		t.Fatalf("the attempts (%s) did not run: exit %d\n%s", group, code, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if name, res, ok := strings.Cut(line, ": "); ok {
			got[name] = res
		}
	}
	return got, out
}
