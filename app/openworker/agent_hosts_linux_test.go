package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/agenthost"
	"github.com/openworker/openworker/core/tstest"
	"github.com/openworker/openworker/core/tstest/scriptmodel"
)

// These tests drive the real agent hosts, installed from npm at the versions .ci/run pins,
// with a scripted model on loopback, in a network namespace of their own that holds only
// loopback: nothing they do reaches another address. The same script runs against the host
// alone, where its own tools read the home folder's key and write outside the project, and
// under openworker agent, where none of that happens and the work gets done.

// hostsEnv names the folder the hosts are installed in (node_modules/.bin under it);
// without it, defaultHosts. Set (as .ci/run sets it), a host that is not there fails the
// test instead of skipping it.
const (
	hostsEnv     = "OPENWORKER_TEST_AGENT_HOSTS"
	defaultHosts = "/opt/openworker-agent-hosts"
	netnsEnv     = "OPENWORKER_TEST_IN_NETNS"
)

// agentHost is the path of the host name, or skips the test where it is not installed.
func agentHost(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv(hostsEnv)
	required := dir != ""
	if dir == "" {
		dir = defaultHosts
	}
	p := filepath.Join(dir, "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		if required {
			t.Fatalf("%s is not installed in %s (%s): .ci/run installs the agent hosts with npm", name, dir, hostsEnv)
		}
		t.Skipf("%s is not installed in %s; set %s to where npm installed @anthropic-ai/claude-code, @openai/codex and @google/gemini-cli", name, dir, hostsEnv)
	}
	return p
}

// inNetNS runs the test (or benchmark) again, alone, in a network namespace that has only
// loopback, and reports whether this is that run. Outside it, it waits for that run and
// passes on its result.
func inNetNS(tb testing.TB) bool {
	tb.Helper()
	if os.Getenv(netnsEnv) == "1" {
		return true
	}
	if os.Geteuid() != 0 {
		tb.Skip("a network namespace of the test's own takes root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		tb.Skip("unshare is not installed")
	}
	name := strings.SplitN(tb.Name(), "/", 2)[0]
	args := []string{"-test.run", "^" + name + "$", "-test.v", "-test.count=1", "-test.timeout=15m"}
	pass := "--- PASS: " + name
	if _, ok := tb.(*testing.B); ok {
		args = []string{"-test.run", "^$", "-test.bench", "^" + name + "$", "-test.benchtime", flagValue("test.benchtime"), "-test.count=1", "-test.timeout=30m"}
		pass = "PASS"
	}
	cmd := exec.Command("unshare", append([]string{"--net", "sh", "-c", `ip link set lo up && exec "$0" "$@"`, os.Args[0]}, args...)...)
	cmd.Env = append(os.Environ(), netnsEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	tb.Log(out.String())
	if err != nil || !strings.Contains(out.String(), pass) || strings.Contains(out.String(), "--- FAIL") {
		tb.Fatalf("the run in its own network namespace failed: %v", err)
	}
	return false
}

// flagValue is the value of the test binary's flag name, as given.
func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// hostRun is one run of a host against a script.
type hostRun struct {
	srv     *scriptmodel.Server
	out     string
	err     error
	results []scriptmodel.ToolResult
}

// allResults is every tool result the host sent back, as text.
func (r hostRun) allResults() string {
	var b strings.Builder
	for _, x := range r.results {
		fmt.Fprintf(&b, "[%s] %s\n", x.Tool, x.Content)
	}
	return b.String()
}

func (r hostRun) result(t *testing.T, i int) string {
	t.Helper()
	if i >= len(r.results) {
		t.Fatalf("the host sent back %d tool results, not %d:\n%s\n%s", len(r.results), i+1, r.allResults(), r.out)
	}
	return r.results[i].Content
}

// runHost runs args (the host, or openworker agent HOST) in w's project with the script.
func runHost(t *testing.T, w *world, env []string, turns []scriptmodel.Turn, args ...string) hostRun {
	t.Helper()
	srv := scriptmodel.New(t, turns...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = w.project
	cmd.Env = append(append(append([]string(nil), w.env...), env...), hostVars(srv)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Stdin = nil
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("%v did not end:\n%s", args, out.String())
	}
	return hostRun{srv: srv, out: out.String(), err: err, results: srv.ToolResults()}
}

// hostVars point the hosts at the scripted model and keep them off every other address.
func hostVars(srv *scriptmodel.Server) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=sk-ant-planted",
		"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"FAKE_KEY=sk-planted",
		"GOOGLE_GEMINI_BASE_URL=" + srv.URL, "GEMINI_API_KEY=AIza-planted",
	}
}

// onPath puts the host's folder first on PATH, as an installed host is.
func onPath(host string) []string {
	return []string{"PATH=" + filepath.Dir(host) + ":" + os.Getenv("PATH")}
}

func codexModelArgs(srv *scriptmodel.Server) []string {
	return []string{"-c", "model_provider=fake",
		"-c", `model_providers.fake={name="fake",base_url="` + srv.URL + `/v1",wire_api="responses",env_key="FAKE_KEY"}`,
		"-m", "gpt-5.5"}
}

// planted is what the world's key file holds.
const planted = "planted"

// noProcess waits until no process on this machine runs a command line holding marker:
// what a session's command started ends with the session.
func noProcess(t *testing.T, marker string) {
	t.Helper()
	tstest.WaitFor(t, 10*time.Second, func() error {
		out, _ := exec.Command("pgrep", "-f", marker).Output()
		if len(bytes.TrimSpace(out)) > 0 {
			return fmt.Errorf("still running: %s", out)
		}
		return nil
	})
}

func TestAgentHostsBehindTheWall(t *testing.T) {
	if !inNetNS(t) {
		return
	}
	t.Run("claude", testClaudeBehindTheWall)
	t.Run("codex", testCodexBehindTheWall)
	t.Run("gemini", testGeminiBehindTheWall)
}

func testClaudeBehindTheWall(t *testing.T) {
	claude := agentHost(t, "claude")
	w := newWorld(t)
	requireSandbox(t, w)
	key := filepath.Join(w.home, ".ssh", "id_ed25519")
	if err := os.MkdirAll(filepath.Join(w.project, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tick, termed := filepath.Join(w.project, "tick"), filepath.Join(w.project, "termed")
	taskID := regexp.MustCompile(`ID: ([a-z0-9]+)`)
	script := func() []scriptmodel.Turn {
		return []scriptmodel.Turn{
			/* 0 */ {Tool: "Bash", Input: map[string]any{"command": "cat " + key}},
			/* 1 */ {Tool: "Bash", Input: map[string]any{"command": "echo x > " + filepath.Join(w.home, "leak-shell")}},
			/* 2 */ {Tool: "Read", Input: map[string]any{"file_path": key}},
			/* 3 */ {Tool: "Write", Input: map[string]any{"file_path": filepath.Join(w.home, "leak-write"), "content": "x\n"}},
			/* 4 */ {Tool: "Bash", Input: map[string]any{"command": "echo work > made.txt && cat made.txt && cd sub"}},
			/* 5 */ {Tool: "Bash", Input: map[string]any{"command": "pwd"}},
			/* 6 */ {Tool: "Bash", Input: map[string]any{"command": "curl -sS --max-time 5 https://blocked.example/ -o /dev/null; echo curl=$?"}},
			/* 7 */ {Tool: "Bash", Input: map[string]any{"run_in_background": true,
				"command": "trap 'echo term > " + termed + "; exit 3' TERM; while :; do date > " + tick + "; sleep 0.1; done # agent-bg-marker"}},
			/* 8 */ {Tool: "Bash", Input: map[string]any{"command": "while [ ! -s " + tick + " ]; do sleep 0.1; done; echo ticking"}},
			/* 9 */ {Func: func(rs []scriptmodel.ToolResult) scriptmodel.Turn {
				m := taskID.FindStringSubmatch(rs[len(rs)-2].Content)
				if m == nil {
					return scriptmodel.Turn{Text: "no task id"}
				}
				return scriptmodel.Turn{Tool: "TaskStop", Input: map[string]any{"task_id": m[1]}}
			}},
			/* 10 */ {Tool: "Bash", Input: map[string]any{"command": "sleep 0.3; cat " + termed}},
			/* 11 */ {Text: "done"},
		}
	}
	args := []string{"-p", "do the work", "--output-format", "text", "--allowedTools", "Bash,Read,Write,Edit,TaskStop"}

	t.Run("alone", func(t *testing.T) {
		r := runHost(t, w, onPath(claude), script(), append([]string{claude}, args...)...)
		if !strings.Contains(r.result(t, 0), planted) || !strings.Contains(r.result(t, 2), planted) {
			t.Errorf("the host alone did not read the key with Bash and Read (the leak this guards against):\n%s", r.allResults())
		}
		for _, f := range []string{"leak-shell", "leak-write"} {
			if _, err := os.Stat(filepath.Join(w.home, f)); err != nil {
				t.Errorf("the host alone did not write %s into the home folder: %v\n%s", f, err, r.allResults())
			}
			os.Remove(filepath.Join(w.home, f))
		}
		noProcess(t, "agent-bg-marker")
		os.Remove(termed)
		os.Remove(tick)
	})

	t.Run("under_openworker_agent", func(t *testing.T) {
		r := runHost(t, w, onPath(claude), script(), append([]string{binary, "agent", "claude"}, args...)...)
		all := r.allResults()
		if strings.Contains(all, planted) || strings.Contains(r.out, planted) {
			t.Errorf("the key reached the model:\n%s", all)
		}
		notWritten(t, w, "leak-shell", "leak-write")
		if !strings.Contains(r.result(t, 0), "No such file or directory") {
			t.Errorf("Bash's cat of the key: %q", r.result(t, 0))
		}
		if !strings.Contains(r.result(t, 2), "No such tool available: Read") || !strings.Contains(r.result(t, 3), "No such tool available: Write") {
			t.Errorf("the host's own file tools were not switched off:\n%s", all)
		}
		if b, err := os.ReadFile(filepath.Join(w.project, "made.txt")); err != nil || string(b) != "work\n" || !strings.Contains(r.result(t, 4), "work") {
			t.Errorf("the work in the project: %q %v\n%s", b, err, all)
		}
		if got := strings.TrimSpace(r.result(t, 5)); got != filepath.Join(w.project, "sub") {
			t.Errorf("the folder did not carry over to the next command: %q", got)
		}
		refusedAsAgentsRead(t, r.result(t, 6))
		if res := r.result(t, 8); !strings.Contains(res, "ticking") {
			t.Errorf("the background command did not run: %q", res)
		}
		if res := r.result(t, 10); !strings.Contains(res, "term") {
			t.Errorf("stopping the background command did not reach it behind the wall: %q\n%s", res, all)
		}
		noProcess(t, "agent-bg-marker")
		if !strings.Contains(r.out, "commands run in session") {
			t.Errorf("openworker agent did not say which session: %s", r.out)
		}
	})

	// The same routing as settings a person keeps, with Claude Code started by hand.
	t.Run("kept_configuration", func(t *testing.T) {
		os.Remove(filepath.Join(w.project, "made.txt"))
		printed, errs, code := w.runWith(onPath(claude), "agent", "--print-config", "claude")
		if code != 0 {
			t.Fatalf("agent --print-config claude: %d %s", code, errs)
		}
		settings := between(t, printed, "{", "#    CLAUDE_CODE_SHELL_PREFIX:")
		if err := os.MkdirAll(filepath.Join(w.home, ".claude"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(w.home, ".claude", "settings.json"), []byte(settings), 0o600); err != nil {
			t.Fatal(err)
		}
		add := strings.Fields(between(t, printed, "claude mcp add", "\n"))
		mcpAdd := exec.Command(claude, add[1:]...)
		mcpAdd.Env = append(append([]string(nil), w.env...), onPath(claude)...)
		if out, err := mcpAdd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", add, err, out)
		}
		turns := script()[:7]
		turns = append(turns, scriptmodel.Turn{Tool: "mcp__openworker__session_info", Input: map[string]any{}}, scriptmodel.Turn{Text: "done"})
		r := runHost(t, w, onPath(claude), turns, append([]string{claude}, append(args[:len(args):len(args)], "--allowedTools", "mcp__openworker")...)...)
		all := r.allResults()
		if strings.Contains(all, planted) {
			t.Errorf("the key reached the model:\n%s", all)
		}
		notWritten(t, w, "leak-shell", "leak-write")
		if b, err := os.ReadFile(filepath.Join(w.project, "made.txt")); err != nil || string(b) != "work\n" {
			t.Errorf("the work in the project: %q %v\n%s\n%s", b, err, all, r.out)
		}
		if got := strings.TrimSpace(r.result(t, 5)); got != filepath.Join(w.project, "sub") {
			t.Errorf("the folder did not carry over to the next command: %q", got)
		}
		if res := r.result(t, 6); !strings.Contains(res, "blocked blocked.example:443") {
			t.Errorf("the refused site as the model reads it: %q", res)
		}
		if res := r.result(t, 7); !strings.Contains(res, `"enforcement":"linux"`) {
			t.Errorf("session_info: %q", res)
		}
	})
}

// between is the part of s from the first from (included) to the next to after it (not
// included).
func between(t *testing.T, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	if i < 0 {
		t.Fatalf("%q is not in:\n%s", from, s)
	}
	j := strings.Index(s[i:], to)
	if j < 0 {
		t.Fatalf("%q does not follow %q in:\n%s", to, from, s)
	}
	return s[i : i+j]
}

func testCodexBehindTheWall(t *testing.T) {
	codex := agentHost(t, "codex")
	w := newWorld(t)
	requireSandbox(t, w)
	key := filepath.Join(w.home, ".ssh", "id_ed25519")
	patch := "*** Begin Patch\n*** Add File: " + filepath.Join(w.home, "leak-patch") + "\n+leaked\n*** End Patch\n"
	inProject := "*** Begin Patch\n*** Add File: " + filepath.Join(w.project, "patched.txt") + "\n+patched\n*** End Patch\n"
	script := func() []scriptmodel.Turn {
		return []scriptmodel.Turn{
			/* 0 */ {Tool: "exec_command", Input: map[string]any{"cmd": "cat " + key}},
			/* 1 */ {Tool: "exec_command", Input: map[string]any{"cmd": "echo x > " + filepath.Join(w.home, "leak-shell") + "; env | grep -c planted"}},
			/* 2 */ {Calls: []scriptmodel.Call{{Tool: "apply_patch", Input: patch, Custom: true}}},
			/* 3 */ {Calls: []scriptmodel.Call{{Tool: "apply_patch", Input: inProject, Custom: true}}},
			/* 4 */ {Tool: "exec_command", Input: map[string]any{"cmd": "echo work > made.txt && cat made.txt patched.txt && mkdir -p sub"}},
			/* 5 */ {Tool: "exec_command", Input: map[string]any{"cmd": "pwd", "workdir": filepath.Join(w.project, "sub")}},
			/* 6 */ {Tool: "exec_command", Input: map[string]any{"cmd": "curl -sS --max-time 5 https://blocked.example/ -o /dev/null; echo curl=$?"}},
			/* 7 */ {Tool: "exec_command", Input: map[string]any{"cmd": "sh -c 'while :; do sleep 0.1; done # agent-bg-marker' & echo started", "yield_time_ms": 500}},
			/* 8 */ {Text: "done"},
		}
	}
	args := []string{"exec", "--skip-git-repo-check"}

	t.Run("alone", func(t *testing.T) {
		r := runCodex(t, w, codex, script(), append([]string{codex, "--dangerously-bypass-approvals-and-sandbox"}, args...))
		if !strings.Contains(r.result(t, 0), planted) {
			t.Errorf("codex alone did not read the key (the leak this guards against):\n%s", r.allResults())
		}
		for _, f := range []string{"leak-shell", "leak-patch"} {
			if _, err := os.Stat(filepath.Join(w.home, f)); err != nil {
				t.Errorf("codex alone did not write %s into the home folder: %v\n%s", f, err, r.allResults())
			}
			os.Remove(filepath.Join(w.home, f))
		}
		exec.Command("pkill", "-f", "agent-bg-marker").Run()
		os.Remove(filepath.Join(w.project, "patched.txt"))
		os.Remove(filepath.Join(w.project, "made.txt"))
	})

	t.Run("under_openworker_agent", func(t *testing.T) {
		r := runCodex(t, w, codex, script(), append([]string{binary, "agent", "codex"}, args...))
		all := r.allResults()
		if strings.Contains(all, planted+"\n") || strings.Contains(r.result(t, 0), planted) {
			t.Errorf("the key reached the model:\n%s", all)
		}
		if got := r.result(t, 1); !strings.Contains(got, "Output:\n0\n") && !strings.HasSuffix(strings.TrimSpace(got), "0") {
			t.Errorf("a planted secret variable reached the command: %q", got)
		}
		notWritten(t, w, "leak-shell", "leak-patch")
		if b, err := os.ReadFile(filepath.Join(w.project, "patched.txt")); err != nil || string(b) != "patched\n" {
			t.Errorf("apply_patch in the project: %q %v\n%s", b, err, all)
		}
		if !strings.Contains(r.result(t, 4), "work\npatched") {
			t.Errorf("the work in the project: %q", r.result(t, 4))
		}
		if !strings.Contains(r.result(t, 5), filepath.Join(w.project, "sub")) {
			t.Errorf("the command's folder: %q", r.result(t, 5))
		}
		refusedAsAgentsRead(t, r.result(t, 6))
		noProcess(t, "agent-bg-marker")
	})

	// The same routing as settings a person keeps, with Codex started by hand.
	t.Run("kept_configuration", func(t *testing.T) {
		os.Remove(filepath.Join(w.project, "made.txt"))
		os.Remove(filepath.Join(w.project, "patched.txt"))
		printed, errs, code := w.runWith(onPath(codex), "agent", "--print-config", "codex")
		if code != 0 {
			t.Fatalf("agent --print-config codex: %d %s", code, errs)
		}
		dir := filepath.Join(w.home, ".codex")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{
			"environments.toml": between(t, printed, "default =", "# 2."),
			"config.toml":       between(t, printed, "[mcp_servers.openworker]", "# 3."),
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		r := runCodex(t, w, codex, script()[:7], append([]string{codex, "--dangerously-bypass-approvals-and-sandbox"}, args...))
		all := r.allResults()
		if strings.Contains(r.result(t, 0), planted) {
			t.Errorf("the key reached the model:\n%s", all)
		}
		notWritten(t, w, "leak-shell", "leak-patch")
		if b, err := os.ReadFile(filepath.Join(w.project, "patched.txt")); err != nil || string(b) != "patched\n" {
			t.Errorf("apply_patch in the project: %q %v\n%s\n%s", b, err, all, r.out)
		}
		for name := range files {
			os.Remove(filepath.Join(dir, name))
		}
	})
}

func runCodex(t *testing.T, w *world, codex string, turns []scriptmodel.Turn, args []string) hostRun {
	t.Helper()
	srv := scriptmodel.New(t, turns...)
	full := append(append(args[:len(args):len(args)], codexModelArgs(srv)...), "do the work")
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Dir = w.project
	cmd.Env = append(append(append([]string(nil), w.env...), hostVars(srv)...), onPath(codex)...)
	out, err := cmd.CombinedOutput()
	return hostRun{srv: srv, out: string(out), err: err, results: srv.ToolResults()}
}

// refusedAsAgentsRead checks a tool result of a command that reached a site not on the
// list: the site named, with the agent's way to ask (request_site), never the person's
// command-line switch.
func refusedAsAgentsRead(t *testing.T, res string) {
	t.Helper()
	if !strings.Contains(res, "blocked blocked.example:443") || !strings.Contains(res, "request_site") || strings.Contains(res, "--allow") {
		t.Errorf("the refused site as the model reads it: %q", res)
	}
}

// BenchmarkAgentShellTrue is the cost of a shell call through a host under openworker agent
// against the same host alone: the host's shell tool (Claude Code's Bash, Codex's
// exec_command, gemini-cli's run_shell_command) runs `true` calls times, and each call is
// timed from the model's answer that makes it to the host's next request, which carries
// its result; the two runs alternate, so both see the same load. It reports the medians
// and what openworker agent adds (the target: 10 ms at most).
//
//	go test -run '^$' -bench AgentShellTrue -benchtime 6x ./app/openworker/
func BenchmarkAgentShellTrue(b *testing.B) {
	if !inNetNS(b) {
		return
	}
	const calls = 20
	for _, host := range []string{"claude", "codex", "gemini"} {
		b.Run(host, func(b *testing.B) {
			bin := agentHostB(b, host)
			w := benchWorld(b)
			if host == "gemini" {
				settings := filepath.Join(w.home, ".gemini", "settings.json")
				if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(settings, []byte(geminiSettings), 0o600); err != nil {
					b.Fatal(err)
				}
			}
			turns := make([]scriptmodel.Turn, 0, calls+1)
			for i := 0; i < calls; i++ {
				switch host {
				case "claude":
					turns = append(turns, scriptmodel.Turn{Tool: "Bash", Input: map[string]any{"command": "true"}})
				case "codex":
					turns = append(turns, scriptmodel.Turn{Tool: "exec_command", Input: map[string]any{"cmd": "true"}})
				default:
					turns = append(turns, scriptmodel.Turn{Tool: "run_shell_command", Input: map[string]any{"command": "true"}})
				}
			}
			turns = append(turns, scriptmodel.Turn{Text: "done"})
			var alone, agent []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, under := range []bool{false, true} {
					srv := scriptmodel.New(b, turns...)
					var args []string
					switch host {
					case "claude":
						args = []string{bin, "-p", "go", "--output-format", "text", "--allowedTools", "Bash"}
					case "codex":
						args = append([]string{bin, "exec", "--skip-git-repo-check"}, append(codexModelArgs(srv), "go")...)
						if !under {
							args = append([]string{bin, "--dangerously-bypass-approvals-and-sandbox"}, args[1:]...)
						}
					default:
						args = []string{bin, "-p", "go", "--output-format", "text", "--yolo", "--skip-trust", "-m", "gemini-2.5-flash"}
					}
					if under {
						args = append([]string{binary, "agent"}, append([]string{host}, args[1:]...)...)
					}
					cmd := exec.Command(args[0], args[1:]...)
					cmd.Dir = w.project
					cmd.Env = append(append(append([]string(nil), w.env...), hostVars(srv)...), onPath(bin)...)
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("%v: %v\n%s", args, err, out)
					}
					reqs := srv.ScriptedRequests()
					for k := 0; k+1 < len(reqs) && k < calls; k++ {
						d := reqs[k+1].Received.Sub(reqs[k].Done)
						if under {
							agent = append(agent, d)
						} else {
							alone = append(alone, d)
						}
					}
				}
			}
			b.StopTimer()
			ma, mg := median(alone), median(agent)
			b.ReportMetric(ma, "ms-median/alone")
			b.ReportMetric(mg, "ms-median/agent")
			b.ReportMetric(mg-ma, "ms-added")
		})
	}
}

// agentHostB is agentHost for a benchmark.
func agentHostB(b *testing.B, name string) string {
	dir := os.Getenv(hostsEnv)
	if dir == "" {
		dir = defaultHosts
	}
	p := filepath.Join(dir, "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		b.Skipf("%s is not installed in %s", name, dir)
	}
	return p
}

// geminiSettings are the person's own ~/.gemini/settings.json for the gemini tests: an API
// key's login (gemini-cli takes a base URL in GOOGLE_GEMINI_BASE_URL for a gateway, which
// its headless mode refuses, unless the settings name the login), no usage statistics, and
// a command that prints nothing for 3 s cancelled, as the interrupt the script makes.
const geminiSettings = `{
  // The person's own settings; comments are allowed, as gemini-cli allows them.
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "tools": {"shell": {"inactivityTimeout": 3}}
}
`

// geminiArgs run gemini-cli headless with a model named (no model router), every tool
// allowed (--yolo), and its workspace widened to the home folder, as a person may with
// --include-directories: its own file tools keep to the workspace, so this is how they reach
// the home folder's key.
func geminiArgs(home string) []string {
	return []string{"-p", "do the work", "--output-format", "text", "--yolo", "--skip-trust", "-m", "gemini-2.5-flash", "--include-directories", home}
}

// geminiScript is the same work for gemini-cli as the other hosts': the shell reads the key
// and writes into the home folder, the file tools read the key and write outside, the work
// in the project, a command in a folder of it (gemini-cli starts each command in the folder
// its dir_path names), a refused site, a background command, and an interrupt: a command
// that prints nothing is cancelled by gemini-cli after 6 s, and the next command reads
// what its trap wrote (waiting up to 20 s for it: a loaded machine starts and stops
// commands slowly).
func geminiScript(w *world) []scriptmodel.Turn {
	key := filepath.Join(w.home, ".ssh", "id_ed25519")
	tick, stopped := filepath.Join(w.project, "tick"), filepath.Join(w.project, "stopped")
	return []scriptmodel.Turn{
		/* 0 */ {Tool: "run_shell_command", Input: map[string]any{"command": "cat " + key}},
		/* 1 */ {Tool: "run_shell_command", Input: map[string]any{"command": "echo x > " + filepath.Join(w.home, "leak-shell") + "; env | grep -c planted"}},
		/* 2 */ {Tool: "read_file", Input: map[string]any{"file_path": key}},
		/* 3 */ {Tool: "write_file", Input: map[string]any{"file_path": filepath.Join(w.home, "leak-write"), "content": "x\n"}},
		/* 4 */ {Tool: "run_shell_command", Input: map[string]any{"command": "echo work > made.txt && cat made.txt && mkdir -p sub"}},
		/* 5 */ {Tool: "run_shell_command", Input: map[string]any{"command": "pwd; exit 4", "dir_path": "sub"}},
		/* 6 */ {Tool: "run_shell_command", Input: map[string]any{"command": "curl -sS --max-time 5 https://blocked.example/ -o /dev/null; echo curl=$?"}},
		/* 7 */ {Tool: "run_shell_command", Input: map[string]any{"is_background": true,
			"command": "while :; do date > " + tick + "; sleep 0.1; done # agent-bg-marker"}},
		/* 8 */ {Tool: "run_shell_command", Input: map[string]any{"command": "while [ ! -s " + tick + " ]; do sleep 0.1; done; echo ticking; sleep 5 > /dev/null 2>&1 & echo started"}},
		/* 9 */ {Tool: "run_shell_command", Input: map[string]any{"command": "trap 'echo stopped > " + stopped + "; exit 3' TERM; while :; do sleep 0.1; done # agent-int-marker"}},
		// It prints a dot as it waits, or gemini-cli would cancel it too.
		/* 10 */ {Tool: "run_shell_command", Input: map[string]any{"command": "timeout 20 sh -c 'while [ ! -s " + stopped + " ]; do sleep 0.2; printf .; done'; echo; cat " + stopped}},
		/* 11 */ {Tool: "mcp_openworker_session_info", Input: map[string]any{}},
		/* 12 */ {Text: "done"},
	}
}

// noneCounted is a result in which grep -c counted nothing.
var noneCounted = regexp.MustCompile(`(?m)^(Output: )?0$`)

func testGeminiBehindTheWall(t *testing.T) {
	gemini := agentHost(t, "gemini")
	w := newWorld(t)
	requireSandbox(t, w)
	if err := os.MkdirAll(filepath.Join(w.home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.home, ".gemini", "settings.json"), []byte(geminiSettings), 0o600); err != nil {
		t.Fatal(err)
	}
	args := geminiArgs(w.home)
	clean := func() {
		exec.Command("pkill", "-f", "agent-bg-marker").Run()
		for _, f := range []string{"made.txt", "tick", "stopped"} {
			os.Remove(filepath.Join(w.project, f))
		}
		os.RemoveAll(filepath.Join(w.project, "sub"))
	}

	t.Run("alone", func(t *testing.T) {
		r := runHost(t, w, onPath(gemini), geminiScript(w), append([]string{gemini}, args...)...)
		if !strings.Contains(r.result(t, 0), planted) || !strings.Contains(r.result(t, 2), planted) {
			t.Errorf("gemini alone did not read the key with its shell and read_file (the leak this guards against):\n%s\n%s", r.allResults(), r.out)
		}
		if got := r.result(t, 1); noneCounted.MatchString(got) {
			t.Errorf("gemini alone passed no secret variable to its commands: %q", got)
		}
		for _, f := range []string{"leak-shell", "leak-write"} {
			if _, err := os.Stat(filepath.Join(w.home, f)); err != nil {
				t.Errorf("gemini alone did not write %s into the home folder: %v\n%s", f, err, r.allResults())
			}
			os.Remove(filepath.Join(w.home, f))
		}
		clean()
	})

	t.Run("under_openworker_agent", func(t *testing.T) {
		before := treeOf(t, filepath.Join(w.home, ".gemini"))
		r := runHost(t, w, onPath(gemini), geminiScript(w), append([]string{binary, "agent", "gemini"}, args...)...)
		all := r.allResults()
		if strings.Contains(all, planted+"\n") || strings.Contains(r.result(t, 0), planted) || strings.Contains(r.out, planted+"\n") {
			t.Errorf("the key reached the model:\n%s", all)
		}
		if !strings.Contains(r.result(t, 0), "No such file or directory") {
			t.Errorf("the shell's cat of the key: %q", r.result(t, 0))
		}
		if got := r.result(t, 1); !noneCounted.MatchString(got) {
			t.Errorf("a planted secret variable reached the command: %q", got)
		}
		notWritten(t, w, "leak-shell", "leak-write")
		if !strings.Contains(r.result(t, 2), `Tool "read_file" not found`) || !strings.Contains(r.result(t, 3), `Tool "write_file" not found`) {
			t.Errorf("gemini's own file tools were not switched off:\n%s", all)
		}
		offered := strings.Join(r.srv.ScriptedRequests()[0].Tools, " ")
		for _, off := range []string{"read_file", "write_file", "replace", "glob", "grep_search", "list_directory", "read_many_files", "web_fetch", "google_web_search"} {
			if slices.Contains(r.srv.ScriptedRequests()[0].Tools, off) {
				t.Errorf("%s is offered to the model: %s", off, offered)
			}
		}
		if !strings.Contains(offered, "run_shell_command") || !strings.Contains(offered, "mcp_openworker_run_command") {
			t.Errorf("the shell or OpenWorker's tools are not offered: %s", offered)
		}
		if b, err := os.ReadFile(filepath.Join(w.project, "made.txt")); err != nil || string(b) != "work\n" || !strings.Contains(r.result(t, 4), "work") {
			t.Errorf("the work in the project: %q %v\n%s", b, err, all)
		}
		if res := r.result(t, 5); !strings.Contains(res, filepath.Join(w.project, "sub")+"\n") || !strings.Contains(res, "Exit Code: 4") {
			t.Errorf("the command's folder and exit status: %q", res)
		}
		refusedAsAgentsRead(t, r.result(t, 6))
		if res := r.result(t, 7); !strings.Contains(res, "background") {
			t.Errorf("the background command: %q", res)
		}
		if res := r.result(t, 8); !strings.Contains(res, "ticking") || !strings.Contains(res, "Background PIDs: ") || strings.Contains(res, "bgpids") {
			t.Errorf("the background command did not run, or the command's own background job was not reported: %q", res)
		}
		if res := r.result(t, 9); !strings.Contains(res, "cancelled") {
			t.Errorf("the command that printed nothing was not cancelled: %q", res)
		}
		if res := r.result(t, 10); !strings.Contains(res, "stopped") {
			t.Errorf("gemini's cancel did not reach the command behind the wall: %q\n%s", res, all)
		}
		if res := r.result(t, 11); !regexp.MustCompile(`"enforcement": ?"linux"`).MatchString(res) {
			t.Errorf("session_info: %q", res)
		}
		noProcess(t, "agent-int-marker")
		noProcess(t, "agent-bg-marker")
		if !strings.Contains(r.out, "commands run in session") {
			t.Errorf("openworker agent did not say which session: %s", r.out)
		}
		if strings.Contains(r.out, "Policy file error") || strings.Contains(r.out, "Ignoring --admin-policy") {
			t.Errorf("gemini-cli did not take the policy whole: %s", r.out)
		}
		if after := treeOf(t, filepath.Join(w.home, ".gemini")); after != before {
			t.Errorf("the person's ~/.gemini changed:\nbefore %s\nafter  %s", before, after)
		}
		if _, err := os.Lstat(filepath.Join(w.project, ".gemini")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a .gemini was made in the project: %v", err)
		}
		clean()
	})

	// A project's own settings that start a program when gemini-cli starts, as a cloned
	// repository's may: alone, gemini-cli runs it outside; openworker agent starts nothing.
	t.Run("project_settings", func(t *testing.T) {
		dot := filepath.Join(w.project, ".gemini")
		leak := filepath.Join(w.home, "leak-discovery")
		if err := os.MkdirAll(dot, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dot)
		settings := `{"ui": {"hideTips": true}, "tools": {"discoveryCommand": "touch ` + leak + `"}}`
		if err := os.WriteFile(filepath.Join(dot, "settings.json"), []byte(settings), 0o644); err != nil {
			t.Fatal(err)
		}
		// Alone, in a folder the person trusts (gemini-cli reads no project's settings in
		// one nobody trusted, and openworker agent trusts the folder it checked).
		trusted := filepath.Join(w.home, ".gemini", "trustedFolders.json")
		if err := os.WriteFile(trusted, []byte(`{"`+w.project+`": "TRUST_FOLDER"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(trusted)
		runHost(t, w, onPath(gemini), []scriptmodel.Turn{{Text: "done"}}, append([]string{gemini}, args...)...)
		if _, err := os.Stat(leak); err != nil {
			t.Errorf("gemini-cli alone did not run the project's discovery command (the leak this guards against): %v", err)
		}
		os.Remove(leak)

		srv := scriptmodel.New(t, scriptmodel.Turn{Text: "done"})
		_, errs, code := w.runWith(append(onPath(gemini), hostVars(srv)...), append([]string{"agent", "gemini"}, args...)...)
		if code == 0 || !strings.Contains(errs, filepath.Join(dot, "settings.json")) || !strings.Contains(errs, "tools.discoveryCommand") ||
			strings.Contains(errs, "ui.hideTips") || !strings.Contains(errs, "Nothing was started") {
			t.Errorf("openworker agent gemini in a project whose settings start a program: %d %s", code, errs)
		}
		if _, err := os.Stat(leak); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the project's discovery command ran: %v", err)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Errorf("gemini-cli was started: the model got %d requests", n)
		}

		os.Remove(filepath.Join(dot, "settings.json"))
		if err := os.WriteFile(filepath.Join(dot, ".env"), []byte("GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, errs, code = w.runWith(append(onPath(gemini), hostVars(srv)...), append([]string{"agent", "gemini"}, args...)...)
		if code == 0 || !strings.Contains(errs, filepath.Join(dot, ".env")) || len(srv.Requests()) != 0 {
			t.Errorf("openworker agent gemini in a project with a .gemini/.env: %d %s", code, errs)
		}
	})

	// The same routing as settings a person keeps, with gemini-cli started by hand.
	t.Run("kept_configuration", func(t *testing.T) {
		printed, errs, code := w.runWith(onPath(gemini), "agent", "--print-config", "gemini")
		if code != 0 {
			t.Fatalf("agent --print-config gemini: %d %s", code, errs)
		}
		var settings map[string]any
		if err := json.Unmarshal([]byte(between(t, printed, "{", "#    mcpServers.openworker:")), &settings); err != nil {
			t.Fatal(err)
		}
		// Merged with the person's own, as the printed settings say.
		settings["security"].(map[string]any)["auth"] = map[string]any{"selectedType": "gemini-api-key"}
		settings["privacy"] = map[string]any{"usageStatisticsEnabled": false}
		sj, _ := json.Marshal(settings)
		dot := filepath.Join(w.home, ".gemini")
		if err := os.MkdirAll(filepath.Join(dot, "policies"), 0o700); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{
			filepath.Join(dot, "settings.json"):               string(sj),
			filepath.Join(dot, "policies", "openworker.toml"): between(t, printed, "# OpenWorker: gemini-cli's own", "# 3."),
		}
		for name, text := range files {
			if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		link := exec.Command("sh", "-c", between(t, printed, "mkdir -p", "\n"))
		link.Env = w.env
		if out, err := link.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", link.Args, err, out)
		}
		bin := filepath.Join(w.home, agenthost.GeminiBin)
		defer func() {
			os.RemoveAll(bin)
			os.RemoveAll(filepath.Join(dot, "policies"))
			os.WriteFile(filepath.Join(dot, "settings.json"), []byte(geminiSettings), 0o600)
		}()
		turns := geminiScript(w)[:7]
		turns = append(turns, scriptmodel.Turn{Tool: "mcp_openworker_session_info", Input: map[string]any{}}, scriptmodel.Turn{Text: "done"})
		path := []string{"PATH=" + bin + ":" + filepath.Dir(gemini) + ":" + os.Getenv("PATH")}
		r := runHost(t, w, path, turns, append([]string{gemini}, args...)...)
		all := r.allResults()
		if strings.Contains(r.result(t, 0), planted) || strings.Contains(r.result(t, 2), planted) {
			t.Errorf("the key reached the model:\n%s", all)
		}
		notWritten(t, w, "leak-shell", "leak-write")
		if b, err := os.ReadFile(filepath.Join(w.project, "made.txt")); err != nil || string(b) != "work\n" {
			t.Errorf("the work in the project: %q %v\n%s\n%s", b, err, all, r.out)
		}
		if res := r.result(t, 5); !strings.Contains(res, filepath.Join(w.project, "sub")+"\n") {
			t.Errorf("the command's folder: %q", res)
		}
		if res := r.result(t, 6); !strings.Contains(res, "blocked blocked.example:443") {
			t.Errorf("the refused site as the model reads it: %q", res)
		}
		if res := r.result(t, 7); !regexp.MustCompile(`"enforcement": ?"linux"`).MatchString(res) {
			t.Errorf("session_info: %q", res)
		}
		clean()
	})
}

// notWritten checks that none of files was written into w's home folder.
func notWritten(t *testing.T, w *world, files ...string) {
	t.Helper()
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(w.home, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was written into the home folder: %v", f, err)
		}
	}
}

// treeOf lists the files under dir with their sizes and times, to tell whether anything there
// changed.
func treeOf(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %s; ", strings.TrimPrefix(p, dir), fi.Size(), fi.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
