package seatbelt

import (
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/sandbox"
)

// sandboxdLine is a line as `log stream --style ndjson` prints a report sandboxd wrote (a
// mach-lookup denial, for example), from image (sandboxd's own, or an impostor's).
func sandboxdLine(image string, pid int, msg string) []byte {
	b, _ := json.Marshal(map[string]any{
		"eventType": "logEvent", "processImagePath": image, "processID": pid,
		"subsystem": "com.apple.sandbox.reporting", "category": "violation",
		"eventMessage": msg, "timestamp": "2025-03-04 10:11:12.345678-0800",
	})
	return append(b, '\n')
}

func TestParseSandboxdAndDuplicates(t *testing.T) {
	kernel := func(msg string) []byte {
		b, _ := json.Marshal(map[string]any{"eventMessage": msg + "\n" + testMarker, "processImagePath": "/kernel", "processID": 0, "timestamp": "t"})
		return b
	}
	tests := []struct {
		name string
		line []byte
		want Denial
		ok   bool
	}{
		{"sandboxd_with_marker", sandboxdLine(SandboxdPath, 180, "Sandbox: gh(64174) deny(1) mach-lookup com.apple.trustd.agent\n"+testMarker),
			Denial{Time: "2025-03-04 10:11:12.345678-0800", Process: "gh", PID: 64174, Operation: "mach-lookup", Target: "com.apple.trustd.agent", Count: 1, From: FromSandboxd}, true},
		// Only sandboxd is believed in its subsystem: a program logging there is not it.
		{"impostor_in_the_subsystem", sandboxdLine("/private/tmp/openworker-x/sandboxd", 4000, "Sandbox: gh(1) deny(1) mach-lookup x\n"+testMarker), Denial{}, false},
		{"duplicates", kernel("12 duplicate reports for Sandbox: go(9) deny(1) file-write-data /Users/me/Library/Caches/go-build/x"),
			Denial{Time: "t", Process: "go", PID: 9, Operation: "file-write-data", Target: "/Users/me/Library/Caches/go-build/x", Count: 12, Repeats: true}, true},
		{"one_duplicate", kernel("1 duplicate report for Sandbox: ls(41491) deny(2) file-read-metadata /Users/me"),
			Denial{Time: "t", Process: "ls", PID: 41491, Operation: "file-read-metadata", Target: "/Users/me", Count: 2, Repeats: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := ParseLogLine(tt.line, testMarker)
			if ok != tt.ok || d != tt.want {
				t.Errorf("ParseLogLine = %+v, %v; want %+v, %v", d, ok, tt.want, tt.ok)
			}
		})
	}
}

// Repeats folded into a duplicates line are counted in the report, not dropped.
func TestSummaryCountsRepeats(t *testing.T) {
	ds := []Denial{
		{Process: "go", PID: 9, Operation: "file-write-data", Target: "/Users/me/x", Count: 1},
		{Process: "go", PID: 9, Operation: "file-write-data", Target: "/Users/me/x", Count: 12, Repeats: true},
		{Process: "cat", PID: 10, Operation: "file-read-data", Target: "/Users/me/y", Count: 1},
	}
	s := Summarize(ds)
	if !strings.Contains(s.Text, "  file-write-data /Users/me/x (go, 13 times)\n") || !strings.Contains(s.Text, "  file-read-data /Users/me/y (cat)\n") {
		t.Errorf("report:\n%s", s.Text)
	}
	// A duplicates line alone (its first report went to an earlier command) is reported.
	if s := Summarize(ds[1:2]); !strings.Contains(s.Text, "file-write-data /Users/me/x (go, 12 times)") {
		t.Errorf("report of repeats alone:\n%s", s.Text)
	}
}

// session starts a process tree as a session's runner leaves it: a leader in a session of its
// own (the runner), and a process in a group of its own (an earlier command's server, left
// running). They are killed at the end.
func startSession(t *testing.T) (leader, earlier int) {
	t.Helper()
	// The leader starts the earlier command's server in a group of its own, prints its PID
	// and waits.
	cmd := exec.Command("bash", "-c", `set -m; sleep 60 & echo $!; exec sleep 60`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Process.Kill(); cmd.Wait() })
	var b [32]byte
	n, _ := out.Read(b[:])
	var pid int
	for _, c := range strings.TrimSpace(string(b[:n])) {
		pid = pid*10 + int(c-'0')
	}
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL); syscall.Kill(pid, syscall.SIGKILL) })
	return cmd.Process.Pid, pid
}

// A denial made by a process an earlier command left running is marked as such in the next
// command's report; the command's own are not. A report sandboxd wrote without the marker is
// the session's when its process is in the runner's session, and no one's otherwise.
func TestWindowAttributesDenialsToCommands(t *testing.T) {
	leader, earlier := startSession(t)
	if g, ok := (hostProcs{}).group(earlier); !ok || g == leader {
		t.Fatalf("the earlier command's process %d is in group %d (%v); the test needs a group of its own", earlier, g, ok)
	}
	s := newStandIn(t, "")
	s.f.procs = hostProcs{}
	ctx := context.Background()
	w, err := s.f.BeginFor(ctx, testMarker, leader)
	if err != nil {
		t.Fatal(err)
	}
	// The command itself: its processes start after Begin, in a group of their own.
	now := exec.Command("sleep", "60")
	now.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := now.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { now.Process.Kill(); now.Wait() }()
	line := func(pid int, target string) []byte {
		b, _ := json.Marshal(map[string]any{"eventType": "logEvent", "processImagePath": "/kernel", "processID": 0,
			"eventMessage": "Sandbox: node(" + strconv.Itoa(pid) + ") deny(1) file-read-data " + target + "\n" + testMarker})
		return append(b, '\n')
	}
	s.write(line(earlier, "/Users/me/from-the-server"))
	s.write(line(now.Process.Pid, "/Users/me/from-the-command"))
	// sandboxd's reports: one of the session's server (unmarked), one of a process of
	// another session (this test's own process), and one from an impostor.
	s.write(sandboxdLine(SandboxdPath, 180, "Sandbox: node("+strconv.Itoa(earlier)+") deny(1) mach-lookup com.apple.cfprefsd.daemon"))
	s.write(sandboxdLine(SandboxdPath, 180, "Sandbox: go("+strconv.Itoa(syscall.Getpid())+") deny(1) mach-lookup com.apple.other"))
	s.write(sandboxdLine("/usr/bin/logger", 181, "Sandbox: node("+strconv.Itoa(earlier)+") deny(1) mach-lookup com.apple.invented"))
	time.Sleep(50 * time.Millisecond) // sandboxd's lines come asynchronously, before the sentinel here
	ds, err := w.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Denial{}
	for _, d := range ds {
		got[d.Target] = d
	}
	if d, ok := got["/Users/me/from-the-server"]; !ok || !d.Earlier {
		t.Errorf("the earlier command's denial: %+v (present %v), want marked Earlier", d, ok)
	}
	if d, ok := got["/Users/me/from-the-command"]; !ok || d.Earlier {
		t.Errorf("the command's own denial: %+v (present %v), want not Earlier", d, ok)
	}
	if d, ok := got["com.apple.cfprefsd.daemon"]; !ok || d.From != FromSandboxd || !d.Earlier {
		t.Errorf("sandboxd's report of the session's process: %+v (present %v)", d, ok)
	}
	for _, never := range []string{"com.apple.other", "com.apple.invented"} {
		if _, ok := got[never]; ok {
			t.Errorf("%s was taken for the session's", never)
		}
	}
	sum := Summarize(ds)
	if !strings.Contains(sum.Text, "file-read-data /Users/me/from-the-server (node, from an earlier command)") {
		t.Errorf("report:\n%s", sum.Text)
	}
}

// The provider is the way a session reaches its denials: a report per command, and a stream
// that StopFollowing ends.
func TestProviderReportsAndStops(t *testing.T) {
	s := newStandIn(t, "")
	pr := &Provider{}
	pr.useFollower(s.f)
	var _ sandbox.DenialReporter = pr
	rep, err := pr.FollowDenials(context.Background(), testMarker, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.deny(testMarker, "network-outbound", "93.184.216.34:443")
	s.deny(testMarker, "file-read-data", "/Users/me/.ssh/id_ed25519")
	got := rep.Close(sandbox.DenialRun{UserHome: "/Users/me", Failed: true})
	if len(got.Egress) != 1 || got.Egress[0].Host != "93.184.216.34" || got.Egress[0].Port != 443 || got.Egress[0].Reason != DirectConnectionReason {
		t.Errorf("egress %+v", got.Egress)
	}
	if len(got.Listed) != 2 || got.Listed[1] != "file-read-data /Users/me/.ssh/id_ed25519 (cat)" {
		t.Errorf("listed %q", got.Listed)
	}
	if !strings.Contains(got.Text, "file-read-data /Users/me/.ssh/id_ed25519 (cat)") || strings.Count(string(got.Violations), "\n") != 2 {
		t.Errorf("text %q, violations %q", got.Text, got.Violations)
	}
	pr.StopFollowing()
	if cur := s.f.current(); cur != nil {
		t.Error("StopFollowing left the log stream running")
	}
}

// A refusal both the kernel and sandboxd report is one denial, not two, whichever comes
// first; sandboxd's alone, or the kernel's alone, counts once.
func TestKernelAndSandboxdReportsCountOnce(t *testing.T) {
	s := newStandIn(t, "")
	ctx := context.Background()
	w, err := s.f.Begin(ctx, testMarker)
	if err != nil {
		t.Fatal(err)
	}
	kernel := func(pid int, op, target string) []byte {
		b, _ := json.Marshal(map[string]any{"eventType": "logEvent", "processImagePath": "/kernel", "processID": 0,
			"eventMessage": "Sandbox: gh(" + strconv.Itoa(pid) + ") deny(1) " + op + " " + target + "\n" + testMarker})
		return append(b, '\n')
	}
	s.write(kernel(7, "mach-lookup", "com.apple.trustd.agent"))
	s.write(sandboxdLine(SandboxdPath, 180, "Sandbox: gh(7) deny(1) mach-lookup com.apple.trustd.agent\n"+testMarker))
	s.write(sandboxdLine(SandboxdPath, 180, "Sandbox: gh(7) deny(1) mach-lookup com.apple.SecurityServer\n"+testMarker))
	s.write(kernel(7, "mach-lookup", "com.apple.SecurityServer"))
	s.write(sandboxdLine(SandboxdPath, 180, "Sandbox: gh(7) deny(1) mach-lookup com.apple.cfprefsd.daemon\n"+testMarker))
	ds, err := w.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := targets(ds); strings.Join(got, " ") != "com.apple.trustd.agent com.apple.SecurityServer com.apple.cfprefsd.daemon" {
		t.Errorf("denials %q, want each once", got)
	}
	// The kernel's repeat of its own report is another refusal, counted.
	w, _ = s.f.Begin(ctx, testMarker)
	s.write(kernel(8, "file-read-data", "/Users/me/x"))
	s.write(kernel(8, "file-read-data", "/Users/me/x"))
	if ds, _ := w.End(ctx); len(ds) != 2 {
		t.Errorf("the kernel's two reports gave %d denials", len(ds))
	}
}

// sandboxd writes its reports after the kernel's, and one may reach the log after the
// command's sentinel: it is not lost but said with the session's next command, as an
// earlier command's, unless it is the other half of a refusal the kernel already reported.
func TestSandboxdReportAfterTheSentinelComesWithTheNextCommand(t *testing.T) {
	s := newStandIn(t, "")
	ctx := context.Background()
	w, err := s.f.Begin(ctx, testMarker)
	if err != nil {
		t.Fatal(err)
	}
	s.write(kernelLine(testMarker, "gh", "mach-lookup", "com.apple.trustd.agent"))
	if ds, err := w.End(ctx); err != nil || len(ds) != 1 {
		t.Fatalf("first command: %v %v", targets(ds), err)
	}
	// After the sentinel: sandboxd's half of the kernel's refusal, and a refusal only
	// sandboxd reported.
	s.write(sandboxdLine(SandboxdPath, 180, "Sandbox: gh(4242) deny(1) mach-lookup com.apple.trustd.agent\n"+testMarker))
	s.write(sandboxdLine(SandboxdPath, 180, "Sandbox: gh(4242) deny(1) mach-lookup com.apple.late\n"+testMarker))
	time.Sleep(100 * time.Millisecond) // the stream reads them while no command runs
	w, err = s.f.Begin(ctx, testMarker)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := w.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := targets(ds); strings.Join(got, " ") != "com.apple.late" {
		t.Fatalf("the next command's denials %q, want only sandboxd's late report", got)
	}
	if !ds[0].Earlier || ds[0].From != FromSandboxd {
		t.Errorf("the late report %+v, want it marked as an earlier command's", ds[0])
	}
	// Said once: the command after that has none.
	w, _ = s.f.Begin(ctx, testMarker)
	if ds, _ := w.End(ctx); len(ds) != 0 {
		t.Errorf("the late report was said again: %q", targets(ds))
	}
}
