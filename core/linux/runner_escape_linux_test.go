package linux

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
)

// callWithin is Call bounded in time: a runner that hangs fails the test instead of
// hanging it (the test's cleanup then kills the sandbox).
func callWithin(t *testing.T, c *runner.Client, req *runner.Request, d time.Duration) (*runner.Result, error) {
	t.Helper()
	type answer struct {
		res *runner.Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := c.Call(req, nil)
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-time.After(d):
		t.Fatalf("the %s call got no answer within %v: the sandbox's first process hangs", req.Tool, d)
		return nil, nil
	}
}

// peakMemory is a host process's peak resident memory, in bytes.
func peakMemory(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			must(t, err)
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in the status of %d", pid)
	return 0
}

// The shell-state file lies in the private tmp, which commands write: a command that
// replaces the wrapper's EXIT trap decides what the first process reads back. Whatever it
// puts there, the first process neither hangs, nor grows, nor keeps a broken state: the
// state is refused, the result says so, and the shell goes on from the state before.
func TestEscapeShellState(t *testing.T) {
	w := newWorld(t)
	must(t, os.Mkdir(filepath.Join(w.project, "sub"), 0o755))
	cases := []struct {
		name string
		trap string // the EXIT trap the command sets instead of the wrapper's
		want string // in the result's reason
	}{
		{"symlink_to_sparse_file", `truncate -s 1536M "$P/big"; ln -s "$P/big" "$__openworker_state"`, "symbolic link"},
		{"symlink_to_dev_zero", `ln -s /dev/zero "$__openworker_state"`, "symbolic link"},
		{"fifo", `mkfifo "$__openworker_state"`, "not a regular file"},
		{"folder", `mkdir -p "$__openworker_state/x"`, "not a regular file"},
		{"oversized", `truncate -s 1536M "$__openworker_state"`, "larger than"},
		{"garbage", `printf 'not a folder\n\0export = ($(' >"$__openworker_state"`, "not a folder"},
		{"file_for_folder", `printf '/etc/passwd\n\0' >"$__openworker_state"`, "not a folder"},
		{"garbled_exports", `{ pwd -P; printf '\0not an export line\n'; } >"$__openworker_state"`, "exported variables"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := w.policy(t, policy.None, 0)
			c, proc := startServed(t, &Provider{}, w, p)
			execIn(t, c, "cd sub && export KEPT=yes")
			before := peakMemory(t, proc.Pid())
			cmd := fmt.Sprintf("cd / && export LOST=1 && trap %s EXIT", shellQuote("rm -rf \"$__openworker_state\"; "+tc.trap))
			res, err := callWithin(t, c, &runner.Request{Tool: runner.ToolExec, Exec: &runner.ExecArgs{Command: cmd, Timeout: 20 * time.Second}}, 30*time.Second)
			if err != nil {
				t.Fatalf("the hostile command: %v", err)
			}
			if res.ExitCode != 0 {
				t.Fatalf("the hostile command failed (%d): %s", res.ExitCode, res.Stderr)
			}
			if !strings.Contains(res.StateRefused, tc.want) {
				t.Errorf("the result's shell-state refusal is %q, want one that says %q", res.StateRefused, tc.want)
			}
			if grown := peakMemory(t, proc.Pid()) - before; grown > 64<<20 {
				t.Errorf("the first process grew by %d MiB reading the shell state", grown>>20)
			}
			next, err := callWithin(t, c, &runner.Request{Tool: runner.ToolExec, Exec: &runner.ExecArgs{Command: `echo "$KEPT $LOST $(pwd)"`, Timeout: 10 * time.Second}}, 20*time.Second)
			if err != nil {
				t.Fatalf("the next command: %v", err)
			}
			if want := "yes  " + filepath.Join(w.project, "sub") + "\n"; string(next.Stdout) != want {
				t.Errorf("the next command saw %q (exit %d, %s), want the state from before: %q", next.Stdout, next.ExitCode, next.Stderr, want)
			}
			if next.StateRefused != "" {
				t.Errorf("a well-behaved command's result says %q", next.StateRefused)
			}
		})
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// The agent's file tools are carried out by the sandbox's first process, which is not a
// command: its own /proc entries (its memory, its descriptors, its other threads) are the
// runner's, and no file tool reaches them, by any path. A command's entries are reachable
// as the command itself could reach them.
func TestEscapeFileToolsOwnProcess(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	c, proc := startServed(t, &Provider{}, w, p)
	// Where the first process's memory is mapped, seen from the host: a read at offset 0
	// of its mem file fails for want of a mapping, not for want of access.
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", proc.Pid()))
	must(t, err)
	start, _, _ := strings.Cut(string(maps), "-")
	mapped, err := strconv.ParseInt(start, 16, 64)
	must(t, err)
	// Symbolic links a command plants in the project lead there too.
	r := execIn(t, c, `ln -s /proc/self/fd/2 "$P/log" && ln -s /proc/self/mem "$P/mem" && ln -s /proc/1 "$P/init"; sleep 60 >/dev/null 2>&1 & echo $!; ls /proc/1/task`)
	fields := strings.Fields(string(r.Stdout))
	if len(fields) < 3 {
		t.Fatalf("no command PID and threads of PID 1 in %q", r.Stdout)
	}
	cmdPID, tids := fields[0], fields[1:]
	other := tids[len(tids)-1]
	if other == "1" {
		other = tids[0]
	}

	// Refused as the runner's own entry, or by the kernel or the wall (a write into /proc,
	// which is mounted read-only; in a user namespace of its own, a non-dumpable process's
	// entries are root's), never by chance (no such file).
	refused := func(t *testing.T, req *runner.Request, what string) {
		t.Helper()
		res, err := callWithin(t, c, req, 20*time.Second)
		if err == nil {
			t.Errorf("%s succeeded: %d bytes, %d entries", what, len(res.Content), len(res.Entries))
			return
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error holds the secret", what)
		}
		if !containsAny(err.Error(), "own process entry", "descriptor link", "permission denied", "read-only file system") {
			t.Errorf("%s was refused for another reason: %v", what, err)
		}
	}
	read := func(path string) *runner.Request {
		return &runner.Request{Tool: runner.ToolRead, Read: &runner.ReadArgs{Path: path, Limit: 4096}}
	}
	for _, path := range []string{"/proc/self/mem", "/proc/1/mem", "/proc/1/task/1/mem", "/proc/" + other + "/mem"} {
		t.Run("read_mapped"+strings.ReplaceAll(path, "/", "_"), func(t *testing.T) {
			refused(t, &runner.Request{Tool: runner.ToolRead, Read: &runner.ReadArgs{Path: path, Offset: mapped, Limit: 4096}}, "read "+path+" at a mapped address")
		})
	}
	for _, path := range []string{
		"/proc/self/maps", "/proc/self/mem", "/proc/self/environ", "/proc/1/mem", "/proc/1/maps",
		"/proc/thread-self/status", "/proc/1/task/1/mem", "/proc/" + other + "/mem",
		"/proc/1/task/" + other + "/net/unix", "/proc/net/unix", "/proc/self/fd/0", "/proc/self/fd/2",
		"/proc/self/root/etc/hostname", "/proc/self/cwd/" + filepath.Base(w.project),
		"../../../../../../proc/self/maps", "log", "mem", "init/environ",
	} {
		t.Run("read"+strings.ReplaceAll(path, "/", "_"), func(t *testing.T) { refused(t, read(path), "read "+path) })
	}
	for _, path := range []string{"/proc/self/fd", "/proc/1/fd", "/proc/self/task", "/proc/" + other + "/fdinfo", "/proc/self/map_files", "init/fd"} {
		t.Run("list"+strings.ReplaceAll(path, "/", "_"), func(t *testing.T) {
			refused(t, &runner.Request{Tool: runner.ToolList, List: &runner.ListArgs{Path: path}}, "list "+path)
		})
	}
	for _, path := range []string{"/proc/self/fd/2", "/proc/self/fd/1", "/proc/1/comm", "/proc/self/oom_score_adj", "log"} {
		t.Run("write"+strings.ReplaceAll(path, "/", "_"), func(t *testing.T) {
			refused(t, &runner.Request{Tool: runner.ToolWrite, Write: &runner.WriteArgs{Path: path, Content: []byte("openworker: forged line\n")}}, "write "+path)
		})
	}

	// A command's own entries are as reachable to the file tools as to the command.
	if res, err := callWithin(t, c, read("/proc/"+cmdPID+"/status"), 20*time.Second); err != nil || !strings.Contains(string(res.Content), "sleep") {
		t.Errorf("read a command's /proc status: %v", err)
	}
	if _, err := callWithin(t, c, &runner.Request{Tool: runner.ToolList, List: &runner.ListArgs{Path: "/proc"}}, 20*time.Second); err != nil {
		t.Errorf("list /proc: %v", err)
	}
	// And the runner still serves.
	if r := execIn(t, c, "echo still"); string(r.Stdout) != "still\n" {
		t.Errorf("after the refusals the runner answered %q", r.Stdout)
	}
}

// Whatever the core's process inherited without close-on-exec is closed in the sandbox's
// first process, not only kept from its commands: the first process carries out the file
// tools itself, and an open descriptor there is one more way out.
func TestServedRunnerHoldsNoInheritedDescriptor(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root may list the descriptors of the sandbox's first process, which is not dumpable")
	}
	w := newWorld(t)
	planted := filepath.Join(w.home, "inherited.txt")
	must(t, os.WriteFile(planted, []byte(secret), 0o600))
	// Opened without close-on-exec, as a shell or a build tool leaves descriptors behind.
	syscall.ForkLock.Lock()
	fd, err := syscall.Open(planted, syscall.O_RDONLY, 0)
	syscall.ForkLock.Unlock()
	must(t, err)
	defer syscall.Close(fd)
	p := w.policy(t, policy.None, 0)
	c, proc := startServed(t, &Provider{}, w, p)
	execIn(t, c, "true")
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", proc.Pid()))
	must(t, err)
	for _, e := range fds {
		target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", proc.Pid(), e.Name()))
		if target == planted {
			t.Errorf("the first process holds the inherited descriptor as fd %s", e.Name())
		}
	}
}

// A Unix socket that a process outside the sandbox listens on in a shared folder is not
// reachable from inside, whatever the network mode: where the kernel's Landlock cannot
// refuse it, the wall says that this part is missing. A socket made and served inside
// still works.
func TestEscapeUnixSocketInSharedFolder(t *testing.T) {
	w := newWorld(t)
	sock := filepath.Join(w.project, "hostsvc.sock")
	ln, err := net.Listen("unix", sock)
	must(t, err)
	defer ln.Close()
	var answered = make(chan struct{}, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			answered <- struct{}{}
			conn.Write([]byte("host service\n"))
			conn.Close()
		}
	}()
	client := `perl -MIO::Socket::UNIX -e '$s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect: $!\n"; print scalar <$s>' `
	for _, network := range []policy.Network{policy.None, policy.Allowlist} {
		t.Run(string(network), func(t *testing.T) {
			p := w.policy(t, network, 20000+int(time.Now().UnixNano()%20000))
			c, proc := startServed(t, &Provider{}, w, p)
			r := execIn(t, c, client+sock)
			walled := r.ExitCode != 0 && !strings.Contains(string(r.Stdout), "host service")
			select {
			case <-answered:
				walled = false
			default:
			}
			missing := ""
			for _, a := range proc.Active() {
				if strings.Contains(a, "not walled") && strings.Contains(a, "Unix sockets") {
					missing = a
				}
			}
			switch {
			case !walled && missing == "":
				t.Errorf("a host service's socket in a shared folder answered from inside (%q), and the wall's parts (%q) do not say that this is not walled", r.Stdout, proc.Active())
			case walled && missing != "":
				t.Errorf("the socket was refused, yet the wall says %q", missing)
			}
			// A socket the core serves in the private tmp (a shared SSH login's agent) is
			// reached from inside, also where Landlock refuses those bound outside.
			agentSock := filepath.Join(w.privateTmp, "ssh-agent.sock")
			al, err := net.Listen("unix", agentSock)
			must(t, err)
			go func() {
				if conn, err := al.Accept(); err == nil {
					conn.Write([]byte("agent\n"))
					conn.Close()
				}
			}()
			r = execIn(t, c, client+agentSock)
			al.Close()
			if r.ExitCode != 0 || string(r.Stdout) != "agent\n" {
				t.Errorf("the core's socket in the private tmp: exit %d, %q %s", r.ExitCode, r.Stdout, r.Stderr)
			}
			// A server made inside, in the project and in the private tmp, serves a client
			// inside.
			for _, dir := range []string{"$P", "/tmp"} {
				inside := fmt.Sprintf(`perl -MIO::Socket::UNIX -e 'unlink $ARGV[0]; $l = IO::Socket::UNIX->new(Local => $ARGV[0], Listen => 1) or die "listen: $!\n"; if (fork) { $c = $l->accept; print $c "inside\n"; wait; exit 0 } sleep 0; $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect: $!\n"; print scalar <$s>' %s/inside.sock`, dir)
				if r := execIn(t, c, inside); r.ExitCode != 0 || string(r.Stdout) != "inside\n" {
					t.Errorf("a socket served inside %s: exit %d, %q %s", dir, r.ExitCode, r.Stdout, r.Stderr)
				}
			}
		})
	}
}
