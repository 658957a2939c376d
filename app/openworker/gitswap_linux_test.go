package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// A command that moves a repository's .git aside (or a folder that holds a repository) and
// makes one of its own in its place, then runs on — a build, a dev server — must not have
// the person's git run its settings meanwhile: a shell prompt runs git status on every Enter.
// The person's git runs concurrently with the command here, as a prompt would.
func TestSwappedRepositoryWhileACommandRuns(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	marks := w.marks()
	w.repository(w.project)
	nested := filepath.Join(w.project, "src", "lib")
	w.repository(nested)
	swap := `for r in . src/lib; do (cd $r && { mv .git .git-aside 2>&1; mkdir -p .git/hooks .git/objects .git/refs; echo 'ref: refs/heads/main' > .git/HEAD; ` + plant(marks) + `; }); done; ` +
		`mv src src-aside 2>&1; mkdir -p src/lib && (cd src/lib && git init -q && ` + plant(marks) + `); ` +
		`echo swapped; sleep 8`
	c := w.cmd("run", "--", "sh", "-c", swap)
	var out syncBuffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "swapped") {
		if time.Now().After(deadline) {
			t.Fatalf("the command did not get as far: %s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The person's prompt, while the command runs on.
	var ran []string
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		for _, dir := range []string{w.project, nested} {
			w.git(dir, "status")
		}
		for _, m := range []string{"fsmonitor"} {
			if _, err := os.Stat(filepath.Join(marks, m)); err == nil {
				ran = append(ran, m)
				os.Remove(filepath.Join(marks, m))
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(ran) > 0 {
		t.Errorf("the person's git ran what the command planted while it ran: %v\n%s", ran, out.String())
	}
	if err := <-done; err != nil {
		t.Logf("run: %v", err)
	}
	if got := w.afterwards(w.project, marks); len(got) > 0 {
		t.Errorf("afterwards the person's git ran %v", got)
	}
	if got := w.afterwards(nested, marks); len(got) > 0 {
		t.Errorf("afterwards the person's git ran %v in the nested repository", got)
	}
}

// An agent host obeys the project's own settings (Claude Code's .claude and .mcp.json, Codex's
// .codex), and runs what they name outside the sandbox when the person starts it there: a
// command can neither change those the project has nor leave new ones behind.
func TestAgentHostSettingsAreKeptFromCommands(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	own := filepath.Join(w.project, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(own), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, []byte(`{"permissions":{}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hook := `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}`
	out, errs, _ := w.run("run", "--", "sh", "-c",
		"printf '%s' '"+hook+"' > .claude/settings.json; printf '%s' '"+hook+"' > .claude/settings.local.json; "+
			`printf '{"mcpServers":{"x":{"command":"sh"}}}' > .mcp.json; mkdir -p .codex && printf '[mcp_servers.x]\ncommand="sh"\n' > .codex/config.toml; echo done`)
	if !strings.Contains(out, "done") {
		t.Fatalf("the command did not run: %s %s", out, errs)
	}
	if b, _ := os.ReadFile(own); string(b) != `{"permissions":{}}`+"\n" {
		t.Errorf("the project's own settings were changed inside: %s", b)
	}
	for _, p := range []string{".claude/settings.local.json", ".mcp.json", ".codex"} {
		if _, err := os.Lstat(filepath.Join(w.project, p)); err == nil {
			t.Errorf("%s is left in the project:\n%s", p, errs)
		}
	}
	for _, p := range []string{".mcp.json", ".codex"} {
		if !strings.Contains(errs, filepath.Join(w.project, p)) {
			t.Errorf("the result does not name %s:\n%s", p, errs)
		}
	}
}

// A repository whose hooks folder is in its work tree (core.hooksPath = .husky/_, as husky 9
// sets it; lefthook, simple-git-hooks) has that folder read-only inside, as .git/hooks is, and
// the folder of the scripts husky's hooks run too: the person's next commit runs them.
func TestHooksFolderInTheWorkTree(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	marks := w.marks()
	w.repository(w.project)
	if out, err := w.git(w.project, "config", "core.hooksPath", ".husky/_"); err != nil {
		t.Fatal(err, out)
	}
	husky := filepath.Join(w.project, ".husky")
	if err := os.MkdirAll(filepath.Join(husky, "_"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(husky, "_", "pre-commit"), []byte("#!/bin/sh\n[ -f .husky/pre-commit ] && sh .husky/pre-commit\n"), 0o755)
	os.WriteFile(filepath.Join(husky, "pre-commit"), []byte("true\n"), 0o644)
	_, errs, _ := w.run("run", "--", "sh", "-c",
		"echo 'touch "+marks+"/pre-commit' > .husky/pre-commit; printf '#!/bin/sh\\ntouch "+marks+"/post-commit\\n' > .husky/_/post-commit; chmod +x .husky/_/post-commit; true")
	w.git(w.project, "commit", "-q", "--allow-empty", "-m", "after")
	for _, m := range []string{"pre-commit", "post-commit"} {
		if _, err := os.Stat(filepath.Join(marks, m)); err == nil {
			t.Errorf("the person's commit ran the %s the command wrote\n%s", m, errs)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(husky, "pre-commit")); string(b) != "true\n" {
		t.Errorf("the project's hook script was written inside: %q", b)
	}
}

// git push -u in a session sets the branch's upstream, which git could not write into the
// read-only .git/config: OpenWorker writes those two keys, and nothing else, into the real
// file. A command that only says it set one up gets nothing written but for a remote the
// repository has.
func TestPushSetsTheUpstream(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	w.repository(w.project)
	bare := filepath.Join(filepath.Dir(w.project), "remote.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", bare).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	if out, err := w.git(w.project, "remote", "add", "origin", bare); err != nil {
		t.Fatal(err, out)
	}
	_, errs, code := w.run("run", "--rw", ".", "--rw", bare, "--", "sh", "-c", "git checkout -q -b feature && git push -u origin feature")
	if code != 0 {
		t.Fatalf("git push -u: %d\n%s", code, errs)
	}
	for key, want := range map[string]string{"branch.feature.remote": "origin", "branch.feature.merge": "refs/heads/feature"} {
		if got, _ := w.git(w.project, "config", "--get", key); strings.TrimSpace(got) != want {
			t.Errorf("%s = %q, want %q\n%s", key, got, want, errs)
		}
	}
	if !strings.Contains(errs, "set feature's upstream to origin/feature") {
		t.Errorf("the line after the command does not say it:\n%s", errs)
	}
	// Words a command prints itself write nothing but for a remote the repository has.
	_, errs, _ = w.run("run", "--", "sh", "-c", `printf "error: could not write config file .git/config: Device or resource busy\nbranch 'main' set up to track 'evil/main'.\n" >&2`)
	if got, _ := w.git(w.project, "config", "--get", "branch.main.remote"); got != "" {
		t.Errorf("branch.main.remote = %q from a command's words", got)
	}
	if !strings.Contains(errs, "evil is not a remote") {
		t.Errorf("%s", errs)
	}
}

// A command that fakes an interactive rebase in the person's repository, its steps holding an
// exec line, has it moved aside: the person's git rebase --continue would run it outside.
func TestRebaseStepsWithExec(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	marks := w.marks()
	w.repository(w.project)
	_, errs, _ := w.run("run", "--", "sh", "-c", `head=$(git rev-parse HEAD) && mkdir -p .git/rebase-merge && cd .git/rebase-merge && `+
		`echo refs/heads/main > head-name && echo $head > onto && echo $head > orig-head && touch interactive && `+
		`printf 'exec touch `+marks+`/exec\n' > git-rebase-todo`)
	w.git(w.project, "rebase", "--continue")
	if _, err := os.Stat(filepath.Join(marks, "exec")); err == nil {
		t.Fatalf("the person's git rebase --continue ran the command's exec line\n%s", errs)
	}
	if !strings.Contains(errs, filepath.Join(w.project, ".git", "rebase-merge", "git-rebase-todo")) {
		t.Errorf("the result does not name the steps moved aside:\n%s", errs)
	}
}

// The person's git runs in a repository a command made while the command runs on, and
// while a process it left running plants the settings again after each move, as a shell
// prompt would: none of it runs, and the process that re-plants is stopped and named.
func TestPlantedWhileRunningAndReplanted(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	marks := w.marks()
	id := w.publishingSession("--rw", w.project)
	prompt := func(dir string, d time.Duration) (runs int, ran []string) {
		for end := time.Now().Add(d); time.Now().Before(end); runs++ {
			w.git(dir, "status")
			if _, err := os.Stat(filepath.Join(marks, "fsmonitor")); err == nil {
				ran = append(ran, time.Now().Format("15:04:05.000"))
				os.Remove(filepath.Join(marks, "fsmonitor"))
			}
			time.Sleep(100 * time.Millisecond)
		}
		return runs, ran
	}

	t.Run("while_the_command_runs", func(t *testing.T) {
		made := filepath.Join(w.project, "made")
		b := w.background("session", "exec", id, "git init -q made && cd made && "+plant(marks)+" && touch ../planted && sleep 5")
		tstest.WaitFor(t, 20*time.Second, func() error { _, err := os.Stat(filepath.Join(w.project, "planted")); return err })
		if runs, ran := prompt(made, 3*time.Second); len(ran) > 0 {
			t.Errorf("%d of the person's %d git status ran what the command planted while it ran (at %v)", len(ran), runs, ran)
		}
		b.wait(t, 30*time.Second)
		if !strings.Contains(b.errs.String(), filepath.Join(made, ".git", "config")) {
			t.Errorf("the result does not name the settings moved:\n%s", b.errs.String())
		}
	})

	t.Run("replanted_by_a_process_left_running", func(t *testing.T) {
		again := filepath.Join(w.project, "again")
		loop := `cd ` + w.project + ` && git init -q again && cd again && (while :; do ` + plant(marks) + `; touch ../alive; sleep 0.05; done) >/dev/null 2>&1 &`
		if _, errs, code := w.run("session", "exec", id, loop); code != 0 {
			t.Fatalf("exec: %d %s", code, errs)
		}
		// The person's prompt, from the moment the command returns: each git status's start
		// and whether it ran the plant.
		type status struct {
			start time.Time
			ran   bool
		}
		var prompts []status
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
			st := status{start: time.Now()}
			w.git(again, "status")
			if _, err := os.Stat(filepath.Join(marks, "fsmonitor")); err == nil {
				st.ran = true
				os.Remove(filepath.Join(marks, "fsmonitor"))
			}
			prompts = append(prompts, st)
			time.Sleep(100 * time.Millisecond)
		}
		// The process is stopped once it plants again: it plants nothing more.
		alive := filepath.Join(w.project, "alive")
		os.Remove(alive)
		time.Sleep(time.Second)
		if _, err := os.Stat(alive); err == nil {
			t.Errorf("the process that planted again still runs")
		}
		trail, _ := os.ReadFile(filepath.Join(w.state, "audit.jsonl"))
		var stopped time.Time
		for _, line := range strings.Split(string(trail), "\n") {
			if strings.Contains(line, "planted again") {
				var ev struct{ Time time.Time }
				if err := json.Unmarshal([]byte(line), &ev); err == nil {
					stopped = ev.Time
				}
			}
		}
		if stopped.IsZero() {
			t.Fatalf("the audit trail does not say the process was stopped:\n%s", trail)
		}
		// Each plant lives until the check that follows it, milliseconds (the prompt's
		// git status that starts within them reads it), and the process gets two: its first
		// and the one that gets it stopped. After that, never.
		var before []string
		for _, p := range prompts {
			switch {
			case p.ran && !p.start.Before(stopped):
				t.Errorf("a git status started at %s, after the process was stopped at %s, ran the plant", p.start.Format("15:04:05.000"), stopped.Format("15:04:05.000"))
			case p.ran:
				before = append(before, p.start.Format("15:04:05.000"))
			}
		}
		if len(before) > 2 {
			t.Errorf("%d of the person's %d git status ran the plants before the process was stopped (at %v); it has two", len(before), len(prompts), before)
		}
		t.Logf("%d git status; %d ran a plant in its milliseconds (%v); the process was stopped at %s", len(prompts), len(before), before, stopped.Format("15:04:05.000"))
		if ran := w.afterwards(again, marks); len(ran) > 0 {
			t.Errorf("afterwards the person's git ran %v", ran)
		}
		_, errs, _ := w.run("session", "exec", id, "true")
		if !strings.Contains(errs, "planted again") || !strings.Contains(errs, filepath.Join(again, ".git")) {
			t.Errorf("the next result does not say the sandbox was stopped for planting again:\n%s", errs)
		}
	})
}

// Once the session watches its folders, a check after a command in which nothing git reads
// changed does not walk them again. Whatever a command then plants is still found before its
// result returns: a repository made in the private tmp and moved in, one made deep in new
// folders at once, settings added to a repository an earlier command made, a hook.
func TestWatchedSessionStillFindsPlants(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	marks := w.marks()
	id := w.publishingSession("--rw", w.project)
	exec := func(script string) string {
		t.Helper()
		_, errs, _ := w.run("session", "exec", id, "cd "+w.project+" && "+script)
		return errs
	}
	exec("git init -q earlier")
	for range 3 {
		exec("echo x >> notes.txt")
	}
	for _, tc := range []struct{ name, script, dir, planted string }{
		{"moved_in", "git init -q /tmp/r && cd /tmp/r && " + plant(marks) + " && mv /tmp/r " + w.project + "/moved", "moved", ".git/config"},
		{"deep_at_once", "mkdir -p d/e/f && git init -q d/e/f/g && cd d/e/f/g && " + plant(marks), "d/e/f/g", ".git/config"},
		{"earlier_repository", "cd earlier && " + plant(marks), "earlier", ".git/config"},
		{"hook_only", "cd earlier && printf '#!/bin/sh\\ntouch " + marks + "/pre-commit\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit", "earlier", ".git/hooks/pre-commit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := exec(tc.script)
			dir := filepath.Join(w.project, tc.dir)
			if !strings.Contains(errs, filepath.Join(dir, tc.planted)) {
				t.Errorf("the result does not name %s moved aside:\n%s", tc.planted, errs)
			}
			if ran := w.afterwards(dir, marks); len(ran) > 0 {
				t.Errorf("the person's git ran %v", ran)
			}
		})
	}
}

// git submodule update --init in the person's repository: git cannot register the submodule's
// url in its read-only .git/config, so OpenWorker registers it outside (its url, from
// .gitmodules, and nothing else) and says to run the command again, which clones it. A
// .gitmodules a command wrote can name no program to run.
func TestSubmoduleInitInThePersonsRepository(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	sub := filepath.Join(filepath.Dir(w.project), "sub")
	w.repository(sub)
	w.repository(w.project)
	if out, err := w.git(w.project, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "sub"); err != nil {
		t.Fatal(err, out)
	}
	w.git(w.project, "commit", "-qm", "sub")
	// As a fresh clone has it: the submodule named in .gitmodules, not registered, not cloned.
	os.RemoveAll(filepath.Join(w.project, "sub"))
	os.RemoveAll(filepath.Join(w.project, ".git", "modules"))
	os.Mkdir(filepath.Join(w.project, "sub"), 0o755)
	w.git(w.project, "config", "--remove-section", "submodule.sub")
	update := "git -c protocol.file.allow=always submodule update --init"
	_, errs, _ := w.run("run", "--rw", ".", "--ro", sub, "--", "sh", "-c", update)
	if !strings.Contains(errs, "registered the submodule sub") {
		t.Fatalf("the result does not say the submodule was registered:\n%s", errs)
	}
	if got, _ := w.git(w.project, "config", "--get", "submodule.sub.url"); strings.TrimSpace(got) != sub {
		t.Errorf("submodule.sub.url = %q, want %q", got, sub)
	}
	out, errs, code := w.run("run", "--rw", ".", "--ro", sub, "--", "sh", "-c", update+" && git -C sub log -1 --format=%s")
	if code != 0 || !strings.Contains(out, "first") || strings.Contains(errs, "moved aside") {
		t.Fatalf("the second run: %d\n%s\n%s", code, out, errs)
	}

	// A submodule whose .gitmodules a command rewrote to update by running a program gets
	// its url registered, never the program.
	marks := w.marks()
	w.git(w.project, "config", "--remove-section", "submodule.sub")
	w.run("run", "--", "sh", "-c", `git config -f .gitmodules submodule.sub.update '!touch `+marks+`/update' && `+update)
	if got, _ := w.git(w.project, "config", "--get", "submodule.sub.update"); got != "" {
		t.Errorf("submodule.sub.update = %q was registered", got)
	}
	w.git(w.project, "-c", "protocol.file.allow=always", "submodule", "update")
	if _, err := os.Stat(filepath.Join(marks, "update")); err == nil {
		t.Errorf("the person's git submodule update ran the program a command named")
	}
}
