package gitmeta

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// pathKeys are the keys of git's settings whose value is a file or folder git reads or runs
// from: what they name is obeyed as the settings file itself is.
var pathKeys = map[string]bool{"include.path": true, "core.hookspath": true, "init.templatedir": true, "core.attributesfile": true}

// SettingsPaths returns the files and folders a git settings file's contents name that git
// reads or runs from — include.path and includeIf.*.path (other settings files), core.hooksPath
// (hooks), init.templateDir (a new repository's hooks and settings), core.attributesFile
// (which filters run) — as git resolves them: ~/ from home, a relative path from dir (the
// settings file's folder) for an include, as given otherwise. A hooks path that is relative
// is one in every repository's work tree, which git resolves there: it is returned in rel.
// A file that cannot be read names nothing.
func SettingsPaths(data []byte, dir, home string) (paths, rel []string) {
	keys, err := parseKeys(data)
	if err != nil {
		return nil, nil
	}
	for _, k := range keys {
		name := k.section + "." + k.name
		if k.section == "includeif" && k.name == "path" {
			name = "include.path"
		}
		if !pathKeys[name] || k.value == "" {
			continue
		}
		v := k.value
		switch {
		case v == "~" || strings.HasPrefix(v, "~/"):
			v = filepath.Join(home, strings.TrimPrefix(v, "~"))
		case filepath.IsAbs(v):
		case name == "include.path":
			v = filepath.Join(dir, v)
		case name == "core.hookspath":
			rel = append(rel, filepath.Clean(v))
			continue
		default:
			continue // relative to wherever git runs: nothing fixed to guard
		}
		paths = append(paths, filepath.Clean(v))
	}
	return paths, rel
}

// GlobalSettingsPaths follows the person's git settings files (and the files they include,
// at most depth deep) and returns every file and folder they name (see SettingsPaths), and
// the hooks paths that are relative to each work tree.
func GlobalSettingsPaths(files []string, home string) (paths, rel []string) {
	seen := map[string]bool{}
	var walk func(f string, depth int)
	walk = func(f string, depth int) {
		if seen[f] || depth > 10 {
			return
		}
		seen[f] = true
		data, err := readBounded(f, maxConfig)
		if err != nil {
			return
		}
		ps, rs := SettingsPaths(data, filepath.Dir(f), home)
		rel = append(rel, rs...)
		for _, p := range ps {
			paths = append(paths, p)
			walk(p, depth+1) // an include is a settings file; anything else reads as none
		}
	}
	for _, f := range files {
		walk(f, 0)
	}
	return paths, rel
}

// readBounded reads at most limit bytes of a regular file, following links (git does).
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, os.ErrInvalid
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// hooksPathOf is a settings file's core.hooksPath, the last one it sets, as written.
func hooksPathOf(data []byte) string {
	keys, err := parseKeys(data)
	if err != nil {
		return ""
	}
	hp := ""
	for _, k := range keys {
		if k.section == "core" && k.sub == "" && k.name == "hookspath" {
			hp = k.value
		}
	}
	return hp
}

// HookFolders returns the hooks folders that repositories found use instead of .git/hooks
// (core.hooksPath) where they lie in the walk's roots: the repository's own setting, and rel,
// the relative ones the person's git settings give every repository (resolved in each work
// tree, as git does). Husky's folder (.husky/_, whose hooks run the project's .husky/NAME
// scripts) comes with the folder that holds it. A command that wrote a hook there would have
// the person's next commit run it outside.
func (s *Snapshot) HookFolders(rel []string) []Entry {
	tops := map[string]string{} // work tree top -> its repository's own hooks path
	for d := range s.gitDirs {
		if filepath.Base(d) == ".git" {
			tops[filepath.Dir(d)] = ""
		}
	}
	for _, e := range s.Entries {
		if e.Kind == Config && filepath.Base(filepath.Dir(e.Path)) == ".git" && e.hooksPath != "" {
			tops[filepath.Dir(filepath.Dir(e.Path))] = e.hooksPath
		}
	}
	seen := map[string]bool{}
	var out []Entry
	add := func(path string) {
		path = filepath.Clean(path)
		if seen[path] || !slices.ContainsFunc(s.roots, func(r string) bool { return within(r, path) && path != r }) {
			return
		}
		seen[path] = true
		var st unix.Stat_t
		if unix.Lstat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return
		}
		out = append(out, Entry{Path: path, Kind: Hooks, Dev: uint64(st.Dev), Ino: uint64(st.Ino), stamp: stampOf(&st)})
	}
	for top, own := range tops {
		for _, hp := range append(slices.Clone(rel), own) {
			if hp == "" {
				continue
			}
			if !filepath.IsAbs(hp) {
				hp = filepath.Join(top, hp)
			}
			add(hp)
			if filepath.Base(hp) == "_" {
				add(filepath.Dir(hp))
			}
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return out
}
