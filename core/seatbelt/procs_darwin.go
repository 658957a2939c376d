package seatbelt

import (
	"os"

	sys "golang.org/x/sys/unix"
)

// sessionPIDs lists the live processes of session sid, as the kernel's process table has
// them (zombies, which a signal no longer reaches, left out).
func sessionPIDs(sid int) ([]int, error) {
	ps, err := (hostProcs{}).session(sid)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.pid)
	}
	return out, nil
}

// szomb is a zombie's p_stat (SZOMB in sys/proc.h).
const szomb = 5

// hostProcs reads the kernel's process table with sysctl, from outside every wall.
type hostProcs struct{}

func (hostProcs) session(sid int) ([]proc, error) { return kernelProcs().session(sid) }
func (hostProcs) group(pid int) (int, bool)       { return kernelProcs().group(pid) }

// kernelProcs is this Mac's process table.
func kernelProcs() sysctlProcs {
	return sysctlProcs{table: kinfoTable(sys.SysctlKinfoProcSlice), getsid: sys.Getsid, uid: os.Geteuid()}
}

// kinfoTable turns sysctl's kinfo_proc entries (x/sys's SysctlKinfoProcSlice, or a stand-in)
// into the lister's.
func kinfoTable(sysctl func(name string, args ...int) ([]sys.KinfoProc, error)) func(string, int) ([]kinfo, error) {
	return func(name string, arg int) ([]kinfo, error) {
		ps, err := sysctl("kern.proc."+name, arg)
		if err != nil {
			return nil, err
		}
		out := make([]kinfo, 0, len(ps))
		for _, p := range ps {
			out = append(out, kinfo{pid: int(p.Proc.P_pid), pgid: int(p.Eproc.Pgid), zombie: p.Proc.P_stat == szomb})
		}
		return out, nil
	}
}
