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
