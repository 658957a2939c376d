package seatbelt

import (
	"slices"
	"syscall"
	"testing"
)

// fakeXNU stands in for XNU's process table behind sysctl: it answers only the names
// bsd/kern/kern_sysctl.c registers under kern.proc (all, pid, tty, pgrp, uid, ruid, lcid),
// and any other name as a Mac does, where sysctlnametomib fails (ENOENT).
type fakeXNU []fakeProc

type fakeProc struct {
	pid, pgid, sid, uid int
	zombie              bool
}

func (x fakeXNU) table(name string, arg int) ([]kinfo, error) {
	var keep func(fakeProc) bool
	switch name {
	case "all":
		keep = func(fakeProc) bool { return true }
	case "pid":
		keep = func(p fakeProc) bool { return p.pid == arg }
	case "pgrp":
		keep = func(p fakeProc) bool { return p.pgid == arg }
	case "uid", "ruid":
		keep = func(p fakeProc) bool { return p.uid == arg }
	case "tty", "lcid":
		keep = func(fakeProc) bool { return false }
	default:
		return nil, syscall.ENOENT
	}
	var out []kinfo
	for _, p := range x {
		if keep(p) {
			out = append(out, kinfo{pid: p.pid, pgid: p.pgid, zombie: p.zombie})
		}
	}
	return out, nil
}

func (x fakeXNU) getsid(pid int) (int, error) {
	for _, p := range x {
		if p.pid == pid {
			return p.sid, nil
		}
	}
	return 0, syscall.ESRCH
}

// The runner (100) leads session 100; its commands run in groups of their own in it. The
// session is found through this user's processes and getsid, as XNU has no sysctl that lists
// a session.
func TestSysctlProcsListsTheRunnersSession(t *testing.T) {
	const me = 501
	x := fakeXNU{
		{pid: 100, pgid: 100, sid: 100, uid: me},               // the runner
		{pid: 200, pgid: 200, sid: 100, uid: me},               // a command's group
		{pid: 201, pgid: 200, sid: 100, uid: me},               // what it left running (server &)
		{pid: 202, pgid: 200, sid: 100, uid: me, zombie: true}, // exited, not yet reaped
		{pid: 300, pgid: 300, sid: 300, uid: me},               // made a session of its own (setsid)
		{pid: 400, pgid: 400, sid: 400, uid: me},               // the person's terminal
		{pid: 1, pgid: 1, sid: 1, uid: 0},                      // launchd
	}
	procs := sysctlProcs{table: x.table, getsid: x.getsid, uid: me}
	got, err := procs.session(100)
	if err != nil {
		t.Fatal(err)
	}
	want := []proc{{100, 100}, {200, 200}, {201, 200}}
	if !slices.Equal(got, want) {
		t.Errorf("session 100 = %v, want %v", got, want)
	}
	for _, tt := range []struct {
		pid, pgid int
		ok        bool
	}{{201, 200, true}, {202, 0, false}, {999, 0, false}} {
		if g, ok := procs.group(tt.pid); g != tt.pgid || ok != tt.ok {
			t.Errorf("group(%d) = %d, %v; want %d, %v", tt.pid, g, ok, tt.pgid, tt.ok)
		}
	}
}

// A process that is gone between the listing and getsid is left out, not an error.
func TestSysctlProcsSkipsWhatEndedMeanwhile(t *testing.T) {
	x := fakeXNU{{pid: 100, pgid: 100, sid: 100, uid: 501}, {pid: 200, pgid: 200, sid: 100, uid: 501}}
	procs := sysctlProcs{table: x.table, getsid: func(pid int) (int, error) {
		if pid == 200 {
			return 0, syscall.ESRCH
		}
		return x.getsid(pid)
	}, uid: 501}
	got, err := procs.session(100)
	if err != nil || !slices.Equal(got, []proc{{100, 100}}) {
		t.Errorf("session 100 = %v, %v; want the runner alone", got, err)
	}
}
