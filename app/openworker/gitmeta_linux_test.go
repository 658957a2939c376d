package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// Repository metadata is run and obeyed by the person's own git outside the wall: a hook or a
// core.fsmonitor a command plants must never run when the person uses git there afterwards.

// git runs the person's own git, outside the sandbox, in dir; it returns its output.
func (w *world) git(dir string, args ...string) (string, error) {
	w.t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(w.env, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@example.com",
		"GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@example.com")
	out, err := c.CombinedOutput()
	return string(out), err
}

// repository makes a repository with one commit, as the person has it before a session.
func (w *world) repository(dir string) {
	w.t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "first"}} {
		if out, err := w.git(dir, args...); err != nil {
			w.t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// marks makes the folder, outside every session, where what the person's git runs would
// leave a mark.
func (w *world) marks() string {
	w.t.Helper()
	marks := filepath.Join(filepath.Dir(w.home), "marks")
	if err := os.Mkdir(marks, 0o755); err != nil {
		w.t.Fatal(err)
	}
	return marks
}

// plant is a command that plants, in the repository at $PWD, a core.fsmonitor and the hooks
// a person's status, commit and checkout run; each would touch a marker file in marks.
func plant(marks string) string {
	return `mkdir -p .git/hooks; ` +
		`printf '[core]\n\tfsmonitor = "touch ` + marks + `/fsmonitor; false"\n' >> .git/config; ` +
		`for h in pre-commit post-checkout post-commit; do printf '#!/bin/sh\ntouch ` + marks + `/'$h'\n' > .git/hooks/$h; chmod +x .git/hooks/$h; done; true`
}

// afterwards is the person using git in dir after the session: nothing planted may run.
// It returns the markers of what ran, and removes them.
func (w *world) afterwards(dir, marks string) []string {
	w.t.Helper()
	defer func() {
		entries, _ := os.ReadDir(marks)
		for _, e := range entries {
			os.Remove(filepath.Join(marks, e.Name()))
		}
	}()
	for _, args := range [][]string{{"status"}, {"commit", "-q", "--allow-empty", "-m", "after"}, {"checkout", "-q", "-B", "later"}} {
		w.git(dir, args...)
	}
	var ran []string
	for _, m := range []string{"fsmonitor", "pre-commit", "post-checkout", "post-commit"} {
		if _, err := os.Stat(filepath.Join(marks, m)); err == nil {
			ran = append(ran, m)
		}
	}
	return ran
}

func TestGitMetadataPlantedIsNeverRunOutside(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	marks := w.marks()
	existing := filepath.Join(w.project, "existing")
	w.repository(existing)

	t.Run("existing_repository", func(t *testing.T) {
		_, errs, _ := w.run("run", "--", "sh", "-c", "cd existing && "+plant(marks))
		if ran := w.afterwards(existing, marks); len(ran) > 0 {
			t.Fatalf("the person's git ran what the sandbox planted: %v\n%s", ran, errs)
		}
		if b, _ := os.ReadFile(filepath.Join(existing, ".git", "config")); strings.Contains(string(b), "fsmonitor") {
			t.Fatalf(".git/config was written inside:\n%s", b)
		}
	})
	t.Run("existing_repository_moved_away", func(t *testing.T) {
		// The .git folder is anchored where it is: a command cannot move it aside to make
		// its own in its place, and the plant lands nowhere.
		out, errs, _ := w.run("run", "--", "sh", "-c", "cd existing && mv .git .git.old; cp -r .git .git.old 2>/dev/null; "+plant(marks))
		if ran := w.afterwards(existing, marks); len(ran) > 0 {
			t.Fatalf("the person's git ran what the sandbox planted: %v\n%s", ran, errs)
		}
		if !strings.Contains(out+errs, "Device or resource busy") {
			t.Errorf("moving .git aside was not refused:\n%s%s", out, errs)
		}
		if _, err := os.Stat(filepath.Join(existing, ".git", "HEAD")); err != nil {
			t.Errorf("the repository is not where it was: %v", err)
		}
	})
	t.Run("existing_repository_commondir", func(t *testing.T) {
		// A commondir file sends git to another folder's settings and hooks, past the binds.
		_, errs, _ := w.run("run", "--", "sh", "-c", `cd existing/.git && mkdir evil && cp -r objects refs evil/ && echo evil > commondir && cd evil && `+
			`printf '[core]\n\tfsmonitor = "touch `+marks+`/fsmonitor; false"\n' > config`)
		if ran := w.afterwards(existing, marks); len(ran) > 0 {
			t.Fatalf("the person's git ran what the sandbox planted: %v\n%s", ran, errs)
		}
		if !strings.Contains(errs, filepath.Join(existing, ".git", "commondir")) {
			t.Errorf("the result does not name the commondir file:\n%s", errs)
		}
	})
	t.Run("repository_made_inside", func(t *testing.T) {
		_, errs, _ := w.run("run", "--", "sh", "-c", "git init -q made && cd made && "+plant(marks))
		made := filepath.Join(w.project, "made")
		if ran := w.afterwards(made, marks); len(ran) > 0 {
			t.Fatalf("the person's git ran what the sandbox planted: %v\n%s", ran, errs)
		}
		for _, p := range []string{".git/config", ".git/hooks/pre-commit", ".git/hooks/post-checkout"} {
			if !strings.Contains(errs, filepath.Join(made, p)) {
				t.Errorf("the result does not name %s:\n%s", p, errs)
			}
		}
		// Each is kept where the person can look at it.
		moved, _ := filepath.Glob(filepath.Join(w.state, "quarantine", "*", strings.TrimPrefix(made, "/"), ".git", "hooks", "pre-commit"))
		if len(moved) != 1 {
			t.Errorf("the planted hook is not in the quarantine folder: %v", moved)
		}
	})
	t.Run("repository_past_a_node_modules_and_deep", func(t *testing.T) {
		// The command chooses how deep its repository lies and how much lies beside it:
		// neither puts it past the check.
		deep := "deep/a/b/c/d/e/f/g/h/i/j/k"
		_, errs, _ := w.run("run", "--", "sh", "-c", `mkdir -p deep/node_modules && (cd deep/node_modules && seq 60000 | xargs touch) && `+
			`git init -q `+deep+` && cd `+deep+` && `+plant(marks))
		made := filepath.Join(w.project, deep)
		if ran := w.afterwards(made, marks); len(ran) > 0 {
			t.Fatalf("the person's git ran what the sandbox planted: %v\n%s", ran, errs)
		}
		if !strings.Contains(errs, filepath.Join(made, ".git", "config")) || strings.Contains(errs, "check stopped") {
			t.Errorf("the result does not name the settings moved, or says the check stopped:\n%s", errs)
		}
	})
	t.Run("writable_when_asked", func(t *testing.T) {
		// The setting works: with it, the same command's plants stay, and would run.
		dir := filepath.Join(w.project, "asked")
		w.repository(dir)
		_, errs, _ := w.run("run", "--git-metadata", "writable", "--", "sh", "-c", "cd asked && "+plant(marks))
		if ran := w.afterwards(dir, marks); len(ran) == 0 {
			t.Fatalf("with --git-metadata writable nothing was planted:\n%s", errs)
		}
	})
}

// Everything else git does inside a repository stays possible; only its settings are not
// written, and the result says which setting allows it.
func TestGitWorksInsideButItsSettingsAreReadOnly(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	repo := filepath.Join(w.project, "repo")
	w.repository(repo)
	bare := filepath.Join(w.project, "bare.git")
	if out, err := w.git(w.project, "clone", "-q", "--bare", repo, bare); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if out, err := w.git(bare, "branch", "-q", "feature"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	script := `set -e
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com
cd repo
echo one > a.txt; git add a.txt; git commit -q -m one
git branch topic; git checkout -q topic; echo two > b.txt; git add b.txt; git commit -q -m two
git checkout -q main; git merge -q --no-edit topic
echo three >> a.txt; git stash -q; git stash pop -q; git commit -q -am three
git fetch -q ` + bare + ` feature; git merge -q --no-edit FETCH_HEAD
git init -q ../fresh; cd ../fresh; echo x > x; git add x; git commit -q -m x; git config user.name inside
git -c protocol.file.allow=always submodule add -q ` + bare + ` sub; git commit -q -m sub
git -c protocol.file.allow=always clone -q --recurse-submodules . ../cloned; git -C ../cloned/sub status -s
cd ../repo
git worktree add -q ../wt-feature topic; git -C ../wt-feature log -1 --format=%s >/dev/null
echo WORKED`
	out, errs, code := w.run("run", "--", "sh", "-c", script)
	if code != 0 || !strings.Contains(out, "WORKED") || strings.Contains(errs, "moved aside") {
		t.Fatalf("git inside failed, or what it made was moved aside: exit %d\n%s\n%s", code, out, errs)
	}
	for _, args := range [][]string{{"config", "user.name", "x"}, {"remote", "add", "origin", bare}} {
		out, errs, code := w.run("run", "--", "sh", "-c", "cd repo && git "+strings.Join(args, " "))
		if code == 0 {
			t.Errorf("git %v inside the existing repository worked:\n%s%s", args, out, errs)
		}
		if !strings.Contains(errs, "sandbox_git_metadata") || !strings.Contains(errs, "--git-metadata writable") {
			t.Errorf("git %v: the result does not name the setting that allows it:\n%s", args, errs)
		}
		if strings.Contains(errs, "Settings ▸") {
			t.Errorf("git %v: on Linux the result sends the person to a Mac's screen:\n%s", args, errs)
		}
	}
	if log, err := w.git(repo, "log", "--format=%s"); err != nil || !strings.Contains(log, "three") || !strings.Contains(log, "two") {
		t.Errorf("the commits made inside are not in the repository: %v\n%s", err, log)
	}
}

// A folder added to a running session gets the same: its repositories' settings are
// read-only inside. And what a process left running plants after the last command is moved
// aside when the session ends; the audit trail names it.
func TestGitMetadataAddedFolderAndSessionEnd(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	marks := w.marks()
	w.settings("sandbox_provider = \"linux\"\n")
	_, stop := w.daemon()
	defer stop()
	id, errs, code := w.run("session", "start", "--rw", w.project)
	id = strings.TrimSpace(id)
	if code != 0 || id == "" {
		t.Fatalf("session start: %d %s", code, errs)
	}
	added := filepath.Join(filepath.Dir(w.home), "added")
	w.repository(added)
	if _, errs, code := w.run("session", "add-folder", id, added); code != 0 {
		t.Fatalf("add-folder: %d %s", code, errs)
	}
	out, errs, code := w.run("session", "exec", id, "cd "+added+" && git config core.fsmonitor 'touch "+marks+"/fsmonitor'")
	if code == 0 || !strings.Contains(errs, "sandbox_git_metadata") {
		t.Fatalf("git config in the added folder: exit %d\n%s%s", code, out, errs)
	}
	// A process that outlives its command and plants a hook while no command runs: the
	// session moves it aside as it is made, without waiting for the next call, and says so
	// in the audit trail.
	movedAside := func(path string) {
		t.Helper()
		tstest.WaitFor(t, 10*time.Second, func() error {
			trail, _ := os.ReadFile(filepath.Join(w.state, "audit.jsonl"))
			if !strings.Contains(string(trail), `"git_metadata.moved"`) || !strings.Contains(string(trail), path) {
				return fmt.Errorf("the audit trail does not name %s moved aside", path)
			}
			if _, err := os.Stat(path); err == nil {
				return fmt.Errorf("%s is still there", path)
			}
			return nil
		})
	}
	early := filepath.Join(w.project, "early")
	if _, errs, code := w.run("session", "exec", id, "git init -q "+early+" && (sleep 1; cd "+early+" && "+plant(marks)+"; sleep 5) >/dev/null 2>&1 &"); code != 0 {
		t.Fatalf("exec: %d %s", code, errs)
	}
	// Every hook the process plants, each as it is made: the person's git runs after the
	// last (a git run in the same milliseconds as a plant is the window the watch leaves).
	for _, h := range []string{"pre-commit", "post-checkout", "post-commit"} {
		movedAside(filepath.Join(early, ".git", "hooks", h))
	}
	if ran := w.afterwards(early, marks); len(ran) > 0 {
		t.Fatalf("the person's git ran what a leftover process planted: %v", ran)
	}
	// A process that outlives the command plants a hook once the command has returned.
	made := filepath.Join(w.project, "late")
	if _, errs, code := w.run("session", "exec", id, "git init -q "+made+" && (sleep 1; cd "+made+" && "+plant(marks)+") >/dev/null 2>&1 &"); code != 0 {
		t.Fatalf("exec: %d %s", code, errs)
	}
	hook := filepath.Join(made, ".git", "hooks", "pre-commit")
	for _, h := range []string{"pre-commit", "post-checkout", "post-commit"} {
		movedAside(filepath.Join(made, ".git", "hooks", h))
	}
	if _, errs, code := w.run("session", "end", id); code != 0 {
		t.Fatalf("session end: %d %s", code, errs)
	}
	if ran := w.afterwards(made, marks); len(ran) > 0 {
		t.Fatalf("the person's git ran what the sandbox planted after its last command: %v", ran)
	}
	if ran := w.afterwards(added, marks); len(ran) > 0 {
		t.Fatalf("the person's git ran what the sandbox planted in the added folder: %v", ran)
	}
	trail, err := os.ReadFile(filepath.Join(w.state, "audit.jsonl"))
	if err != nil || !strings.Contains(string(trail), `"git_metadata.moved"`) || !strings.Contains(string(trail), hook) {
		t.Errorf("the audit trail does not name the hook moved aside at the end: %v\n%s", err, trail)
	}
}

// Each run keeps the walk of its folders in the state folder, and the next run of the same
// folders reads again only what changed since: a repository the person made between the
// two, deep in folders the kept walk holds, and the one the first run saw, are both
// read-only inside the second; what the second plants is moved aside all the same.
func TestKeptWalkStillProtects(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	deep := filepath.Join(w.project, "a", "b", "c")
	os.MkdirAll(deep, 0o755)
	w.repository(filepath.Join(w.project, "old"))
	// Older than a walk trusts a folder's stamp at.
	time.Sleep(3500 * time.Millisecond)
	before, _ := filepath.Glob(filepath.Join(w.state, "walks", "*"))
	if out, errs, code := w.run("run", "--", "true"); code != 0 {
		t.Fatalf("first run: %d %s %s", code, out, errs)
	}
	kept, _ := filepath.Glob(filepath.Join(w.state, "walks", "*"))
	if len(kept) != len(before)+1 {
		t.Fatalf("the first run kept %d walks, want one: %v (before: %v)", len(kept)-len(before), kept, before)
	}
	w.repository(filepath.Join(deep, "new"))
	marks := t.TempDir()
	for _, dir := range []string{filepath.Join(deep, "new"), filepath.Join(w.project, "old")} {
		rel, _ := filepath.Rel(w.project, dir)
		out, errs, _ := w.run("run", "--", "sh", "-c", "cd "+rel+" && git config user.name inside; echo x >> .git/config && echo WROTE")
		if strings.Contains(out, "WROTE") {
			t.Errorf("%s/.git/config was written inside, after a run kept its walk:\n%s%s", rel, out, errs)
		}
		w.run("run", "--", "sh", "-c", "cd "+rel+" && "+plant(marks))
		if ran := w.afterwards(dir, marks); len(ran) != 0 {
			t.Errorf("in %s, what the run planted ran outside: %v", rel, ran)
		}
	}
}

// What the person changes outside in their own repository's metadata while a session runs
// (a hooks folder set, a hook installed) is theirs: the sandbox cannot write there, and no
// check moves it aside.
func TestThePersonsOwnChangesStay(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	w.repository(w.project)
	id := w.publishingSession("--rw", w.project)
	if out, err := w.git(w.project, "config", "core.hooksPath", ".githooks"); err != nil {
		t.Fatalf("git config: %v %s", err, out)
	}
	hook := filepath.Join(w.project, ".git", "hooks", "pre-push")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, errs, _ := w.run("session", "exec", id, "echo hi > file")
	time.Sleep(500 * time.Millisecond)
	if out, _ := w.git(w.project, "config", "core.hooksPath"); strings.TrimSpace(out) != ".githooks" {
		t.Errorf("the person's core.hooksPath is gone (%q):\n%s", out, errs)
	}
	if _, err := os.Stat(hook); err != nil {
		t.Errorf("the person's hook is gone: %v\n%s", err, errs)
	}
	if strings.Contains(errs, "moved aside") {
		t.Errorf("the result says the person's own change was moved aside:\n%s", errs)
	}
}
