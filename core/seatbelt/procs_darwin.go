package seatbelt

import sys "golang.org/x/sys/unix"

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

func (hostProcs) session(sid int) ([]proc, error) {
	procs, err := sys.SysctlKinfoProcSlice("kern.proc.session", sid)
	if err != nil {
		return nil, err
	}
	out := make([]proc, 0, len(procs))
	for _, p := range procs {
		if p.Proc.P_stat == szomb {
			continue
		}
		out = append(out, proc{pid: int(p.Proc.P_pid), pgid: int(p.Eproc.Pgid)})
	}
	return out, nil
}

func (hostProcs) group(pid int) (int, bool) {
	p, err := sys.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || p.Proc.P_pid != int32(pid) || p.Proc.P_stat == szomb {
		return 0, false
	}
	return int(p.Eproc.Pgid), true
}
