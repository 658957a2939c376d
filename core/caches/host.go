package caches

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/openworker/openworker/core/internal/regularfile"
)

// What of the person's own caches a session may read, tool by tool. Each tool's cache is
// written by the tool whenever it runs (npm's index, pip's HTTP cache, uv's and cargo's
// locks), so none can be given to a session as it is: a session would write it, and the
// person's tools outside would then run what it wrote. A cache is used only where the tool
// can read it as a source of packages without writing it, and where it holds packages and
// nothing else:
//
//   - Go: the module download cache (GOMODCACHE/cache/download: modules' zips, go.mod files
//     and checksum-database tiles) is a module proxy in Go's own layout, which the go command
//     reads through a file:// GOPROXY and never writes; every zip it takes is checked
//     against go.sum or the checksum database as one from the network is. It goes first in
//     the session's GOPROXY, before the network. The build cache is not read: Go has no
//     read-only second build cache, and it holds the person's own code compiled.
//   - pip: --find-links reads a folder of wheels and source archives, but pip's cache is not
//     one (an HTTP cache and built wheels in folders named by hashes): nothing to read.
//   - npm: its cache is one folder, which it writes on every install (its index, its logs);
//     there is no read-only second cache, and an offline mirror is yarn 1's, made by the
//     person on purpose. Not read.
//   - uv: takes a lock in its cache before reading it. Not read.
//   - cargo: its registry cache is read only through the index it was fetched with, which
//     a local-registry source cannot use. Not read.

// GoDownloads is the person's Go module download cache, GOMODCACHE/cache/download, where
// the go command outside finds GOMODCACHE: the environment env (OpenWorker's own), then the
// go command's settings file (go env -w), then GOPATH's first folder, then ~/go. It returns
// "" when there is no such folder.
func GoDownloads(env []string, home, goos string) string {
	get := goSettings(env, home, goos)
	mod := get("GOMODCACHE")
	if mod == "" {
		gopath := filepath.SplitList(get("GOPATH"))
		first := ""
		if len(gopath) > 0 {
			first = gopath[0]
		}
		if first == "" && home != "" {
			first = filepath.Join(home, "go")
		}
		if first == "" {
			return ""
		}
		mod = filepath.Join(first, "pkg", "mod")
	}
	if !filepath.IsAbs(mod) {
		return ""
	}
	dl := filepath.Join(filepath.Clean(mod), "cache", "download")
	if fi, err := os.Stat(dl); err != nil || !fi.IsDir() {
		return ""
	}
	return dl
}

// goSettings looks a go setting up as the go command does: the environment first, then its
// settings file (GOENV, or go/env in the user's configuration folder; GOENV=off: none).
func goSettings(env []string, home, goos string) func(string) string {
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	file := vars["GOENV"]
	if file == "" {
		conf := ""
		switch {
		case goos == "darwin" && home != "":
			conf = filepath.Join(home, "Library", "Application Support")
		case filepath.IsAbs(vars["XDG_CONFIG_HOME"]):
			conf = vars["XDG_CONFIG_HOME"]
		case home != "":
			conf = filepath.Join(home, ".config")
		}
		if conf != "" {
			file = filepath.Join(conf, "go", "env")
		}
	}
	saved := map[string]string{}
	if file != "off" && filepath.IsAbs(file) {
		saved = readGoEnv(file)
	}
	return func(name string) string {
		if v := vars[name]; v != "" {
			return v
		}
		return saved[name]
	}
}

// readGoEnv reads a go settings file (KEY=VALUE lines, as go env -w and go.env write them).
func readGoEnv(path string) map[string]string {
	out := map[string]string{}
	b, err := regularfile.Read(path, 64<<10)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// GoRootProxy is the GOPROXY the go installation at goroot uses when nothing sets it: its
// go.env (Go 1.21 and later). It returns "" when it says none.
func GoRootProxy(goroot string) string {
	return readGoEnv(filepath.Join(goroot, "go.env"))["GOPROXY"]
}

// GoProxy is a session's GOPROXY that reads the person's download cache (GoDownloads)
// before then, what the session's go would use without it (GoRootProxy). It returns "" (the
// session's go keeps its own) when either is missing, or when the folder's path cannot be
// written in the list (it holds one of its separators) or then names credentials (a URL
// with a user in it, which the session's environment must not carry).
func GoProxy(downloads, then string) string {
	if downloads == "" || then == "" || !filepath.IsAbs(downloads) || strings.ContainsAny(downloads, ",|") {
		return ""
	}
	for _, p := range strings.FieldsFunc(then, func(r rune) bool { return r == ',' || r == '|' }) {
		if u, err := url.Parse(p); err != nil || u.User != nil {
			return ""
		}
	}
	return (&url.URL{Scheme: "file", Path: downloads}).String() + "," + then
}

// FindGo is the go program a session whose PATH is path runs, resolved, and its GOROOT: the
// first go on path that is a regular, executable file. It returns "" when there is none, or
// when the first lies in one of skip (folders a session may write, whose go.env a command
// could have written).
func FindGo(path []string, skip []string) (goBin, goroot string) {
	for _, dir := range path {
		if !filepath.IsAbs(dir) {
			continue
		}
		// Most folders of a PATH hold no go: one look each, before any link is resolved.
		if _, err := os.Lstat(filepath.Join(dir, "go")); err != nil {
			continue
		}
		r, err := filepath.EvalSymlinks(filepath.Join(dir, "go"))
		if err != nil {
			continue
		}
		fi, err := os.Stat(r)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			continue
		}
		for _, s := range skip {
			if s != "" && (r == s || strings.HasPrefix(r, s+"/")) {
				return "", ""
			}
		}
		return r, filepath.Dir(filepath.Dir(r))
	}
	return "", ""
}
