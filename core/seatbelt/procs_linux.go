package seatbelt

import (
	"os"
	"strconv"
	"strings"
)

// sessionPIDs lists the live processes of session sid (zombies, which a signal no longer
// reaches, left out), from /proc: the same question macOS answers with sysctl, so that
// Kill's sweep is tested here.
func sessionPIDs(sid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp session …; comm may hold spaces and parentheses.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 3 && f[3] == strconv.Itoa(sid) && f[0] != "Z" {
			out = append(out, pid)
		}
	}
	return out, nil
}

// hostProcs reads the process table from /proc, as macOS's hostProcs does with sysctl, so
// that the follower's attribution is tested here against real processes.
type hostProcs struct{}

// stat reads a process's group and session; false when it is gone or a zombie.
func (hostProcs) stat(pid int) (pgid, sid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 4 || f[0] == "Z" {
		return 0, 0, false
	}
	pgid, err1 := strconv.Atoi(f[2])
	sid, err2 := strconv.Atoi(f[3])
	return pgid, sid, err1 == nil && err2 == nil
}

func (h hostProcs) session(sid int) ([]proc, error) {
	pids, err := sessionPIDs(sid)
	if err != nil {
		return nil, err
	}
	out := make([]proc, 0, len(pids))
	for _, pid := range pids {
		if pgid, _, ok := h.stat(pid); ok {
			out = append(out, proc{pid: pid, pgid: pgid})
		}
	}
	return out, nil
}

func (h hostProcs) group(pid int) (int, bool) {
	pgid, _, ok := h.stat(pid)
	return pgid, ok
}
