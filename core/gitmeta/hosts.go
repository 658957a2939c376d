package gitmeta

import (
	"errors"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// Agent hosts obey settings in the project too: Claude Code's .claude (hooks, an
// apiKeyHelper, a shell prefix in its env) and .mcp.json (MCP servers it starts), Codex's
// .codex (MCP servers), gemini-cli's .gemini and Cursor's .cursor (hooks, MCP servers). The
// person's host runs what they name, outside the sandbox, when it starts in the project
// (and Claude Code as soon as the file changes). They are kept as repository metadata is:
// those there when the sandbox is made are bound read-only, and one a command makes is moved
// aside after the command.

// HostSettings are the names agent hosts look for in a project's folder, and whether each is
// a folder.
var HostSettings = []struct {
	Name string
	Dir  bool
}{{".claude", true}, {".mcp.json", false}, {".codex", true}, {".gemini", true}, {".cursor", true}}

// HostSetting is an agent host's settings file or folder in a project.
const HostSetting Kind = "an agent host's settings"

// HostPlaces are the folders where agent hosts look for a project's settings: the roots and
// the folder of every repository found (a host takes a repository's top for the project).
func (s *Snapshot) HostPlaces() []string {
	places := slices.Clone(s.roots)
	for d := range s.gitDirs {
		if filepath.Base(d) == ".git" {
			places = append(places, filepath.Dir(d))
		}
	}
	for _, e := range s.Entries {
		if e.Kind == GitFile {
			places = append(places, filepath.Dir(e.Path))
		}
	}
	slices.Sort(places)
	return slices.Compact(places)
}

// FindHostSettings returns the agent hosts' settings in places as they are: regular files
// and folders (not links, which a bind cannot name without following).
func FindHostSettings(places []string) []Entry {
	var out []Entry
	for _, p := range places {
		for _, h := range HostSettings {
			path := filepath.Join(p, h.Name)
			var st unix.Stat_t
			if unix.Lstat(path, &st) != nil {
				continue
			}
			typ := st.Mode & unix.S_IFMT
			if h.Dir && typ == unix.S_IFDIR || !h.Dir && typ == unix.S_IFREG {
				out = append(out, Entry{Path: path, Kind: HostSetting, Dev: uint64(st.Dev), Ino: uint64(st.Ino), stamp: stampOf(&st)})
			}
		}
	}
	return out
}

// CheckHostSettings moves aside, into quarantine, the agent hosts' settings in places that
// are not among known (what was there when the sandbox was made, which the sandbox holds
// read-only): a command made them, and the person's host would run what they name.
func CheckHostSettings(places []string, known []Entry, quarantine string) []Moved {
	q := &quarantiner{dir: quarantine}
	var moved []Moved
	for _, p := range places {
		for _, h := range HostSettings {
			path := filepath.Join(p, h.Name)
			var st unix.Stat_t
			if unix.Lstat(path, &st) != nil {
				continue
			}
			if slices.ContainsFunc(known, func(k Entry) bool { return k.Path == path && k.Ino == uint64(st.Ino) && k.Dev == uint64(st.Dev) }) {
				continue
			}
			e := Entry{Path: path, Kind: HostSetting}
			why := "made by a command; the person's agent host would run what it names"
			m := q.move(e, why)
			if m.Err != nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				// A folder on another file system than the quarantine's: renamed where it is,
				// to a name no host looks for.
				m = renameAside(path, e.Kind, why)
			}
			moved = append(moved, m)
		}
	}
	return moved
}

// renameAside renames path, in its folder, to a name no host looks for.
func renameAside(path string, kind Kind, why string) Moved {
	m := Moved{Path: path, Kind: kind, Why: why}
	for i := 1; i < 100; i++ {
		to := path + ".openworker-moved-" + strconv.Itoa(i)
		var st unix.Stat_t
		if unix.Lstat(to, &st) == nil {
			continue
		}
		if err := unix.Rename(path, to); err != nil {
			m.Err = err
			return m
		}
		m.To = to
		return m
	}
	m.Err = errors.New("no free name beside it")
	return m
}
