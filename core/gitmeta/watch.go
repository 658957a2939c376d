package gitmeta

import "errors"

// A Watcher tells, as it happens, that something under its roots may have changed what git
// reads: a folder made or moved in (which may hold a repository), a file or folder by one of
// the names git's metadata has, anything in a repository's folder. It says nothing of what
// changed; the check that follows (Snapshot.Check) finds out. Where a command writes a
// setting or a hook, the check then runs within milliseconds rather than at the next timer
// tick or the command's end, so that the person's git, run meanwhile (a shell prompt runs git
// status on every Enter), finds it moved aside.
//
// Changes are told on C, coalesced: one value waits there however many changes came since
// it was last taken.
type Watcher struct {
	C <-chan struct{}
	w *watcher
}

// ErrNoWatch is returned where no watcher can be made: on a system without one here, or when
// the kernel refuses one.
var ErrNoWatch = errors.New("changes cannot be watched here")

// maxWatched bounds how many folders a Watcher watches (each costs the kernel about a
// kilobyte). Past it, changes are found by the checks after each command and on the timer.
const maxWatched = 65536

// metaNames are the names whose change may change what git or an agent host reads: a
// repository's folder and what is in it, an agent host's project settings. A change to any
// other file is a project's, and no check follows it.
var metaNames = map[string]bool{
	".git": true, "config": true, "config.worktree": true, "commondir": true, "HEAD": true,
	"hooks": true, "objects": true, "worktrees": true, "modules": true,
	".claude": true, ".codex": true, ".gemini": true, ".cursor": true, ".mcp.json": true,
}

// gitDirNames are the names whose change, in a repository's own folder, may change what git
// runs or obeys: not HEAD, the index or the refs, which every checkout and commit writes.
var gitDirNames = map[string]bool{
	"config": true, "config.worktree": true, "commondir": true, "hooks": true, "worktrees": true,
	"modules": true, "rebase-merge": true, "rebase-apply": true, "sequencer": true, "git-rebase-todo": true,
	"todo": true, "gitdir": true,
}

// unwatched are the folders of a repository's folder whose changes never change what git
// runs or obeys, and which hold most of its folders: they are not watched.
var unwatched = map[string]bool{"objects": true, "refs": true, "logs": true, "lfs": true}
