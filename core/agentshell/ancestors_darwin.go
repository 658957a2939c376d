package agentshell

import "golang.org/x/sys/unix"

// parentOf is pid's parent, as the kernel's process table says; 0 when it cannot say.
func parentOf(pid int) int {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || kp.Proc.P_pid != int32(pid) {
		return 0
	}
	return int(kp.Eproc.Ppid)
}
