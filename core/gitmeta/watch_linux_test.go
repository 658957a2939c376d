package gitmeta

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// told waits for w to tell of a change, and says whether it did within d.
func told(w *Watcher, d time.Duration) bool {
	select {
	case <-w.C:
		return true
	case <-time.After(d):
		return false
	}
}

// The watcher tells of what may change git's reading as it happens, deep in folders made
// after it started and in folders moved in, and not of a project's own files.
func TestWatcherTells(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	src := filepath.Join(root, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := Watch([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	quiet := func(what string) {
		t.Helper()
		for told(w, 50*time.Millisecond) {
		}
		if told(w, 200*time.Millisecond) {
			t.Errorf("%s: told", what)
		}
	}
	step := func(what string, do func()) {
		t.Helper()
		for told(w, 50*time.Millisecond) {
		}
		do()
		if !told(w, 2*time.Second) {
			t.Errorf("%s: not told", what)
		}
	}
	step("a folder made", func() { os.MkdirAll(filepath.Join(src, "a", "b", "c"), 0o755) })
	step("a repository's folder, deep in folders made since", func() { os.Mkdir(filepath.Join(src, "a", "b", "c", ".git"), 0o755) })
	step("its settings", func() { write(t, filepath.Join(src, "a", "b", "c", ".git", "config"), "[core]\n") })
	step("a hook", func() { write(t, filepath.Join(src, "a", "b", "c", ".git", "hooks", "pre-commit"), "#!/bin/sh\n") })
	step("the settings written again", func() {
		f, _ := os.OpenFile(filepath.Join(src, "a", "b", "c", ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("\tfsmonitor = x\n")
		f.Close()
	})
	quiet("nothing changed")
	write(t, filepath.Join(src, "a", "main.go"), "package main\n")
	quiet("a project's file")
	write(t, filepath.Join(src, "a", "b", "c", ".git", "index"), "x")
	write(t, filepath.Join(src, "a", "b", "c", ".git", "HEAD"), "ref: refs/heads/x\n")
	quiet("what git status and git checkout write in a repository's folder")
	step("a repository's folder made whole where there was none", func() { write(t, filepath.Join(src, "a", "HEAD"), "ref: refs/heads/main\n") })
	step("rebase steps", func() {
		write(t, filepath.Join(src, "a", "b", "c", ".git", "rebase-merge", "git-rebase-todo"), "exec x\n")
	})
	repo(t, filepath.Join(outside, "r"))
	step("a repository moved in", func() { os.Rename(filepath.Join(outside, "r"), filepath.Join(src, "r")) })
	step("its settings, where it arrived", func() { write(t, filepath.Join(src, "r", ".git", "config"), "[core]\n\tfsmonitor = y\n") })
	step("a folder moved away", func() { os.Rename(filepath.Join(src, "a"), filepath.Join(src, "a2")) })
	step("settings in the folder at its new path", func() { write(t, filepath.Join(src, "a2", "b", "c", ".git", "config.worktree"), "") })
	step("an agent host's settings", func() { write(t, filepath.Join(src, ".mcp.json"), "{}") })
	if u := w.Unwatched(); u != "" {
		t.Errorf("unwatched %q", u)
	}
	// Settle takes in, at once, what was made before it: a change is counted without
	// waiting for the reading goroutine, and nothing else is.
	told1, whole := w.Settle()
	write(t, filepath.Join(src, "a2", "b", "c", ".git", "config"), "[core]\n")
	told2, _ := w.Settle()
	write(t, filepath.Join(src, "a2", "notes.txt"), "x")
	told3, _ := w.Settle()
	if !whole || told2 == told1 || told3 != told2 {
		t.Errorf("Settle: %d, %d (whole %v), %d", told1, told2, whole, told3)
	}
	for told(w, 50*time.Millisecond) {
	}
	w.Close()
	if told(w, 100*time.Millisecond) {
		t.Errorf("told after Close")
	}
}

// BenchmarkPlantToMove measures how long a setting a command plants lives, in the project of
// BenchmarkCheck, where the session watches: from its write to its move aside, through the
// watcher's event and a check.
func BenchmarkPlantToMove(b *testing.B) {
	root, q := b.TempDir(), b.TempDir()
	s := benchTree(b, root)
	w, err := Watch([]string{root})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	made := filepath.Join(root, "repo0", "made")
	tb := &testing.T{}
	repo(tb, made)
	for told(w, 100*time.Millisecond) {
	}
	_, s = s.Check(DefaultBounds, q)
	config := filepath.Join(made, ".git", "config")
	b.ResetTimer()
	for b.Loop() {
		if err := os.WriteFile(config, []byte("[core]\n\tfsmonitor = x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		for {
			<-w.C
			var moved []Moved
			moved, s = s.Check(DefaultBounds, q)
			if len(moved) > 0 {
				break
			}
		}
	}
}

// Past its bound a watcher watches no more folders and says which it left: the session then
// walks after every command, as where nothing is watched.
func TestWatcherBound(t *testing.T) {
	root := t.TempDir()
	for i := range 5 {
		if err := os.MkdirAll(filepath.Join(root, "d"+itoa(int64(i))), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Watch([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, whole := w.Settle(); !whole || w.Unwatched() != "" {
		t.Fatalf("6 folders: unwatched %q", w.Unwatched())
	}
	w.w.mu.Lock()
	w.w.max = len(w.w.paths)
	w.w.mu.Unlock()
	if err := os.Mkdir(filepath.Join(root, "past"), 0o755); err != nil {
		t.Fatal(err)
	}
	told(w, 2*time.Second)
	if _, whole := w.Settle(); whole || w.Unwatched() != filepath.Join(root, "past") {
		t.Errorf("past the bound: whole %v, unwatched %q", whole, w.Unwatched())
	}
	if b := watchBound(); b <= 0 || b > maxWatched {
		t.Errorf("watchBound() = %d", b)
	}
}
