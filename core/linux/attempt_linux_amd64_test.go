package linux

import "golang.org/x/sys/unix"

// legacyModeAttempts are the calls x86-64 has besides the *at ones every architecture has.
func legacyModeAttempts() []attempt {
	return []attempt{
		{"chmod_setuid", func() error {
			plain("chmod_setuid")
			return sys(unix.SYS_CHMOD, cstr("chmod_setuid"), setuid)
		}},
		{"chmod_setgid", func() error {
			plain("chmod_setgid")
			return sys(unix.SYS_CHMOD, cstr("chmod_setgid"), setgid)
		}},
		{"open_create_setuid", func() error {
			return sysFD(unix.SYS_OPEN, cstr("open_create_setuid"), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, setuid)
		}},
		{"open_tmpfile_setgid", func() error {
			return sysFD(unix.SYS_OPEN, cstr("."), unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, setgid)
		}},
		{"creat_setuid", func() error { return sysFD(unix.SYS_CREAT, cstr("creat_setuid"), setuid) }},
		{"mknod_setuid", func() error { return sys(unix.SYS_MKNOD, cstr("mknod_setuid"), unix.S_IFREG|setuid, 0) }},
		{"mkdir_setgid", func() error { return sys(unix.SYS_MKDIR, cstr("mkdir_setgid"), setgid) }},
	}
}
