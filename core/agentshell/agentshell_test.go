package agentshell

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/apitype"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/runner"
)

func TestParse(t *testing.T) {
	tmp := "/tmp/host"
	claudeScript := `source /home/me/.claude/shell-snapshots/snapshot-bash-1.sh 2>/dev/null || true && eval 'cd sub && ls' < /dev/null && pwd -P >| /tmp/host/claude-1a2b-cwd`
	geminiScript := func(pidsFile string) string {
		return "shopt -u promptvars nullglob extglob nocaseglob dotglob; _bgpids_file=" + pidsFile + "\n(\n  trap 'jobs -p > \"$_bgpids_file\"' EXIT\nnpm test &\n)\n__code=$?\nexit $__code"
	}
	geminiCarried := "shopt -u promptvars nullglob extglob nocaseglob dotglob; _bgpids_file=/tmp/host/gemini-shell-Ab12Cd/bgpids.tmp\n(\n  trap '" + pidsMarkerCommand + "' EXIT\nnpm test &\n)\n__code=$?\nexit $__code"
	tests := []struct {
		name, argv0 string
		args        []string
		shell       string
		want        Invocation
		err         bool
	}{
		{"gemini's bash -c", "/run/bin/bash", []string{"-c", geminiScript("/tmp/host/gemini-shell-Ab12Cd/bgpids.tmp")}, "",
			Invocation{Shell: "bash", Command: geminiCarried, PidsFile: "/tmp/host/gemini-shell-Ab12Cd/bgpids.tmp"}, false},
		{"gemini's, quoted", "/run/bin/bash", []string{"-c", geminiScript("'/tmp/host/gemini-shell-Ab12Cd/bgpids.tmp'")}, "",
			Invocation{Shell: "bash", Command: strings.Replace(geminiCarried, "=/tmp/host/gemini-shell-Ab12Cd/bgpids.tmp", "='/tmp/host/gemini-shell-Ab12Cd/bgpids.tmp'", 1),
				PidsFile: "/tmp/host/gemini-shell-Ab12Cd/bgpids.tmp"}, false},
		{"a bgpids file elsewhere is the script's own", "/run/bin/bash", []string{"-c", geminiScript("/etc/gemini-shell-Ab12Cd/bgpids.tmp")}, "",
			Invocation{Shell: "bash", Command: geminiScript("/etc/gemini-shell-Ab12Cd/bgpids.tmp")}, false},
		{"a file of another name is the script's own", "/run/bin/bash", []string{"-c", geminiScript("/tmp/host/gemini-shell-Ab12Cd/notes")}, "",
			Invocation{Shell: "bash", Command: geminiScript("/tmp/host/gemini-shell-Ab12Cd/notes")}, false},
		{"the wrapper not at the start is the command's own", "/run/bin/bash", []string{"-c", "true; " + geminiScript("/tmp/host/gemini-shell-Ab12Cd/bgpids.tmp")}, "",
			Invocation{Shell: "bash", Command: "true; " + geminiScript("/tmp/host/gemini-shell-Ab12Cd/bgpids.tmp")}, false},
		{"claude prefix", "/x/openworker-shell", []string{claudeScript}, "/bin/zsh",
			Invocation{Shell: "zsh", Command: strings.TrimSuffix(claudeScript, " && pwd -P >| /tmp/host/claude-1a2b-cwd") + " && " + cwdMarkerCommand, CwdFile: "/tmp/host/claude-1a2b-cwd"}, false},
		{"cwd file elsewhere is the script's own", "/x/openworker-shell", []string{"eval 'ls' && pwd -P >| /etc/claude-1a2b-cwd"}, "",
			Invocation{Shell: "bash", Command: "eval 'ls' && pwd -P >| /etc/claude-1a2b-cwd"}, false},
		{"a file of another name is the script's own", "/x/openworker-shell", []string{"eval 'ls' && pwd -P >| /tmp/host/notes"}, "",
			Invocation{Shell: "bash", Command: "eval 'ls' && pwd -P >| /tmp/host/notes"}, false},
		{"quoted cwd file", "/x/openworker-shell", []string{"eval 'ls' && pwd -P >| '/tmp/host/claude-00ff-cwd'"}, "",
			Invocation{Shell: "bash", Command: "eval 'ls' && " + cwdMarkerCommand, CwdFile: "/tmp/host/claude-00ff-cwd"}, false},
		{"as bash -c", "/x/bin/bash", []string{"-c", "echo hi"}, "", Invocation{Shell: "bash", Command: "echo hi"}, false},
		{"as bash -lc with $0 and args", "/x/bin/bash", []string{"-lc", "echo $1", "name", "one"}, "", Invocation{Shell: "bash", Command: "echo $1", Args: []string{"name", "one"}}, false},
		{"as sh --login -c", "/x/bin/sh", []string{"--login", "-c", "true"}, "", Invocation{Shell: "sh", Command: "true"}, false},
		{"no command", "/x/bin/bash", []string{"-l"}, "", Invocation{}, true},
		{"a script file", "/x/bin/bash", []string{"script.sh"}, "", Invocation{}, true},
		{"an option no host gives", "/x/bin/bash", []string{"-z", "-c", "x"}, "", Invocation{}, true},
		{"-c at the end", "/x/bin/bash", []string{"-c"}, "", Invocation{}, true},
		{"nothing", "/x/openworker-shell", nil, "", Invocation{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.argv0, tt.args, tt.shell, tmp, "/nowhere/openworker-shell")
			if (err != nil) != tt.err {
				t.Fatalf("err %v", err)
			}
			if tt.err {
				return
			}
			if got.Shell != tt.want.Shell || got.Command != tt.want.Command || got.CwdFile != tt.want.CwdFile || got.PidsFile != tt.want.PidsFile ||
				strings.Join(got.Args, "|") != strings.Join(tt.want.Args, "|") {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// The folder marker is taken off the very end of the error output, however the output is cut
// into pieces; a marker anywhere else, or one that names no folder, is the command's output.
func TestCwdTrailer(t *testing.T) {
	marker := cwdMarkerStart + "/w/sub" + markerEnd
	tests := []struct {
		name   string
		pieces []string
		out    string
		dir    string
	}{
		{"alone", []string{marker}, "", "/w/sub"},
		{"after output", []string{"err line\n", marker}, "err line\n", "/w/sub"},
		{"cut anywhere", []string{"e\x1erro", "r\n\x1eopenworker-", "cwd:/w/s", "ub\x1e"}, "e\x1error\n", "/w/sub"},
		{"a marker the command printed, then the real one", []string{cwdMarkerStart + "/etc" + markerEnd + "x\n", marker}, cwdMarkerStart + "/etc" + markerEnd + "x\n", "/w/sub"},
		{"no marker (the command failed)", []string{"boom\n"}, "boom\n", ""},
		{"a marker with output after it", []string{marker, "late\n"}, marker + "late\n", ""},
		{"a relative folder", []string{cwdMarkerStart + "sub" + markerEnd}, cwdMarkerStart + "sub" + markerEnd, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newCwdTrailer()
			var out bytes.Buffer
			for _, p := range tt.pieces {
				out.Write(tr.write([]byte(p)))
			}
			out.Write(tr.end())
			if out.String() != tt.out || tr.value != tt.dir || tr.found != (tt.dir != "") {
				t.Fatalf("out %q dir %q; want %q %q", out.String(), tr.value, tt.out, tt.dir)
			}
		})
	}
}

// The background jobs' marker carries process numbers only; the carried script prints it.
func TestPidsTrailer(t *testing.T) {
	for _, tt := range []struct {
		name, stream, out, pids string
		found                   bool
	}{
		{"jobs", "err\n" + pidsMarkerStart + "41\n43" + markerEnd, "err\n", "41\n43", true},
		{"none", pidsMarkerStart + markerEnd, "", "", true},
		{"not numbers", pidsMarkerStart + "41; rm -rf /" + markerEnd, pidsMarkerStart + "41; rm -rf /" + markerEnd, "", false},
		{"a folder's marker is not it", cwdMarkerStart + "/w" + markerEnd, cwdMarkerStart + "/w" + markerEnd, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := newPidsTrailer()
			out := append(tr.write([]byte(tt.stream)), tr.end()...)
			if string(out) != tt.out || tr.value != tt.pids || tr.found != tt.found {
				t.Fatalf("out %q pids %q %v", out, tr.value, tr.found)
			}
		})
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	out, err := exec.Command("bash", "-c", "(\n  trap '"+pidsMarkerCommand+"' EXIT\nsleep 1 >/dev/null 2>&1 & sleep 1 >/dev/null 2>&1 & echo hi\n)").CombinedOutput()
	tr := newPidsTrailer()
	if rest := string(append(tr.write(out), tr.end()...)); err != nil || rest != "hi\n" || len(strings.Fields(tr.value)) != 2 {
		t.Fatalf("%v: %q, pids %q", err, rest, tr.value)
	}
}

// Only OpenWorker's own MCP server, the program beside this one, with the server's options,
// as a plain list of words, is started outside.
func TestOwnMCPServer(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "openworker-shell")
	mcpPath := filepath.Join(dir, "openworker-mcp")
	other := filepath.Join(t.TempDir(), "openworker")
	for _, p := range []string{self, mcpPath, other} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		script string
		ok     bool
	}{
		{mcpPath + " mcp --agent-host", true},
		{"'" + mcpPath + "' 'mcp' '--agent-host' --rw /w --allow github.com", true},
		{mcpPath + " mcp --agent-host --network=open", true},
		{mcpPath + " mcp", false},                                 // not for an agent host
		{mcpPath + " mcp --agent-host --evil", false},             // an option the server has not
		{other + " mcp --agent-host", false},                      // another program of that name
		{"openworker-mcp mcp --agent-host", false},                // not by its path
		{mcpPath + " mcp --agent-host; cat ~/.ssh/id_rsa", false}, // more than words
		{"eval '" + mcpPath + " mcp --agent-host' < /dev/null", false},
		{mcpPath + " mcp --agent-host $(id)", false},
		{"\"" + mcpPath + "\" mcp --agent-host \"$HOME\"", false},
	}
	for _, tt := range tests {
		if got := ownMCPServer(tt.script, self); (got != nil) != tt.ok {
			t.Errorf("%q: %v", tt.script, got)
		}
	}
}

// The shell's own wire shapes read what the daemon sends, and send what it takes.
func TestWireShapesMatchTheAPI(t *testing.T) {
	res := &apitype.Result{Result: &runner.Result{ExitCode: 3, TimedOut: true}, Enforcement: "linux",
		Blocked: []apitype.Blocked{{Host: "x.example", Port: 443, Reason: "not on the allow list"}}, Interrupted: "SIGTERM", Error: "e"}
	b, _ := json.Marshal(apitype.StreamMessage{Result: res})
	var m streamMessage
	if err := json.Unmarshal(b, &m); err != nil || m.Result == nil || m.Result.ExitCode != 3 || !m.Result.TimedOut || m.Result.Interrupted != "SIGTERM" ||
		m.Result.Error != "e" || len(m.Result.Blocked) != 1 || m.Result.Blocked[0].Port != 443 || m.Result.Enforcement != "linux" {
		t.Fatalf("%s -> %+v", b, m.Result)
	}
	for _, v := range []any{
		execRequest{Argv: []string{"a"}, Dir: "/d", Stdin: true, Apart: true, Tag: "t", Env: []string{"A=b"}},
		signalRequest{Signal: "SIGTERM", Tag: "t"},
	} {
		b, _ := json.Marshal(v)
		var into any
		switch v.(type) {
		case execRequest:
			into = &apitype.ExecRequest{}
		default:
			into = &apitype.SignalRequest{}
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(into); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
	b, _ = json.Marshal(startRequest{Provider: "auto", Writable: []string{"/w"}, Agent: true, Hold: true, Owner: 7})
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var sr apitype.StartRequest
	if err := dec.Decode(&sr); err != nil || sr.Owner != 7 || !sr.Hold {
		t.Errorf("%s: %v %+v", b, err, sr)
	}
	b, _ = json.Marshal([]apitype.SessionInfo{{ID: "s1", Owner: 9}})
	var list []sessionInfo
	if err := json.Unmarshal(b, &list); err != nil || list[0].ID != "s1" || list[0].Owner != 9 {
		t.Errorf("%s: %v", b, err)
	}
}

// The shell finds the daemon where the CLI puts it.
func TestStateDirIsTheCLIs(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, xdg := range []string{"", filepath.Join(home, "state")} {
		t.Setenv("XDG_STATE_HOME", xdg)
		want, err := config.StateDir()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := stateDir(os.Getenv); err != nil || got != want {
			t.Errorf("XDG_STATE_HOME=%q: %q %v; the CLI's is %q", xdg, got, err, want)
		}
	}
}

// With no session for its host, the shell runs nothing, and says why, in the host's output.
func TestRefusesWithoutASession(t *testing.T) {
	var out, errs bytes.Buffer
	env := map[string]string{EnvRefused: "the folder /home/me is your home folder", EnvSocket: "/nonexistent/openworker.sock", "HOME": "/nonexistent"}
	code := Main(Options{Args: []string{"/x/openworker-shell", "touch /tmp/ran"}, Getenv: func(k string) string { return env[k] },
		Stdout: &out, Stderr: &errs, Getwd: func() (string, error) { return "/w", nil }, Pid: os.Getpid()})
	if code != 126 || !strings.Contains(errs.String(), "nothing was run") || !strings.Contains(errs.String(), "your home folder") || out.Len() != 0 {
		t.Fatalf("%d %q %q", code, out.String(), errs.String())
	}
	delete(env, EnvRefused)
	errs.Reset()
	code = Main(Options{Args: []string{"/x/openworker-shell", "true"}, Getenv: func(k string) string { return env[k] },
		Stdout: &out, Stderr: &errs, Getwd: func() (string, error) { return "/w", nil }, Pid: os.Getpid(), FindWait: 100 * time.Millisecond})
	if code != 126 || !strings.Contains(errs.String(), "nothing was run") || !strings.Contains(errs.String(), "daemon is not running") {
		t.Fatalf("%d %q", code, errs.String())
	}
}

func TestBlockedNote(t *testing.T) {
	n := BlockedNote([]string{"a.example:443", "b.example:443"}, []bool{false, true})
	if !strings.Contains(n, "blocked a.example:443") || !strings.Contains(n, "request_site") || !strings.Contains(n, "denied b.example:443") ||
		strings.Contains(n, "--allow") || strings.Contains(n, "openworker access") {
		t.Fatal(n)
	}
	if BlockedNote(nil, nil) != "" {
		t.Fatal("a note with nothing blocked")
	}
}
