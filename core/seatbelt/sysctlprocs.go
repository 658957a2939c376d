package seatbelt

import "fmt"

// kinfo is what the process lister takes of one entry of macOS's process table (a kinfo_proc).
type kinfo struct {
	pid, pgid int
	zombie    bool // SZOMB: exited, not yet reaped; a signal no longer reaches it
}

// sysctlProcs is macOS's process table as sysctl answers for it, from outside every wall. It
// is OS-neutral so that it is tested on any machine against a stand-in of the kernel: on
// Linux the table is read from /proc instead, which cannot show what macOS's sysctl lacks.
type sysctlProcs struct {
	// table asks sysctl for the entries kern.proc.<name> gives for arg.
	table func(name string, arg int) ([]kinfo, error)
	// getsid is getsid(2): the session a process is in.
	getsid func(pid int) (int, error)
	// uid is this process's effective user.
	uid int
}

// session lists the live processes of session sid. XNU registers no sysctl that lists a
// session (kern.proc.{all,pid,tty,pgrp,uid,ruid,lcid} only; bsd/kern/kern_sysctl.c, and
// sysctlnametomib("kern.proc.session") fails on a Mac), so it lists this user's processes
// and keeps those whose getsid is sid. Every process a session's runner starts runs as this
// user: Seatbelt changes no user, and the profile refuses set-user-ID programs.
func (t sysctlProcs) session(sid int) ([]proc, error) {
	ps, err := t.table("uid", t.uid)
	if err != nil {
		return nil, fmt.Errorf("asking sysctl for user %d's processes (kern.proc.uid): %w", t.uid, err)
	}
	var out []proc
	for _, p := range ps {
		if p.zombie {
			continue
		}
		// A process gone since the listing has no session; one made its own (setsid) is
		// out of reach.
		if s, err := t.getsid(p.pid); err == nil && s == sid {
			out = append(out, proc{pid: p.pid, pgid: p.pgid})
		}
	}
	return out, nil
}

func (t sysctlProcs) group(pid int) (int, bool) {
	ps, err := t.table("pid", pid)
	if err != nil || len(ps) != 1 || ps[0].pid != pid || ps[0].zombie {
		return 0, false
	}
	return ps[0].pgid, true
}
