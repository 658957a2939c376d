package seatbelt

import sys "golang.org/x/sys/unix"

// sessionPIDs lists the live processes of session sid, as the kernel's process table has
// them (zombies, which a signal no longer reaches, left out).
func sessionPIDs(sid int) ([]int, error) {
	procs, err := sys.SysctlKinfoProcSlice("kern.proc.session", sid)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(procs))
	for _, p := range procs {
		if p.Proc.P_stat == szomb {
			continue
		}
		out = append(out, int(p.Proc.P_pid))
	}
	return out, nil
}

// szomb is a zombie's p_stat (SZOMB in sys/proc.h).
const szomb = 5
