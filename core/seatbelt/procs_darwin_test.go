package seatbelt

import (
	"slices"
	"strings"
	"testing"

	sys "golang.org/x/sys/unix"
)

// fakeSysctl stands in for x/sys's SysctlKinfoProcSlice on XNU: kinfo_proc entries for the
// names kern_sysctl.c registers, ENOENT (as sysctlnametomib gives) for any other.
func fakeSysctl(x fakeXNU) func(name string, args ...int) ([]sys.KinfoProc, error) {
	return func(name string, args ...int) ([]sys.KinfoProc, error) {
		short, ok := strings.CutPrefix(name, "kern.proc.")
		if !ok || len(args) != 1 {
			return nil, sys.ENOENT
		}
		ks, err := x.table(short, args[0])
		if err != nil {
			return nil, err
		}
		out := make([]sys.KinfoProc, len(ks))
		for i, k := range ks {
			out[i].Proc.P_pid = int32(k.pid)
			out[i].Eproc.Pgid = int32(k.pgid)
			if k.zombie {
				out[i].Proc.P_stat = szomb
			}
		}
		return out, nil
	}
}

// The lister this Mac uses, through kinfo_proc as x/sys returns it: the runner's session is
// this user's processes whose getsid is the runner's.
func TestKernelProcsThroughKinfoProc(t *testing.T) {
	const me = 501
	x := fakeXNU{
		{pid: 100, pgid: 100, sid: 100, uid: me},
		{pid: 200, pgid: 200, sid: 100, uid: me},
		{pid: 202, pgid: 200, sid: 100, uid: me, zombie: true},
		{pid: 300, pgid: 300, sid: 300, uid: me},
		{pid: 1, pgid: 1, sid: 1, uid: 0},
	}
	procs := sysctlProcs{table: kinfoTable(fakeSysctl(x)), getsid: x.getsid, uid: me}
	got, err := procs.session(100)
	if want := []proc{{100, 100}, {200, 200}}; err != nil || !slices.Equal(got, want) {
		t.Errorf("session 100 = %v, %v; want %v", got, err, want)
	}
	if g, ok := procs.group(200); !ok || g != 200 {
		t.Errorf("group(200) = %d, %v", g, ok)
	}
	if _, ok := procs.group(202); ok {
		t.Error("a zombie has a group")
	}
}
