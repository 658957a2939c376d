package sandbox

import (
	"fmt"
	"runtime"
	"strconv"
)

// Limits bound what one sandbox may take from the machine: processes, memory, CPU time
// under contention and the size of its private tmp. A zero field means the default below.
// A provider that cannot enforce a limit says so in its Active list; Seatbelt has none.
type Limits struct {
	// Processes caps the tasks (processes and threads) alive in the sandbox at once.
	Processes int
	// Memory caps the sandbox's memory, the private tmp's files included where it is kept
	// in memory.
	Memory Amount
	// CPUWeight is the sandbox's share of the CPUs when they are busy, from 1 to 10000
	// (100 is an ordinary program's share); an idle machine gives it all the CPU it uses.
	CPUWeight int
	// Tmp caps the size of the private tmp, the sandbox home inside it.
	Tmp Amount
}

// Defaults of Limits, chosen so that no developer meets them in normal work and a
// runaway command meets them long before the machine does:
//   - 4096 tasks: a parallel build on many cores (make -j, cargo, a JVM's hundreds of
//     threads) stays below a thousand; a fork bomb reaches 4096 in milliseconds.
//   - half the machine's memory: a large link or test run fits, and the other half is
//     left to the desktop, the daemon and the other sessions.
//   - CPU weight 100 for each of the machine's CPUs (DefaultCPUWeight): each sandbox
//     competes as one group, like as many busy programs as there are CPUs, so a parallel
//     build inside keeps the machine's worth when the host is busy too, and a command that
//     starts a thousand busy processes still counts as that many, not as a thousand. (At
//     100, a normal program's, a sandbox whose cgroup sits beside the host's own processes
//     got one program's share for all of its processes.)
//   - a quarter of the machine's memory for the private tmp: package caches and build
//     trees fit (as in a distribution's tmpfs /tmp, which takes half), and a disk fill
//     ends there, not on the host's disk.
const (
	DefaultProcesses     = 4096
	DefaultMemoryPercent = 50
	DefaultTmpPercent    = 25
)

// Amount is a size: Bytes, or Percent of the machine's memory when Bytes is 0. The zero
// Amount means the default.
type Amount struct {
	Bytes   int64
	Percent int
}

// Of returns the amount in bytes on a machine with total bytes of memory; def is the
// percent a zero Amount stands for. A share is rounded down to whole 4 KiB pages.
func (a Amount) Of(total int64, def int) int64 {
	switch {
	case a.Bytes > 0:
		return a.Bytes
	case a.Percent > 0:
		def = a.Percent
	}
	return total * int64(def) / 100 &^ 4095
}

// String is the amount as a settings file writes it: "8GiB", "512MiB", "50%", or "" for
// the default.
func (a Amount) String() string {
	switch {
	case a.Bytes > 0:
		return FormatBytes(a.Bytes)
	case a.Percent > 0:
		return strconv.Itoa(a.Percent) + "%"
	}
	return ""
}

// DefaultCPUWeight is 100 for each CPU this process may run on, at most 10000.
func DefaultCPUWeight() int { return min(10000, 100*runtime.NumCPU()) }

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.Processes <= 0 {
		l.Processes = DefaultProcesses
	}
	if l.Memory == (Amount{}) {
		l.Memory.Percent = DefaultMemoryPercent
	}
	if l.CPUWeight <= 0 {
		l.CPUWeight = DefaultCPUWeight()
	}
	if l.Tmp == (Amount{}) {
		l.Tmp.Percent = DefaultTmpPercent
	}
	return l
}

// FormatBytes writes n for a person: in whole TiB, GiB or MiB where it is one ("8GiB"),
// else with one decimal in the largest unit below it ("11.8GiB"); below a MiB in KiB or
// bytes.
func FormatBytes(n int64) string {
	units := []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}}
	for _, u := range units {
		switch {
		case n < u.size:
			continue
		case n%u.size == 0:
			return strconv.FormatInt(n/u.size, 10) + u.name
		case u.name != "TiB":
			return fmt.Sprintf("%.1f%s", float64(n)/float64(u.size), u.name)
		}
	}
	if n >= 1<<10 && n%(1<<10) == 0 {
		return strconv.FormatInt(n>>10, 10) + "KiB"
	}
	return strconv.FormatInt(n, 10) + "B"
}

// LimitReporter is a Process that says what bounds it: each limit in force, and each that
// is not and why, in words a person reads.
type LimitReporter interface {
	Limits() []string
}

// TmpBounder is a Provider that can bound a session's private tmp by making it a file
// system of its own. The session calls BoundTmp on the folder it has just made, before it
// puts anything in it, and ReleaseTmp before it removes it (and on the folder of a session
// whose owner died).
type TmpBounder interface {
	// BoundTmp makes dir, new and empty, a file system of at most tmp's size (a share of
	// the machine's memory, or bytes). Where the machine does not allow it, dir stays a
	// folder of the host's disk, and the provider says so in the Active list of every
	// sandbox that uses it. An error means dir cannot be used at all.
	BoundTmp(dir string, tmp Amount) error
	// ReleaseTmp undoes BoundTmp; it is harmless on a folder BoundTmp did not bound.
	ReleaseTmp(dir string)
}
