package runner

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

func startServer(t *testing.T, dir string) *Client {
	t.Helper()
	t.Chdir(dir)
	t.Setenv("TMPDIR", t.TempDir())
	a, b := net.Pipe()
	s := NewServer(Config{Dir: dir, Env: os.Environ()})
	done := make(chan error, 1)
	go func() { done <- s.Serve(b) }()
	c := NewClient(a)
	t.Cleanup(func() {
		c.Close()
		b.Close()
		<-done
	})
	return c
}

func exec1(t *testing.T, c *Client, cmd string) *Result {
	t.Helper()
	r, err := c.Call(&Request{Tool: ToolExec, Exec: &ExecArgs{Command: cmd}}, nil)
	if err != nil {
		t.Fatalf("exec %q: %v", cmd, err)
	}
	return r
}

func TestShellStateCarriesOver(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	c := startServer(t, dir)
	exec1(t, c, "cd sub && export GREETING='hello world' && unset HOME_TEST_VAR")
	r := exec1(t, c, `pwd; echo "$GREETING"`)
	want := filepath.Join(dir, "sub") + "\nhello world\n"
	if got := string(r.Stdout); got != want {
		t.Fatalf("second command saw %q, want %q", got, want)
	}
	// exit still records state
	exec1(t, c, "cd .. ; export N=2; exit 3")
	r = exec1(t, c, `echo "$N"; pwd`)
	if got := string(r.Stdout); got != "2\n"+dir+"\n" {
		t.Fatalf("after exit 3: %q", got)
	}
	// the wrapper's own names never reach the command's environment
	r = exec1(t, c, "env")
	if strings.Contains(string(r.Stdout), "__openworker") {
		t.Fatalf("wrapper variables leaked into env:\n%s", r.Stdout)
	}
}

func TestExitStatusAndOutputBound(t *testing.T) {
	c := startServer(t, t.TempDir())
	r := exec1(t, c, "echo out; echo err >&2; exit 7")
	if r.ExitCode != 7 || string(r.Stdout) != "out\n" || string(r.Stderr) != "err\n" {
		t.Fatalf("got exit %d stdout %q stderr %q", r.ExitCode, r.Stdout, r.Stderr)
	}
	res, err := c.Call(&Request{Tool: ToolExec, Exec: &ExecArgs{Command: "head -c 10000 /dev/zero", MaxOutput: 1000}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stdout) != 1000 || res.StdoutTruncated != 9000 {
		t.Fatalf("kept %d, dropped %d; want 1000 and 9000", len(res.Stdout), res.StdoutTruncated)
	}
}

func TestStreaming(t *testing.T) {
	dir := t.TempDir()
	c := startServer(t, dir)
	// The command writes its error line only once the first line has reached the caller:
	// output and errors are two pipes with no order between them, and a pause in the script
	// would race the runner's readers. It also shows the first chunk came while the command ran.
	got := filepath.Join(dir, "got-a")
	var chunks []string
	r, err := c.Call(&Request{Tool: ToolExec, Exec: &ExecArgs{
		Command: "echo a; while [ ! -e '" + got + "' ]; do sleep 0.01; done; echo b >&2",
		Stream:  true, Timeout: 20 * time.Second}},
		func(s string, d []byte) {
			chunks = append(chunks, s+":"+string(d))
			if s == "stdout" {
				if err := os.WriteFile(got, nil, 0o600); err != nil {
					t.Error(err)
				}
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(chunks, "|") != "stdout:a\n|stderr:b\n" || r.ExitCode != 0 {
		t.Fatalf("chunks %q exit %d", chunks, r.ExitCode)
	}
}

func TestTimeoutKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	c := startServer(t, dir)
	marker, pidFile := filepath.Join(dir, "survived"), filepath.Join(dir, "child.pid")
	start := time.Now()
	res, err := c.Call(&Request{Tool: ToolExec, Exec: &ExecArgs{
		Command: "sh -c 'echo $$ > " + pidFile + "; sleep 1; touch " + marker + "' & while [ ! -s " + pidFile + " ]; do :; done; sleep 30",
		Timeout: 200 * time.Millisecond}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || time.Since(start) > 5*time.Second {
		t.Fatalf("timed out %v after %v", res.TimedOut, time.Since(start))
	}
	b, err := os.ReadFile(pidFile)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || perr != nil {
		t.Fatalf("the child's PID: %v %v %q", err, perr, b)
	}
	// The child went with its group: once it is gone it can write nothing more.
	tstest.WaitFor(t, 5*time.Second, func() error {
		if alive(pid) {
			return fmt.Errorf("the timed-out command's child %d still runs", pid)
		}
		return nil
	})
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a child of the timed-out command survived and wrote its file")
	}
}

// alive says whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil && runtime.GOOS != "linux"
	}
	i := strings.LastIndex(string(b), ") ")
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func TestFileTools(t *testing.T) {
	dir := t.TempDir()
	c := startServer(t, dir)
	if _, err := c.Call(&Request{Tool: ToolWrite, Write: &WriteArgs{Path: "a/b/c.txt", Content: []byte("0123456789")}}, nil); err != nil {
		t.Fatal(err)
	}
	r, err := c.Call(&Request{Tool: ToolRead, Read: &ReadArgs{Path: filepath.Join(dir, "a/b/c.txt"), Offset: 2, Limit: 3}}, nil)
	if err != nil || string(r.Content) != "234" || r.Size != 10 {
		t.Fatalf("read: %v %q %d", err, r.Content, r.Size)
	}
	r, err = c.Call(&Request{Tool: ToolList, List: &ListArgs{Path: "a/b"}}, nil)
	if err != nil || len(r.Entries) != 1 || r.Entries[0].Name != "c.txt" || r.Entries[0].Size != 10 {
		t.Fatalf("list: %v %+v", err, r)
	}
	_, err = c.Call(&Request{Tool: ToolRead, Read: &ReadArgs{Path: "missing"}}, nil)
	if _, ok := err.(*ToolError); !ok {
		t.Fatalf("reading a missing file: %v, want a ToolError", err)
	}
}

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	home := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := startServer(t, dir)
	r, err := c.Call(&Request{Tool: ToolProbe, Probe: &ProbeArgs{
		Writable: []string{dir}, Home: home, Unreachable: []string{ln.Addr().String()}, Reachable: []string{ln.Addr().String()},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Without a wall: the folder is writable, but home can be listed and the canary answers.
	got := map[string]bool{}
	for _, ch := range r.Checks {
		got[ch.Name] = ch.OK
	}
	want := map[string]bool{"writable": true, "home hidden": false, "canary unreachable": false, "proxy reachable": true}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("check %s ok=%v, want %v (%+v)", k, got[k], v, r.Checks)
		}
	}
	if des, _ := os.ReadDir(dir); len(des) != 0 {
		t.Errorf("probe left %d files behind", len(des))
	}
	// The check failed (home can be listed): the runner carries out nothing after it, not
	// even a call the core sent before it read the check's answer.
	_, err = c.Call(&Request{Tool: ToolExec, Exec: &ExecArgs{Command: "touch ran"}}, nil)
	var te *ToolError
	if !errors.As(err, &te) || !strings.Contains(te.Msg, "the wall check failed (home hidden") {
		t.Errorf("exec after a failed wall check: %v, want a refusal naming the check", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran after the wall check failed")
	}
}

// The shell-state file is written by the command's shell, which the command controls: one
// that is not what the wrapper writes is refused, said so, and the state before is kept.
func TestShellStateFileIsUntrusted(t *testing.T) {
	for _, tc := range []struct{ name, trap, want string }{
		{"symlink", `ln -s /dev/zero "$__openworker_state"`, "symbolic link"},
		{"fifo", `mkfifo "$__openworker_state"`, "not a regular file"},
		{"garbage", `printf 'relative\n\0' >"$__openworker_state"`, "not a folder"},
		{"exports", `{ pwd -P; printf '\0not an export line\n'; } >"$__openworker_state"`, "exported variables"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := filepath.EvalSymlinks(t.TempDir()) // as pwd -P says it
			os.Mkdir(filepath.Join(dir, "sub"), 0o755)
			c := startServer(t, dir)
			exec1(t, c, "cd sub && export KEPT=yes")
			done := make(chan *Result, 1)
			go func() {
				cmd := "cd / && export LOST=1 && trap '" + strings.ReplaceAll(tc.trap, "'", `'\''`) + "' EXIT"
				r, err := c.Call(&Request{Tool: ToolExec, Exec: &ExecArgs{Command: cmd}}, nil)
				if err != nil {
					r = &Result{StateRefused: "the call failed: " + err.Error()}
				}
				done <- r
			}()
			var r *Result
			select {
			case r = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the runner hangs on the shell-state file")
			}
			if !strings.Contains(r.StateRefused, tc.want) {
				t.Errorf("refusal %q, want it to say %q", r.StateRefused, tc.want)
			}
			if r := exec1(t, c, `echo "$KEPT $LOST $(pwd)"`); string(r.Stdout) != "yes  "+filepath.Join(dir, "sub")+"\n" || r.StateRefused != "" {
				t.Errorf("the next command saw %q (%q)", r.Stdout, r.StateRefused)
			}
		})
	}
}

// A file passes the kernel-settings probe only when it does not open for writing and lies on
// a read-only mount; none of these does (the host's /proc is writable by root).
func TestProbeUnwritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "setting")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, dir)
	missing := filepath.Join(dir, "missing")
	r, err := c.Call(&Request{Tool: ToolProbe, Probe: &ProbeArgs{Unwritable: []string{file, dir, missing}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		ok     bool
		detail string
	}{{false, "opens for writing"}, {false, "but its mount is writable"}, {true, "absent"}}
	if len(r.Checks) != len(want) {
		t.Fatalf("%d checks, want %d: %+v", len(r.Checks), len(want), r.Checks)
	}
	for i, w := range want {
		ch := r.Checks[i]
		if ch.Name != "kernel settings read-only" || ch.OK != w.ok || !strings.Contains(ch.Detail, w.detail) {
			t.Errorf("check %d: %+v, want ok=%v and %q", i, ch, w.ok, w.detail)
		}
	}
}

// Signals and standard input reach a running command through a connection that a second
// goroutine reads (the server's way where it cannot poll a command's exit).
func TestSignalAndStdinWhileACommandRuns(t *testing.T) {
	dir := t.TempDir()
	c := startServer(t, dir)
	req := &Request{Tool: ToolExec, Exec: &ExecArgs{Command: "trap 'echo got-int; exit 5' INT; read line; echo \"read $line\"; while :; do sleep 0.05; done", StdinStream: true, Stream: true}}
	if err := c.Send(req); err != nil {
		t.Fatal(err)
	}
	if err := c.Stdin(req, []byte("hello\n"), true); err != nil {
		t.Fatal(err)
	}
	signalled := false
	res, err := c.Receive(req, func(stream string, data []byte) {
		if !signalled && strings.Contains(string(data), "read hello") {
			signalled = true
			if err := c.Signal(req, syscall.SIGINT); err != nil {
				t.Error(err)
			}
		}
	}, nil)
	if err != nil || res.ExitCode != 5 || !strings.Contains(string(res.Stdout), "read hello\ngot-int\n") {
		t.Fatalf("exit %d stdout %q: %v", res.ExitCode, res.Stdout, err)
	}
}

// What a command leaves running in its process group (`server &`) ends with the runner:
// SIGTERM first, so its traps run, then SIGKILL. Here no PID namespace helps: the runner is
// this test's own process, as on macOS.
func TestRunnerEndsTheGroupsItStarted(t *testing.T) {
	dir := t.TempDir()
	termed := filepath.Join(dir, "termed")
	a, b := net.Pipe()
	t.Setenv("TMPDIR", t.TempDir())
	s := NewServer(Config{Dir: dir, Env: os.Environ()})
	done := make(chan error, 1)
	go func() { done <- s.Serve(b) }()
	c := NewClient(a)
	// Each background shell says when its trap is set, and the command waits for that: a
	// SIGTERM before the trap would find the default action.
	r, err := c.Call(&Request{Tool: ToolExec, Exec: &ExecArgs{Command: `sleep 300 >/dev/null 2>&1 & echo $!
sh -c 'trap "echo term > ` + termed + `; exit 0" TERM; touch trap1; while :; do sleep 0.05; done' >/dev/null 2>&1 & echo $!
sh -c 'trap "" TERM; touch trap2; while :; do sleep 0.05; done' >/dev/null 2>&1 & echo $!
while [ ! -e trap1 ] || [ ! -e trap2 ]; do sleep 0.01; done`}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(r.Stdout)) {
		pid, _ := strconv.Atoi(f)
		pids = append(pids, pid)
	}
	if len(pids) != 3 {
		t.Fatalf("background pids: %q", r.Stdout)
	}
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("background process %d is not running after its command", pid)
		}
	}
	c.Close()
	b.Close()
	<-done
	// SIGKILL is sent when Serve returns; the kernel then takes a moment.
	tstest.WaitFor(t, 5*time.Second, func() error {
		for _, pid := range pids {
			if alive(pid) {
				return fmt.Errorf("background process %d outlived the runner", pid)
			}
		}
		return nil
	})
	if _, err := os.Stat(termed); err != nil {
		t.Fatal("the background process was not sent SIGTERM before SIGKILL: its trap did not run")
	}
}

// A command of plain words that names a program (`git status`, `go test ./...`, `true`)
// changes nothing a shell keeps: it is started directly, without a shell around it, with the
// shell's working folder and exported variables. What a shell would read differently (a
// builtin, a keyword, an assignment, quotes, expansions, operators, a program not in PATH)
// still goes through the shell, with the shell's behaviour.
func TestSimpleCommandsRunWithoutAShell(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.Mkdir(bin, 0o755)
	// parent prints the name of the process that started it, and its arguments.
	os.WriteFile(filepath.Join(bin, "killself"), []byte("#!/bin/sh\nkill -9 $$\n"), 0o755)
	os.WriteFile(filepath.Join(bin, "parent"), []byte("#!/bin/sh\nprintf '%s|' \"$(cat /proc/$PPID/comm 2>/dev/null || ps -o comm= -p $PPID)\" \"$@\"; echo\n"), 0o755)
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	c := startServer(t, dir)
	exec1(t, c, "cd sub && export FROM_BEFORE=kept")
	for _, tc := range []struct {
		cmd, want string
		shell     bool
	}{
		{"parent", "|", false},
		{"parent a-b ./c/d e=f 1,2 x:y +z @w %v", "|a-b|./c/d|e=f|1,2|x:y|+z|@w|%v|", false},
		{"  parent\ttab  ", "|tab|", false},
		{bin + "/parent /abs", "|/abs|", false},
		{"parent 'quoted word'", "|quoted word|", true},
		{"parent $FROM_BEFORE", "|kept|", true},
		{"parent *.none", "|*.none|", true},
		{"parent ~", "|" + os.Getenv("HOME") + "|", true},
		{"X=1 parent", "|", true},
		{"parent; parent", "|\n|", true},
		{"parent # note", "|", true},
		{"parent {a,b}", "|{a,b}|", true},
		{"command parent", "|", true},
	} {
		r := exec1(t, c, tc.cmd)
		out := string(r.Stdout)
		name, rest, _ := strings.Cut(out, "|")
		if r.ExitCode != 0 || "|"+rest != tc.want+"\n" && !(tc.cmd == "parent; parent") {
			t.Errorf("%q: exit %d, printed %q, want the arguments %q", tc.cmd, r.ExitCode, out, tc.want)
			continue
		}
		if viaShell := name == "sh" || name == "dash" || name == "bash"; viaShell != tc.shell {
			t.Errorf("%q was started by %q: through a shell %v, want %v", tc.cmd, name, viaShell, tc.shell)
		}
	}
	// Started directly, a program still gets the shell's state: its folder and variables.
	r := exec1(t, c, "env")
	if !strings.Contains(string(r.Stdout), "\nFROM_BEFORE=kept\n") {
		t.Errorf("env did not see the exported variable: %q", r.Stdout)
	}
	if r := exec1(t, c, "realpath ."); strings.TrimSpace(string(r.Stdout)) != filepath.Join(dir, "sub") {
		t.Errorf("realpath . ran in %q, want the shell's folder", r.Stdout)
	}
	// The shell's state is not lost to a direct start: the next shell command still has it.
	if r := exec1(t, c, `pwd; echo "$FROM_BEFORE"`); string(r.Stdout) != filepath.Join(dir, "sub")+"\nkept\n" {
		t.Errorf("after direct starts the shell saw %q", r.Stdout)
	}
	// Statuses as a shell gives them: the program's own, a signal's 128+N, and a program
	// not in PATH the shell's 127 and its own words.
	if r := exec1(t, c, "false"); r.ExitCode != 1 {
		t.Errorf("false: exit %d", r.ExitCode)
	}
	if r := exec1(t, c, "killself"); r.ExitCode != 128+9 {
		t.Errorf("a program killed by SIGKILL: exit %d", r.ExitCode)
	}
	if r := exec1(t, c, "no-such-program-here"); r.ExitCode != 127 || !strings.Contains(string(r.Stderr), "not found") {
		t.Errorf("a missing program: exit %d, %q", r.ExitCode, r.Stderr)
	}
	// A file the kernel will not start (a script without #!) is run by the shell, as a
	// shell does.
	os.WriteFile(filepath.Join(dir, "sub", "noshebang"), []byte("echo from-script\n"), 0o755)
	if r := exec1(t, c, "./noshebang"); r.ExitCode != 0 || string(r.Stdout) != "from-script\n" {
		t.Errorf("a script without #!: exit %d, %q %q", r.ExitCode, r.Stdout, r.Stderr)
	}
	if r := exec1(t, c, "./not-there"); r.ExitCode != 127 {
		t.Errorf("a path to nothing: exit %d, %q", r.ExitCode, r.Stderr)
	}
}

// Which commands are plain words naming a program: everything a shell would read otherwise
// goes to the shell.
func TestPlainCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{"git status --porcelain", []string{"git", "status", "--porcelain"}},
		{"go test ./... -run=TestX -count=1", []string{"go", "test", "./...", "-run=TestX", "-count=1"}},
		{"true", []string{"true"}},
		{"false", []string{"false"}},
		{"./build.sh check", []string{"./build.sh", "check"}},
		{"", nil}, {"   ", nil},
		{"echo hi", nil}, {"printf x", nil}, {"pwd", nil}, {"cd /", nil}, {"export A=1", nil},
		{"exit 3", nil}, {"exec ls", nil}, {". ./env", nil}, {"source x", nil}, {"eval ls", nil},
		{"set -e", nil}, {"unset A", nil}, {"umask 077", nil}, {"ulimit -n 10", nil}, {"alias l=ls", nil},
		{"command ls", nil}, {"builtin cd", nil}, {"type ls", nil}, {"hash", nil}, {"test -f x", nil}, {"[ -f x ]", nil},
		{"time make", nil}, {"if", nil}, {"for", nil}, {"while", nil}, {"until", nil}, {"case", nil}, {"function", nil},
		{"!", nil}, {"{", nil}, {"[[", nil}, {"declare -x A", nil}, {"local a", nil}, {"read x", nil}, {"trap x EXIT", nil},
		{"wait", nil}, {"kill %1", nil}, {"jobs", nil}, {"fg", nil}, {"bg", nil}, {"shift", nil}, {"return", nil},
		{"A=1 make", nil}, {"make A=1", []string{"make", "A=1"}},
		{"ls *.go", nil}, {"ls ?", nil}, {"ls [ab]", nil}, {"ls ~", nil}, {"ls ~/x", nil}, {"ls {a,b}", nil},
		{"ls $HOME", nil}, {"ls `pwd`", nil}, {"ls 'a b'", nil}, {`ls "a"`, nil}, {`ls a\ b`, nil},
		{"ls; ls", nil}, {"ls && ls", nil}, {"ls | cat", nil}, {"ls > out", nil}, {"ls < in", nil}, {"ls &", nil},
		{"(ls)", nil}, {"ls # c", nil}, {"ls\nls", nil}, {"ls\rx", nil}, {"ls !x", nil}, {"ls ^x", nil},
		{"ls é", nil}, {"ls \x00", nil},
	} {
		got, ok := plainCommand(tc.cmd)
		if ok != (tc.want != nil) || strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") {
			t.Errorf("plainCommand(%q) = %q, %v; want %q", tc.cmd, got, ok, tc.want)
		}
	}
}
