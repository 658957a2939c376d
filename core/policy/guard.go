package policy

import (
	"github.com/openworker/openworker/core/gitmeta"

	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// SharedLoginsHint says where a person shares one login on purpose, instead of a folder of
// them.
const SharedLoginsHint = "share a login on purpose instead, one at a time: Settings ▸ Sandbox ▸ Explicit config and keys exposed to Agent, or [[sandbox_credentials]] in the settings file"

// loginFolders are the folders under the home folder whose purpose is logins. A session folder
// or toolchain that is one, holds one or lies inside one would hand every key in it to every
// command.
var loginFolders = []string{
	".ssh", ".aws", ".gnupg", ".kube", ".docker", ".config/gh", ".config/gcloud", ".terraform.d",
	".azure", ".password-store", ".config/op", "Library/Keychains",
}

// LoginFolders returns the login folders under home (relative to it).
func LoginFolders() []string { return append([]string(nil), loginFolders...) }

// guarded is a folder no session folder may be, hold or lie inside, and why.
type guarded struct {
	path string // resolved
	what string // what it is, as a person says it
	why  string // what a sandboxed command could do with it
	// writeOnly: only a writable folder is refused. The program is no secret (a runner
	// started from it is shown read-only inside), so a toolchain such as ~/go that holds
	// it stays usable; changing it is what must never happen.
	writeOnly bool
}

// guards lists the app's own places: its state folder, the settings file's folder, the audit
// trail's folder and its program.
func guards(opts Options) []guarded {
	var g []guarded
	add := func(path, what, why string) {
		if path != "" {
			g = append(g, guarded{path: resolveLoose(path), what: what, why: why})
		}
	}
	add(opts.StateDir, "OpenWorker's own state folder", "a sandboxed command could read its keys and rewrite its session records")
	for _, d := range opts.ConfigDirs {
		add(d, "the folder of OpenWorker's settings file", "a sandboxed command could rewrite the settings (open the network for every later session)")
	}
	add(opts.AuditDir, "the folder of OpenWorker's audit trail", "a sandboxed command could read every session's commands or rewrite the record")
	program := func(f, what, why string) {
		add(f, what, why)
		g[len(g)-1].writeOnly = true
		// A Mac app's program lies in its bundle, whose other files it loads.
		if i := strings.Index(f, ".app/Contents/"); i >= 0 {
			add(f[:i+len(".app")], "OpenWorker's app", "a sandboxed command could change the app that runs outside every sandbox")
			g[len(g)-1].writeOnly = true
		}
	}
	for _, f := range opts.RunnerFiles {
		program(f, "OpenWorker's own program", "a sandboxed command could replace the program that runs outside every sandbox")
	}
	for _, f := range opts.Programs {
		program(f, "the program of the client that asked for this session",
			"a sandboxed command could replace a program that runs outside every sandbox (an agent host starts an MCP server on every launch)")
	}
	return g
}

// shown is how a message names a folder: as the person gave it, and where a symlink made it
// another, that one too. abs is given made absolute.
func shown(given, abs, r string) string {
	if filepath.Clean(abs) == r {
		return given
	}
	return fmt.Sprintf("%s (which is %s)", given, r)
}

// login is one login folder: its name under the home folder and where it is, as written and
// as resolved (~/.ssh may be a link into a dotfiles folder).
type login struct {
	rel   string
	paths []string
}

// logins locates the login folders under home (resolved). Only a link below the home folder
// can move one, so it is resolved only where one is met: a session starts with every check.
func logins(home string) []login {
	out := make([]login, 0, len(loginFolders))
	for _, rel := range loginFolders {
		lexical := filepath.Join(home, rel)
		l := login{rel: rel, paths: []string{lexical}}
		p := home
		for _, c := range strings.Split(rel, "/") {
			p = filepath.Join(p, c)
			fi, err := os.Lstat(p)
			if err != nil {
				break // nothing further on can be a link
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				l.paths = append(l.paths, resolveLoose(lexical))
				break
			}
		}
		out = append(out, l)
	}
	return out
}

// refuse says why the resolved folder r (named name, see shown) may not be a session folder
// of kind, or returns nil. home is the resolved home folder, g and ls its guarded places.
func refuse(kind, name, r, home, goos string, g []guarded, ls []login) error {
	if Within(r, home) {
		if r == home {
			return fmt.Errorf("%s folder %s is your home folder; share a project folder inside it instead", kind, name)
		}
		return fmt.Errorf("%s folder %s contains your home folder %s; share a project folder inside it instead", kind, name, home)
	}
	// The machine's own folders come first: their reason says most (the sandbox's /tmp is
	// its own). The home folder's own folders are the person's, whatever machine folder
	// holds it (a service account's home under /var/lib).
	for _, s := range systemFolders(goos) {
		switch {
		case Within(home, r) || !s.readOnly && kind != "writable":
		case r == s.path:
			return errors.New(s.message(kind, name, true))
		case s.inside && Within(s.path, r):
			return errors.New(s.message(kind, name, false))
		}
	}
	for _, x := range g {
		switch {
		case x.writeOnly && kind != "writable":
		case r == x.path:
			return fmt.Errorf("%s folder %s is %s: %s; share a folder that does not hold it", kind, name, x.what, x.why)
		case Within(r, x.path):
			return fmt.Errorf("%s folder %s contains %s %s: %s; share a folder that does not hold it", kind, name, x.what, x.path, x.why)
		case Within(x.path, r):
			return fmt.Errorf("%s folder %s lies inside %s %s: %s; share a folder elsewhere", kind, name, x.what, x.path, x.why)
		}
	}
	for _, lf := range ls {
		for _, l := range lf.paths {
			switch {
			case r == l:
				return fmt.Errorf("%s folder %s is ~/%s, which holds logins a sandboxed command would read; %s", kind, name, lf.rel, SharedLoginsHint)
			case Within(r, l):
				return fmt.Errorf("%s folder %s contains ~/%s, which holds logins a sandboxed command would read; %s", kind, name, lf.rel, SharedLoginsHint)
			case Within(l, r):
				return fmt.Errorf("%s folder %s lies inside ~/%s, which holds logins a sandboxed command would read; %s", kind, name, lf.rel, SharedLoginsHint)
			}
		}
	}
	return nil
}

// obeyed is a file under the home folder that the person's own programs run or obey outside
// the sandbox (git's settings, the shell's startup files, login files), and every path that decides what it
// is: each link on the way and the place it leads (see Chain). No writable folder may hold
// any of them: a dotfiles folder shared writable would otherwise let a command rewrite what
// the person's git or package manager does next, outside the wall.
//
// Refusing is chosen over binding the files read-only over their real paths: a bind (or a
// Seatbelt deny on the path) inside a writable folder still lets a command rename the
// folder that holds the file and put its own where the link leads; a file that does not
// exist yet (~/.config/git linked to an empty folder) cannot be bound at all; and the rule
// is then the same on every OS. Sharing the folder read-only stays possible.
type obeyed struct {
	name  string // as a person says it: ~/.gitconfig
	paths []string
	why   string
}

const (
	gitSettingsWhy = "your git obeys it outside the sandbox, so a command could make it run a program of its own (core.fsmonitor, core.hooksPath) in every repository you open"
	toolLoginWhy   = "the toolchain obeys it outside the sandbox, so a command could swap the registry or its login your next install uses"
	shellWhy       = "your shell runs it outside the sandbox, so a command could make every terminal you open run a program of its own"
)

// shellStartup are the files a login or interactive shell runs, under the home folder: a
// dotfiles folder holds them as often as git's settings.
var shellStartup = []string{
	".profile", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout",
	".zshenv", ".zprofile", ".zshrc", ".zlogin", ".zlogout", ".config/fish/config.fish",
}

// homeLogins are the package managers' login files kept directly under the home folder,
// which they obey as they do a toolchain's (a registry, a script shell, a token).
var homeLogins = []string{".npmrc", ".yarnrc.yml", ".pypirc", ".netrc", ".git-credentials", ".gem/credentials", ".config/pip/pip.conf", ".pip/pip.conf"}

// obeyedFiles lists the files under home (resolved) that no writable folder may hold: git's
// settings, the shell's startup files, the package managers' login files in the home folder,
// and the login files of the toolchains the product knows and of those enabled (toolchains,
// as Options.Toolchains names them).
func obeyedFiles(home string, toolchains []string) []obeyed {
	var out []obeyed
	for _, list := range []struct {
		rels []string
		why  string
	}{{GitSettings, gitSettingsWhy}, {shellStartup, shellWhy}, {homeLogins, toolLoginWhy}} {
		for _, rel := range list.rels {
			out = append(out, obeyed{name: "~/" + rel, paths: Chain(filepath.Join(home, rel)), why: list.why})
		}
	}
	// What git's settings name (other settings files they include, a hooks folder, a
	// template folder, an attributes file) is obeyed as they are.
	var gitFiles []string
	for _, rel := range GitSettings {
		if rel == ".gitconfig" || rel == ".config/git/config" {
			gitFiles = append(gitFiles, filepath.Join(home, rel))
		}
	}
	named, _ := gitmeta.GlobalSettingsPaths(gitFiles, home)
	for _, p := range named {
		name := p
		if rel, err := filepath.Rel(home, p); err == nil && filepath.IsLocal(rel) {
			name = "~/" + rel
		}
		out = append(out, obeyed{name: name + ", which your git's settings name", paths: Chain(p), why: gitSettingsWhy})
	}
	patterns := map[string][]string{}
	for rel, ps := range toolchainSecrets {
		patterns[filepath.Join(home, rel)] = ps
	}
	for _, t := range toolchains {
		if !filepath.IsAbs(t) {
			t = filepath.Join(home, t)
		}
		patterns[filepath.Clean(t)] = append(slices.Clone(patterns[filepath.Clean(t)]), anySecrets...)
	}
	dirs := slices.Sorted(maps.Keys(patterns))
	for _, dir := range dirs {
		if _, err := os.Lstat(dir); err != nil {
			// Nothing there, not even a link: what would be made there lies in the home
			// folder, which no session folder may hold.
			continue
		}
		for _, pattern := range patterns[dir] {
			files := []string{filepath.Join(dir, pattern)}
			if strings.ContainsAny(pattern, "*?[") {
				files, _ = filepath.Glob(files[0])
			}
			for _, f := range files {
				name := f
				if rel, err := filepath.Rel(home, f); err == nil && filepath.IsLocal(rel) {
					name = "~/" + rel
				}
				out = append(out, obeyed{name: name, paths: Chain(f), why: toolLoginWhy})
			}
		}
	}
	return out
}

// refuseObeyed says why the resolved writable folder r (named name) may not be shared
// writable because it holds one of obs, or returns nil.
func refuseObeyed(name, r string, obs []obeyed) error {
	for _, o := range obs {
		for _, p := range o.paths {
			if !Within(r, p) {
				continue
			}
			held := o.name
			if end := o.paths[len(o.paths)-1]; len(o.paths) > 1 {
				held = fmt.Sprintf("%s (which is %s)", o.name, end)
			}
			return fmt.Errorf("writable folder %s holds %s: %s; share a folder that does not hold it, or share this one read-only", name, held, o.why)
		}
	}
	return nil
}
