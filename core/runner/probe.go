package runner

import (
	"encoding/hex"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/internal/randbytes"
)

const dialProbeTimeout = 300 * time.Millisecond

// probe runs the wall check's probes from inside. Each Check says whether the wall behaved
// as it must; the core, outside, decides what a failure means.
func probe(a *ProbeArgs) []Check {
	var out []Check
	var b [8]byte
	_ = randbytes.Read(b[:])
	name := ".openworker-probe-" + hex.EncodeToString(b[:])
	for _, dir := range a.Writable {
		c := Check{Name: "writable", Target: dir}
		p := filepath.Join(dir, name)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			c.Detail = "cannot create a file: " + errText(err)
		} else {
			_, werr := f.Write([]byte("probe"))
			f.Close()
			rerr := os.Remove(p)
			switch {
			case werr != nil:
				c.Detail = "cannot write a file: " + errText(werr)
			case rerr != nil:
				c.Detail = "cannot remove the probe file: " + errText(rerr)
			default:
				c.OK = true
			}
		}
		out = append(out, c)
	}
	for _, dir := range a.ReadOnly {
		c := Check{Name: "read-only", Target: dir}
		if _, err := os.ReadDir(dir); err != nil {
			c.Detail = "cannot be read: " + errText(err)
		} else if f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			f.Close()
			_ = os.Remove(filepath.Join(dir, name))
			c.Detail = "can be written"
		} else {
			c.OK = true
		}
		out = append(out, c)
	}
	if a.Home != "" {
		c := Check{Name: "home hidden", Target: a.Home}
		if des, err := os.ReadDir(a.Home); err == nil {
			c.Detail = "can be listed (" + strconv.Itoa(len(des)) + " entries)"
		} else if fi, err := os.Stat(a.Home); err == nil && !fi.IsDir() {
			c.Detail = "exists as a file"
		} else {
			c.OK = true
			c.Detail = errText(err)
		}
		out = append(out, c)
	}
	for _, addr := range a.Unreachable {
		c := Check{Name: "canary unreachable", Target: addr}
		if err := connect(addr, dialProbeTimeout); err == nil {
			c.Detail = "accepted a connection"
		} else {
			c.OK = true
			c.Detail = errText(err)
		}
		out = append(out, c)
	}
	for _, path := range a.Unwritable {
		c := Check{Name: "kernel settings read-only", Target: path}
		c.OK, c.Detail = unwritable(path)
		out = append(out, c)
	}
	for _, addr := range a.Reachable {
		c := Check{Name: "proxy reachable", Target: addr}
		if err := connect(addr, 2*time.Second); err != nil {
			c.Detail = errText(err)
		} else {
			c.OK = true
		}
		out = append(out, c)
	}
	return out
}

// KernelSettings are files of a Linux sandbox's /proc that belong to the host's kernel, not
// to the sandbox: the wall check proves that none opens for writing, and that /proc is
// mounted read-only whatever Landlock would refuse. Opening one for writing without writing
// changes nothing, even where the wall fails.
var KernelSettings = []string{
	"/proc/sys/kernel/core_pattern",
	"/proc/sys/kernel/modprobe",
	"/proc/sysrq-trigger",
	"/proc/irq/default_smp_affinity",
}

// unwritable opens path for writing (and closes it at once, having written nothing), then
// asks how its mount is mounted: it passes only if the open fails and the mount is
// read-only, so that no later change to the other layers can make it writable. A file this
// kernel does not have passes.
func unwritable(path string) (bool, string) {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err == nil {
		f.Close()
		return false, "opens for writing"
	}
	if errors.Is(err, os.ErrNotExist) {
		return true, "absent"
	}
	ro, merr := mountReadOnly(path)
	switch {
	case merr != nil:
		return false, "refused (" + errText(err) + "), but how it is mounted is unknown: " + errText(merr)
	case !ro:
		return false, "refused (" + errText(err) + "), but its mount is writable"
	}
	return true, errText(err)
}

// connect opens a TCP connection to addr, a literal IP and port, and closes it. It is one
// blocking connect on this thread, not a dial through the network poller: on loopback the
// kernel completes it within the call, and a runner that serves from a locked thread would
// otherwise hand its thread over and back to wait for it.
func connect(addr string, timeout time.Duration) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return err
	}
	ip := ap.Addr().Unmap()
	var sa syscall.Sockaddr
	family := syscall.AF_INET
	if ip.Is4() {
		sa = &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ip.As4()}
	} else {
		family = syscall.AF_INET6
		sa = &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ip.As16()}
	}
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	defer syscall.Close(fd)
	// A blocking connect gives up after the send timeout.
	tv := syscall.NsecToTimeval(timeout.Nanoseconds())
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv); err != nil {
		return os.NewSyscallError("setsockopt", err)
	}
	for {
		err = syscall.Connect(fd, sa)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return os.NewSyscallError("connect", err)
	}
	return nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	return err.Error()
}
