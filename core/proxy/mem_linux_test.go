package proxy

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// raiseFileLimit lifts RLIMIT_NOFILE as far as it will go, so thousands of tunnels fit: each
// holds two sockets. It returns the limit in force.
func raiseFileLimit(tb testing.TB) uint64 {
	want := uint64(200000)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	if lim.Cur >= want {
		return lim.Cur
	}
	next := syscall.Rlimit{Cur: want, Max: max(lim.Max, want)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &next); err == nil {
		return want
	}
	// Without the privilege to raise the hard limit, take all of it.
	next = syscall.Rlimit{Cur: lim.Max, Max: lim.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &next); err != nil {
		tb.Fatalf("raising the open-file limit to its hard limit %d: %v", lim.Max, err)
	}
	return lim.Max
}

// memory returns this process's resident set and Go heap in use, after a collection.
func memory(tb testing.TB) (rss, heap uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			rss = kb << 10
		}
	}
	return rss, ms.HeapInuse
}
