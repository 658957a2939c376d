package seatbelt

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openworker/openworker/core/sandbox"
)

// MarkerPrefix starts every marker a LogFollower follows: the one log stream it keeps asks
// the log for lines containing it, and each command's window picks out its own marker.
const MarkerPrefix = "openworker-"

// Defaults of a LogFollower.
const (
	// followReady is how long starting the stream may take before it counts as failed.
	followReady = 10 * time.Second
	// windowTimeout is how long End waits for its sentinel after the provocation returned.
	windowTimeout = 5 * time.Second
	// idleStop ends the stream when no window has been open for this long.
	idleStop = 5 * time.Minute
	// refusedFor is how long a refusal to stream (not an administrator) is remembered, so
	// that commands do not each pay for starting `log stream` only to be refused.
	refusedFor = time.Minute
)

// ErrNotAdmin says that the log refused to stream: reading it needs an administrator.
var ErrNotAdmin = errors.New("reading the unified log needs an administrator account")

// ErrIncomplete says a command's window closed without its sentinel, so some of its denials
// may be missing from the report.
var ErrIncomplete = errors.New("not every denial of this command could be read back from the log")

// ProvokeFunc makes Seatbelt deny one read of target under a profile whose denials carry
// marker. Its denial, read back from the log, is the sentinel that closes a window: every
// denial the command caused before it has been read by then.
type ProvokeFunc func(ctx context.Context, marker, target string) error

// LogFollower follows the unified log once for many commands: one stream of Seatbelt's
// denials for every marker starting with MarkerPrefix, started on the first command and kept
// while commands come. Each command gets a Window, filtered by its session's marker, which its
// End closes with a sentinel denial instead of waiting a grace period: a command costs the
// provocation and the log's delivery of one line, not a stream start and half a second.
//
// The order it relies on: the kernel logs a process's denials as they happen, and the log
// streams them in that order; a command's processes have made their denials before the
// runner reports that it ended, and the sentinel is provoked after that.
type LogFollower struct {
	// Command is the stream's argv: `log stream --style ndjson --predicate ...`, or a stand-in
	// in tests. Its first line (log's "Filtering the log data ..." header) says it is ready.
	Command []string
	// Provoke provokes a sentinel denial.
	Provoke ProvokeFunc
	// SentinelDir is the folder sentinel targets are named in, as Seatbelt logs it (resolved).
	SentinelDir string
	// Ready, Timeout and IdleStop override followReady, windowTimeout and idleStop.
	Ready, Timeout, IdleStop time.Duration

	// procs reads the host's process table, to tell the command a denial's process belongs
	// to; nil takes every denial for the command whose window is open.
	procs procTable

	seq       atomic.Uint64
	nonceOnce sync.Once
	nonce     string // tells this process's sentinels from another's

	mu        sync.Mutex // guards the fields below; held while a stream starts
	cur       *logStream
	refused   error
	refusedAt time.Time
}

// logStream is one run of the stream command.
type logStream struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer // read only after done
	done   chan struct{}
	idle   time.Duration

	mu       sync.Mutex
	windows  map[*Window]bool
	timer    *time.Timer
	stopping bool // the idle timer fired: no new window may join
	// recent are windows that ended less than lateFor ago, newest last, and late the
	// reports sandboxd logged for them after their sentinels, by marker, for the marker's
	// next window: sandboxd writes its reports after the kernel's, sometimes after a
	// command's sentinel.
	recent []recentWindow
	late   map[string][]Denial
}

// recentWindow is a window that ended, kept until a time for sandboxd's late reports.
type recentWindow struct {
	w     *Window
	until time.Time
}

const (
	// lateFor is how long after its end a window takes sandboxd's late reports.
	lateFor = 10 * time.Second
	// lateMax bounds the late reports kept for a marker, and lateMarkers the markers.
	lateMax     = 64
	lateMarkers = 256
)

// proc is one live process of the host: its ID and its group's.
type proc struct{ pid, pgid int }

// procTable answers, from outside every wall, which processes are whose.
type procTable interface {
	// session lists the live processes of session sid.
	session(sid int) ([]proc, error)
	// group is a live process's group; false when it is gone.
	group(pid int) (int, bool)
}

// Window collects one command's denials, from Begin until its sentinel is read.
type Window struct {
	f      *LogFollower
	s      *logStream
	marker string
	// leader is the session's runner, the leader of the session (setsid) its commands run
	// in; 0 when it is not known. earlierPIDs and earlierGroups are the processes that were
	// running in it when the window opened, and their groups, the runner's own left out:
	// what earlier commands left running (each command is a process group of its own).
	leader        int
	earlierPIDs   map[int]bool
	earlierGroups map[int]bool
	// unpaired counts, by reporter ("" the kernel, or sandboxd) and refusal, the lines the
	// other reporter has not matched yet (see pairedReport).
	unpaired map[string]map[string]int

	mu       sync.Mutex
	denials  []Denial
	sentinel string        // the target End waits for; empty before End
	seen     chan struct{} // closed when the sentinel is read
	closed   bool
}

func (f *LogFollower) ready() time.Duration   { return orDefault(f.Ready, followReady) }
func (f *LogFollower) timeout() time.Duration { return orDefault(f.Timeout, windowTimeout) }
func (f *LogFollower) idleStop() time.Duration {
	return orDefault(f.IdleStop, idleStop)
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Begin opens a window for a command of the session with this marker: start the command
// after it returns. The stream is started if it is not running (and Begin waits until it is
// ready); an error wrapping ErrNotAdmin means this user may not read the log.
func (f *LogFollower) Begin(ctx context.Context, marker string) (*Window, error) {
	return f.BeginFor(ctx, marker, 0)
}

// BeginFor is Begin for a command of the session whose runner is leader: a denial made by a
// process an earlier command of the session left running is marked Earlier, and a report
// sandboxd logged without the marker is the window's when its process is in the session.
func (f *LogFollower) BeginFor(ctx context.Context, marker string, leader int) (*Window, error) {
	w, err := f.begin(ctx, marker)
	if err != nil || leader <= 0 || f.procs == nil {
		return w, err
	}
	ps, err := f.procs.session(leader)
	if err != nil {
		return w, nil // every denial is then the command's, as without a leader
	}
	earlierPIDs, earlierGroups := map[int]bool{}, map[int]bool{}
	for _, p := range ps {
		if p.pid == leader {
			continue
		}
		earlierPIDs[p.pid] = true
		if p.pgid != leader {
			earlierGroups[p.pgid] = true
		}
	}
	w.mu.Lock()
	w.leader, w.earlierPIDs, w.earlierGroups = leader, earlierPIDs, earlierGroups
	w.mu.Unlock()
	return w, nil
}

func (f *LogFollower) begin(ctx context.Context, marker string) (*Window, error) {
	if !validMarker(marker) || !strings.HasPrefix(marker, MarkerPrefix) {
		return nil, fmt.Errorf("seatbelt: marker %q is not one this follower's stream asks for (%s...)", marker, MarkerPrefix)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refused != nil && time.Since(f.refusedAt) < refusedFor {
		return nil, f.refused
	}
	w := &Window{f: f, marker: marker, seen: make(chan struct{})}
	if s := f.cur; s != nil && !s.ended() && s.add(w) {
		w.s = s
		return w, nil
	}
	s, err := f.start(ctx)
	if err != nil {
		if errors.Is(err, ErrNotAdmin) {
			f.refused, f.refusedAt = err, time.Now()
		}
		return nil, err
	}
	f.cur = s
	s.add(w)
	w.s = s
	return w, nil
}

// End closes the window: it provokes the sentinel, waits until the stream has read it, and
// returns every denial of the marker read since Begin. When the sentinel does not come (the
// stream ended, or is slower than the timeout), it returns what it read with an error
// wrapping ErrIncomplete.
func (w *Window) End(ctx context.Context) ([]Denial, error) {
	f := w.f
	f.nonceOnce.Do(func() { f.nonce = strconv.FormatInt(time.Now().UnixNano(), 36) })
	// Not the marker itself: the parser takes the marker out of a line before reading it.
	target := filepath.Join(f.SentinelDir, ".sentinel-"+f.nonce+"-"+strconv.FormatUint(f.seq.Add(1), 10))
	defer w.s.remove(w)

	w.mu.Lock()
	w.sentinel = target
	w.mu.Unlock()
	var why string
	if err := f.Provoke(ctx, w.marker, target); err != nil {
		why = "the sentinel denial could not be provoked: " + err.Error()
	} else {
		timer := time.NewTimer(f.timeout())
		select {
		case <-w.seen:
		case <-w.s.done:
			why = "the log stream ended: " + w.s.describe()
		case <-timer.C:
			why = fmt.Sprintf("the log did not deliver the sentinel within %s", f.timeout())
		case <-ctx.Done():
			why = ctx.Err().Error()
		}
		timer.Stop()
		select {
		case <-w.seen: // it came after all
			why = ""
		default:
		}
	}
	w.mu.Lock()
	w.closed = true
	out := slices.Clone(w.denials)
	w.mu.Unlock()
	if why != "" {
		return out, fmt.Errorf("%w (%s)", ErrIncomplete, why)
	}
	return out, nil
}

// owns says pid is a process of the window's session: running in it now, or when the
// window opened.
func (w *Window) owns(pid int) bool {
	w.mu.Lock()
	leader, earlier := w.leader, w.earlierPIDs[pid]
	w.mu.Unlock()
	if leader <= 0 || w.f.procs == nil {
		return false
	}
	if earlier || pid == leader {
		return true
	}
	ps, err := w.f.procs.session(leader)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(ps, func(p proc) bool { return p.pid == pid })
}

// deliver gives a window one denial of its marker (or of its session), marked Earlier when
// an earlier command's process made it: one whose group was running when the window
// opened, or, once it is gone, one that was itself. It says whether the window took it:
// not once the window is closed.
func (w *Window) deliver(d Denial) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.leader > 0 && w.f.procs != nil {
		if g, ok := w.f.procs.group(d.PID); ok {
			d.Earlier = w.earlierGroups[g]
		} else {
			d.Earlier = w.earlierPIDs[d.PID]
		}
	}
	switch {
	case w.closed:
		return false
	case w.sentinel != "" && d.Target == w.sentinel:
		w.closed = true
		close(w.seen)
	case w.pairedReport(d):
	default:
		w.denials = append(w.denials, d)
	}
	return true
}

// pairs says d is the other reporter's line for a refusal the window (ended) already has.
func (w *Window) pairs(d Denial) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pairedReport(d)
}

// pairedReport says d is the other reporter's line for a refusal the window already has:
// the kernel and sandboxd may both report one, which is one refusal. Each line pairs with
// one of the other's at most, so that repeats still count. w.mu is held.
func (w *Window) pairedReport(d Denial) bool {
	if d.Repeats {
		return false
	}
	key := fmt.Sprintf("%d %s %s", d.PID, d.Operation, d.Target)
	other := FromSandboxd
	if d.From == FromSandboxd {
		other = ""
	}
	if w.unpaired == nil {
		w.unpaired = map[string]map[string]int{}
	}
	if w.unpaired[other][key] > 0 {
		w.unpaired[other][key]--
		return true
	}
	if w.unpaired[d.From] == nil {
		w.unpaired[d.From] = map[string]int{}
	}
	w.unpaired[d.From][key]++
	return false
}

// Close ends the stream. A later Begin starts a new one.
func (f *LogFollower) Close() {
	f.mu.Lock()
	s := f.cur
	f.cur = nil
	f.mu.Unlock()
	if s != nil {
		s.stop()
	}
}

// start starts the stream command and returns once its first line has arrived, so that no
// denial of a command started afterwards can be missed.
func (f *LogFollower) start(ctx context.Context) (*logStream, error) {
	if len(f.Command) == 0 {
		return nil, errors.New("seatbelt: the log follower has no stream command")
	}
	name := f.Command[0]
	s := &logStream{cmd: exec.Command(name, f.Command[1:]...), done: make(chan struct{}), windows: map[*Window]bool{}, idle: f.idleStop()}
	s.cmd.Stderr = &s.stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("seatbelt: starting %s: %w", name, err)
	}
	first := make(chan struct{})
	go s.collect(out, first)
	timer := time.NewTimer(f.ready())
	defer timer.Stop()
	select {
	case <-first:
		return s, nil
	case <-s.done:
		// The stream ended before its header: it refused to run.
		msg := strings.TrimSpace(s.stderr.String())
		if strings.Contains(strings.ToLower(msg), "admin") {
			return nil, fmt.Errorf("%w (%s)", ErrNotAdmin, msg)
		}
		return nil, fmt.Errorf("seatbelt: %s ended before it was ready: %s", name, s.describe())
	case <-timer.C:
	case <-ctx.Done():
	}
	s.stop()
	return nil, fmt.Errorf("seatbelt: %s was not ready within %s", name, f.ready())
}

func (s *logStream) collect(r io.Reader, first chan<- struct{}) {
	defer func() {
		s.cmd.Wait()
		close(s.done)
	}()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	signalled := false
	for sc.Scan() {
		if !signalled {
			signalled = true
			close(first)
			continue // log's header
		}
		line := sc.Bytes()
		// A line carries its run's marker, or is a report of sandboxd's without one, which
		// is a session's when its process is in the session.
		marked := bytes.Contains(line, []byte(MarkerPrefix))
		var unmarked Denial
		if !marked {
			var ok bool
			if unmarked, ok = parseSandboxdLine(line); !ok {
				continue
			}
		}
		match := func(w *Window) (Denial, bool) {
			if marked {
				return ParseLogLine(line, w.marker)
			}
			return unmarked, w.owns(unmarked.PID)
		}
		s.mu.Lock()
		s.pruneRecent(time.Now())
		// sandboxd's half of a refusal the kernel reported in an ended window is that
		// refusal, said already. Otherwise the newest ended window it is of may keep it.
		said := false
		var ended *Window
		var endedD Denial
		for _, r := range s.recent {
			d, ok := match(r.w)
			if !ok {
				continue
			}
			if d.From == FromSandboxd && r.w.pairs(d) {
				said = true
				break
			}
			ended, endedD = r.w, d
		}
		took := said
		if !said {
			for w := range s.windows {
				if d, ok := match(w); ok && w.deliver(d) {
					took = true
				}
			}
		}
		if !took && ended != nil {
			s.keepLate(ended, endedD)
		}
		s.mu.Unlock()
	}
	io.Copy(io.Discard, r) // a line too long for the scanner must not block the stream
}

// pruneRecent forgets the ended windows whose time for late reports is over. s.mu is held.
func (s *logStream) pruneRecent(now time.Time) {
	i := 0
	for i < len(s.recent) && now.After(s.recent[i].until) {
		i++
	}
	s.recent = s.recent[i:]
}

// keepLate keeps d, a line no open window took, of w, the newest ended window it is of,
// for that marker's next window, marked as an earlier command's: when sandboxd wrote it. A
// kernel line of an ended window came before its sentinel and was said. s.mu is held.
func (s *logStream) keepLate(w *Window, d Denial) {
	if d.From != FromSandboxd {
		return
	}
	if s.late == nil {
		s.late = map[string][]Denial{}
	}
	if _, known := s.late[w.marker]; (known || len(s.late) < lateMarkers) && len(s.late[w.marker]) < lateMax {
		d.Earlier = true
		s.late[w.marker] = append(s.late[w.marker], d)
	}
}

// add lets w join the stream; false when the stream is stopping for want of windows. The
// late reports kept for its marker are its first denials.
func (s *logStream) add(w *Window) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.windows[w] = true
	if late := s.late[w.marker]; len(late) > 0 {
		w.mu.Lock()
		w.denials = append(w.denials, late...)
		w.mu.Unlock()
		delete(s.late, w.marker)
	}
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	return true
}

func (s *logStream) remove(w *Window) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.windows, w)
	now := time.Now()
	s.pruneRecent(now)
	s.recent = append(s.recent, recentWindow{w: w, until: now.Add(lateFor)})
	if len(s.windows) == 0 && s.timer == nil {
		s.timer = time.AfterFunc(s.idle, func() {
			s.mu.Lock()
			s.stopping = s.stopping || len(s.windows) == 0
			idle := s.stopping
			s.mu.Unlock()
			if idle {
				s.stop()
			}
		})
	}
}

func (s *logStream) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// stop kills the stream and waits for its reader.
func (s *logStream) stop() {
	s.cmd.Process.Kill()
	<-s.done
}

// describe says how the stream ended; call it after done.
func (s *logStream) describe() string {
	state := "no exit status"
	if s.cmd.ProcessState != nil {
		state = s.cmd.ProcessState.String()
	}
	if msg := strings.TrimSpace(s.stderr.String()); msg != "" {
		return state + ": " + msg
	}
	return state
}

// current is the stream running now, nil when none is.
func (f *LogFollower) current() *logStream {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur != nil && f.cur.ended() {
		return nil
	}
	return f.cur
}

// notReported is how a session is told its command's denials cannot be reported.
func notReported(why error) error {
	return fmt.Errorf("Seatbelt's denials are not reported for this run: %w", why)
}

// FollowDenials opens the report of one command of a session (sandbox.DenialReporter): a
// window on the provider's one log stream, which is started when none runs. proc is the
// session's runner, whose session's processes are the session's.
func (pr *Provider) FollowDenials(ctx context.Context, marker string, proc sandbox.Process) (sandbox.DenialReport, error) {
	f := pr.logFollower()
	if f == nil {
		return nil, notReported(errors.New("they are read from the macOS unified log, which this OS does not have"))
	}
	leader := 0
	if proc != nil {
		leader = proc.Pid()
	}
	w, err := f.BeginFor(ctx, marker, leader)
	if err != nil {
		return nil, notReported(err)
	}
	return &report{w: w}, nil
}

// StopFollowing ends the provider's log stream (sandbox.DenialReporter); the next command
// starts another.
func (pr *Provider) StopFollowing() {
	pr.followMu.Lock()
	f := pr.follower
	pr.followMu.Unlock()
	if f != nil {
		f.Close()
	}
}

// logFollower is the provider's one log stream, made at first use: following the log once,
// not once per command, is what keeps a command's reporting cost to one sentinel. Nil where
// there is no unified log.
func (pr *Provider) logFollower() *LogFollower {
	pr.followMu.Lock()
	defer pr.followMu.Unlock()
	if pr.follower == nil {
		pr.follower = newLogFollower()
	}
	return pr.follower
}

// useFollower has the provider follow f (a stand-in stream, in tests).
func (pr *Provider) useFollower(f *LogFollower) {
	pr.followMu.Lock()
	pr.follower = f
	pr.followMu.Unlock()
}

// report is one command's window, as a session closes it.
type report struct{ w *Window }

// Close ends the command's window and summarizes its denials. When some may be missing (the
// sentinel did not come), the report says so.
func (r *report) Close(run sandbox.DenialRun) sandbox.Denials {
	ds, err := r.w.End(context.Background())
	sum := SummarizeRun(ds, Run{UserHome: run.UserHome, Failed: run.Failed, LocalServers: run.LocalServers})
	out := sandbox.Denials{Text: sum.Text}
	if err != nil {
		out.Text += "openworker sandbox: " + err.Error() + "\n"
	}
	for _, e := range sum.Egress {
		out.Egress = append(out.Egress, sandbox.Egress{Host: e.Host, Port: e.Port, Reason: e.Reason})
	}
	for _, d := range sum.All {
		out.Listed = append(out.Listed, d.Line())
	}
	if len(sum.All) > 0 {
		var b bytes.Buffer
		if WriteViolations(&b, sum.All) == nil {
			out.Violations = b.Bytes()
		}
	}
	return out
}
