package main

import (
	"os"
	"strings"
)

// folderBound says why what a session adds to its writable folders has no size bound here.
// A bound would take a project quota on each folder's file system (ext4 or xfs mounted with
// prjquota), set on the folder's tree at the session's start; OpenWorker does not set one up,
// so a command can fill the disk a writable folder is on. (The private tmp is bounded apart,
// by sandbox_max_tmp.)
func folderBound() []string {
	lines := []string{"no size bound: a session may fill the disk its writable folders are on (the private tmp is bounded apart)",
		"a bound needs a project quota on the folder's file system (ext4 or xfs mounted with prjquota), which sessions do not set up"}
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return lines
	}
	var with []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 4 && (strings.Contains(f[3], "prjquota") || strings.Contains(f[3], "pquota")) {
			with = append(with, f[1])
		}
	}
	if len(with) == 0 {
		lines[1] += "; no file system here is mounted with project quotas"
	} else {
		lines[1] += "; mounted with project quotas here: " + strings.Join(with, ", ")
	}
	return lines
}
