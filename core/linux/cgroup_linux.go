package linux

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/sandbox"
)

// A sandbox's limits are a cgroup of its own, made where the machine lets this process make
// one: under this process's own cgroup in each cgroup v1 hierarchy that has a controller a
// limit needs, and in the cgroup v2 hierarchy for the controllers it has. Machines mix the
// two: a hybrid one mounts memory and pids as v1 and the unified hierarchy with no
// controllers at all, so each controller is looked for in both.
//
// The wall builder enters its cgroup before it can start anything: on v2 it is cloned into
// it (CLONE_INTO_CGROUP); on v1 it is cloned by a thread that moved itself into the cgroups
// for the clone (see launcher_linux.go), or, where that thread cannot move there and back,
// its PID is written into the cgroup right after the clone, while it waits for its setup,
// and it forks nothing until the setup comes. Writing a PID moves every thread of the
// process at once. So no process of the sandbox ever runs outside its cgroup. Nothing inside can leave it: the sandbox has no cgroup file system
// and no capabilities.
//
// Where the machine does not let this process make a cgroup (an ordinary user whose cgroup
// is not delegated to them, a read-only cgroup file system), the sandbox runs without the
// limits that needed it and its Active list says which and why. Where the cgroup is made
// but cannot be used (a limit or the PID cannot be written), the session is refused: the
// machine offered the limit and it did not take.

// limitControllers are the cgroup controllers the limits use.
var limitControllers = []string{"pids", "memory", "cpu"}

// cgroupPrefix begins the name of every cgroup a sandbox gets; the creator's PID follows, so
// that a cgroup whose creator died before removing it is recognised and removed.
const cgroupPrefix = "openworker-"

// cgroupHost is where this machine's cgroup hierarchies are mounted, and this process's
// cgroup in each.
type cgroupHost struct {
	// v2Mount is the cgroup2 file system's mount point, "" when there is none; v2Own is
	// this process's cgroup in it.
	v2Mount, v2Own string
	// v1 is, by controller, the v1 hierarchy that has it.
	v1 map[string]v1Hierarchy
}

type v1Hierarchy struct {
	mount string // where it is mounted
	own   string // this process's cgroup in it, relative to the mount's root
}

// hostCgroups reads this process's cgroups once: they do not change while it runs.
var hostCgroups = sync.OnceValue(func() *cgroupHost {
	self, _ := os.ReadFile("/proc/self/cgroup")
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	return parseCgroups(string(self), string(mounts))
})

// parseCgroups reads /proc/self/cgroup (membership) and /proc/self/mountinfo (mounts).
func parseCgroups(self, mountinfo string) *cgroupHost {
	h := &cgroupHost{v1: map[string]v1Hierarchy{}}
	ownV1 := map[string]string{} // controller → path
	for _, line := range strings.Split(self, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			h.v2Own = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			ownV1[c] = f[2]
		}
	}
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 {
			continue
		}
		root, mnt := unescapeMount(pf[3]), unescapeMount(pf[4])
		switch qf[0] {
		case "cgroup2":
			if h.v2Mount == "" {
				h.v2Mount = mnt
				h.v2Own = within(root, h.v2Own)
			}
		case "cgroup":
			for _, opt := range strings.Split(qf[2], ",") {
				own, member := ownV1[opt]
				if _, seen := h.v1[opt]; member && !seen && slices.Contains(limitControllers, opt) {
					h.v1[opt] = v1Hierarchy{mount: mnt, own: within(root, own)}
				}
			}
		}
	}
	if h.v2Mount == "" {
		h.v2Own = ""
	}
	return h
}

// within is a cgroup path as seen below a mount whose root is root (not "/" when the mount
// shows only part of the hierarchy).
func within(root, own string) string {
	if root == "/" || root == "" {
		return own
	}
	if rest, ok := strings.CutPrefix(own, root); ok && (rest == "" || rest[0] == '/') {
		return "/" + strings.TrimPrefix(rest, "/")
	}
	return own
}

// unescapeMount undoes mountinfo's octal escapes of spaces, tabs, newlines and backslashes.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// v2Base is the cgroup under which a sandbox's v2 cgroup is made: this process's own when
// it is the root, or else its parent. A v2 cgroup that holds processes cannot give limited
// children of its own (the kernel's no-internal-processes rule), so a sandbox's cgroup sits
// beside this process's, inside the same delegated subtree.
func (h *cgroupHost) v2Base() string {
	if h.v2Mount == "" {
		return ""
	}
	own := path.Clean("/" + h.v2Own)
	if own != "/" {
		own = path.Dir(own)
	}
	return filepath.Join(h.v2Mount, own)
}

// cgroup is one sandbox's cgroup, in each hierarchy that serves one of its limits.
type cgroup struct {
	// v2 is the open v2 cgroup, to clone the builder into; nil when there is none.
	v2    *os.File
	v2Dir string
	// v1Dirs are the v1 cgroups, one per hierarchy, the builder's PID is written into.
	v1Dirs []string
	// serving is, by controller, the cgroup whose files set its limit.
	serving map[string]string
	// missing is, by controller, why it cannot limit this sandbox.
	missing map[string]string
	// removed is set once the directories are gone.
	removed bool
}

var cgroupSeq atomic.Uint64

// newCgroup makes a cgroup for one sandbox in every hierarchy that serves a limit and lets
// this process make one. What it cannot make it records in missing; it fails only when the
// machine let it make a cgroup it then cannot set up.
func newCgroup(h *cgroupHost) (*cgroup, error) {
	cg := &cgroup{serving: map[string]string{}, missing: map[string]string{}}
	name := cgroupPrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(cgroupSeq.Add(1), 10)
	// v1 first: a controller bound to a v1 hierarchy is not in v2.
	made := map[string]string{} // v1 mount → cgroup made there
	for _, c := range limitControllers {
		v1, ok := h.v1[c]
		if !ok {
			continue
		}
		if dir, ok := made[v1.mount]; ok {
			cg.serving[c] = dir
			continue
		}
		base := filepath.Join(v1.mount, v1.own)
		sweepStale(base)
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			cg.missing[c] = notDelegated("v1", base, err)
			continue
		}
		made[v1.mount] = dir
		cg.v1Dirs = append(cg.v1Dirs, dir)
		cg.serving[c] = dir
	}
	var want []string
	for _, c := range limitControllers {
		if _, ok := h.v1[c]; !ok {
			want = append(want, c)
		}
	}
	if base := h.v2Base(); base != "" {
		if err := cg.makeV2(base, name, want); err != nil {
			cg.remove()
			return nil, err
		}
	}
	for _, c := range want {
		if _, ok := cg.serving[c]; !ok && cg.missing[c] == "" {
			cg.missing[c] = "this kernel has no " + c + " controller in any cgroup hierarchy"
		}
	}
	return cg, nil
}

// makeV2 makes the v2 cgroup, with want's controllers where the hierarchy has them. It is
// made even when it serves none (a hybrid machine's unified hierarchy): it costs little,
// and it is where the sandbox's processes are found and ended as one.
func (cg *cgroup) makeV2(base, name string, want []string) error {
	have := fields(readSmall(filepath.Join(base, "cgroup.controllers")))
	enabled := fields(readSmall(filepath.Join(base, "cgroup.subtree_control")))
	var usable []string
	for _, c := range want {
		switch {
		case !slices.Contains(have, c):
			cg.missing[c] = fmt.Sprintf("no cgroup v1 hierarchy has the %s controller, and cgroup v2 does not offer it in %s", c, base)
		case slices.Contains(enabled, c):
			usable = append(usable, c)
		default:
			// Enabling a controller for children fails where the cgroup holds processes
			// of its own, or is not this user's.
			if err := os.WriteFile(filepath.Join(base, "cgroup.subtree_control"), []byte("+"+c), 0); err != nil {
				cg.missing[c] = notDelegated("v2", base, fmt.Errorf("enable %s for its children: %w", c, err))
				continue
			}
			usable = append(usable, c)
		}
	}
	sweepStale(base)
	dir := filepath.Join(base, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		for _, c := range usable {
			cg.missing[c] = notDelegated("v2", base, err)
		}
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		os.Remove(dir)
		return fmt.Errorf("linux sandbox: open the sandbox's cgroup %s: %w", dir, err)
	}
	cg.v2, cg.v2Dir = f, dir
	for _, c := range usable {
		cg.serving[c] = dir
	}
	return nil
}

// notDelegated says why a cgroup could not be made in base.
func notDelegated(version, base string, err error) string {
	why := fmt.Sprintf("cannot make a cgroup %s in %s: %v", version, base, unwrapPath(err))
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS) {
		why += fmt.Sprintf(" (the machine does not delegate this cgroup to uid %d", os.Getuid())
		if version == "v2" && os.Getuid() != 0 {
			why += "; run openworker inside your systemd user manager, e.g. systemd-run --user --scope -p Delegate=yes openworker serve"
		}
		why += ")"
	}
	if errors.Is(err, unix.EBUSY) {
		why += " (it holds processes of its own, so the kernel gives its children no controllers; start openworker in a cgroup of its own, e.g. with systemd-run --scope)"
	}
	return why
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// sweepStale removes the empty cgroups in base that a process of this program made and died
// without removing (killed, or it exited while its sandbox was still ending). A cgroup with
// processes in it cannot be removed, and one whose creator lives is left alone.
func sweepStale(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), cgroupPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if unix.Kill(pid, 0) == unix.ESRCH {
			_ = unix.Rmdir(filepath.Join(base, e.Name()))
		}
	}
}

// place moves the process pid (and all its threads) into the v1 cgroups. The v2 cgroup
// needs no move: the builder is cloned into it.
func (cg *cgroup) place(pid int) error {
	for _, dir := range cg.v1Dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("linux sandbox: move the wall builder into its cgroup %s: %w; the session is refused", dir, unwrapPath(err))
		}
	}
	return nil
}

// apply writes the limits into the cgroups and returns the words the sandbox's Active list
// gets: what is in force, and what is not and why. A limit that cannot be written where its
// controller is refuses the session.
func (cg *cgroup) apply(l sandbox.Limits, memTotal int64) ([]string, error) {
	l = l.WithDefaults()
	mem := l.Memory.Of(memTotal, sandbox.DefaultMemoryPercent)
	if _, ok := cg.serving["memory"]; ok && mem < 1<<20 {
		return nil, fmt.Errorf("linux sandbox: the memory limit would be %d bytes (the machine's memory read as %d bytes); the session is refused", mem, memTotal)
	}
	type setting struct{ file, value string }
	for _, c := range limitControllers {
		dir, ok := cg.serving[c]
		if !ok {
			continue
		}
		v2 := dir == cg.v2Dir
		var settings []setting
		switch {
		case c == "pids":
			settings = []setting{{"pids.max", strconv.Itoa(l.Processes)}}
		case c == "memory" && v2:
			// Swap counted apart in v2: none, so that a memory bomb meets its limit and
			// does not push the host's memory out to disk instead.
			settings = []setting{{"memory.max", strconv.FormatInt(mem, 10)}, {"memory.swap.max", "0"}}
		case c == "memory":
			// The second limit bounds memory and swap together, where swap is accounted.
			settings = []setting{{"memory.limit_in_bytes", strconv.FormatInt(mem, 10)}, {"memory.memsw.limit_in_bytes", strconv.FormatInt(mem, 10)}}
		case c == "cpu" && v2:
			settings = []setting{{"cpu.weight", strconv.Itoa(l.CPUWeight)}}
		case c == "cpu":
			// cpu.shares is 1024 for a normal process, as cpu.weight is 100.
			settings = []setting{{"cpu.shares", strconv.Itoa(max(2, l.CPUWeight*1024/100))}}
		}
		for i, s := range settings {
			err := os.WriteFile(filepath.Join(dir, s.file), []byte(s.value), 0)
			if err != nil && i > 0 && errors.Is(err, fs.ErrNotExist) {
				continue // the second memory file exists only where swap is accounted
			}
			if err != nil {
				return nil, fmt.Errorf("linux sandbox: set %s = %s in the sandbox's cgroup %s: %w; the session is refused", s.file, s.value, dir, unwrapPath(err))
			}
		}
	}
	return cg.words(l, mem), nil
}

// words say which limits are in force, by which cgroup version, and which are not and why.
func (cg *cgroup) words(l sandbox.Limits, mem int64) []string {
	var on []string
	var off []string
	for _, c := range limitControllers {
		what := map[string]string{
			"pids":   fmt.Sprintf("processes %d", l.Processes),
			"memory": "memory " + sandbox.FormatBytes(mem),
			"cpu":    fmt.Sprintf("cpu weight %d", l.CPUWeight),
		}[c]
		if dir, ok := cg.serving[c]; ok {
			version := "v1"
			if dir == cg.v2Dir {
				version = "v2"
			}
			on = append(on, what+" (cgroup "+version+")")
		} else {
			off = append(off, fmt.Sprintf("limit not in force: %s: %s", what, cg.missing[c]))
		}
	}
	var out []string
	if len(on) > 0 {
		out = append(out, "limits: "+strings.Join(on, ", "))
	}
	return append(out, off...)
}

// made says whether there is any cgroup to remove.
func (cg *cgroup) made() bool { return cg != nil && (cg.v2Dir != "" || len(cg.v1Dirs) > 0) }

// cloneInto sets up attr so that the builder is cloned into the v2 cgroup.
func (cg *cgroup) cloneInto(useFD *bool, fd *int) {
	if cg.v2 != nil {
		*useFD, *fd = true, int(cg.v2.Fd())
	}
}

// remove ends whatever is left in the cgroups and removes them. The sandbox is empty by
// then (its PID 1 has been reaped, and the kernel ends a PID namespace's processes before
// its init is), so this is at most a short wait for the kernel to let go of them.
func (cg *cgroup) remove() {
	if cg == nil || cg.removed {
		return
	}
	cg.removed = true
	if cg.v2 != nil {
		cg.v2.Close()
		// Where the kernel has it (5.14), one write ends every process in the cgroup.
		_ = os.WriteFile(filepath.Join(cg.v2Dir, "cgroup.kill"), []byte("1"), 0)
	}
	for _, dir := range cg.dirs() {
		delay := 100 * time.Microsecond
		for deadline := time.Now().Add(5 * time.Second); ; {
			err := unix.Rmdir(dir)
			if err == nil || errors.Is(err, unix.ENOENT) || !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				break
			}
			killAll(dir)
			time.Sleep(delay)
			delay = min(2*delay, 50*time.Millisecond)
		}
	}
}

// killAll kills every process a v1 cgroup still lists, but this one: a launch thread that
// could not leave the cgroup (see launcher_linux.go) lists it.
func killAll(dir string) {
	for _, f := range fields(readSmall(filepath.Join(dir, "cgroup.procs"))) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 && pid != os.Getpid() {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}

func readSmall(name string) []byte {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil
	}
	return b
}

func fields(b []byte) []string {
	if b == nil {
		return nil
	}
	return strings.Fields(string(b))
}

// memTotal is the machine's memory in bytes, from /proc/meminfo; 0 when it cannot be read.
var memTotal = sync.OnceValue(func() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("MemTotal:")); ok {
			fs := strings.Fields(string(rest))
			if len(fs) == 2 && fs[1] == "kB" {
				if n, err := strconv.ParseInt(fs[0], 10, 64); err == nil {
					return n << 10
				}
			}
		}
	}
	return 0
})

// dirs are the cgroups' directories, v2 first.
func (cg *cgroup) dirs() []string {
	if cg.v2Dir == "" {
		return slices.Clone(cg.v1Dirs)
	}
	return append([]string{cg.v2Dir}, cg.v1Dirs...)
}
