package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestChainNamesEveryLinkOnTheWay: whoever can replace any link on the way to a file can
// make it another file, so each is named, and so is where it leads, as far as it exists.
func TestChainNamesEveryLinkOnTheWay(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	must(t, os.MkdirAll(filepath.Join(root, "b", "real"), 0o755))
	must(t, os.Symlink(filepath.Join(root, "b", "mid"), filepath.Join(root, "a")))
	must(t, os.Symlink("real/file", filepath.Join(root, "b", "mid")))
	got := Chain(filepath.Join(root, "a"))
	want := []string{filepath.Join(root, "a"), filepath.Join(root, "b", "mid"), filepath.Join(root, "b", "real", "file")}
	if !slices.Equal(got, want) {
		t.Fatalf("Chain = %q, want %q", got, want)
	}
	if got := LinkFolders(filepath.Join(root, "a")); !slices.Equal(got, []string{root, filepath.Join(root, "b"), filepath.Join(root, "b", "real")}) {
		t.Fatalf("LinkFolders = %q", got)
	}
}

// TestObeyedFilesAreNeverHeldWritable: a writable folder may not hold git's settings or a
// toolchain's login file, nor a link on the way to one, however the home folder links to
// it; reading it is fine, and so is a folder beside it.
func TestObeyedFilesAreNeverHeldWritable(t *testing.T) {
	f := newFixture(t)
	dots := filepath.Join(f.root, "dotfiles")
	links := filepath.Join(f.root, "links")
	for _, d := range []string{filepath.Join(dots, "git"), filepath.Join(dots, "npm", "versions", "node", "v22", "etc"), links, filepath.Join(f.root, "beside")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(dots, "gitconfig"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(dots, "npm", "versions", "node", "v22", "etc", "npmrc"), nil, 0o644))
	// ~/.gitconfig leads through a link in another folder; ~/.config/git to a folder where
	// git's config does not exist yet; ~/.nvm to a folder of node versions.
	must(t, os.Symlink(filepath.Join(dots, "gitconfig"), filepath.Join(links, "gitconfig")))
	must(t, os.Symlink(filepath.Join(links, "gitconfig"), filepath.Join(f.home, ".gitconfig")))
	must(t, os.MkdirAll(filepath.Join(f.home, ".config"), 0o755))
	must(t, os.Symlink(filepath.Join(dots, "git"), filepath.Join(f.home, ".config", "git")))
	must(t, os.Symlink(filepath.Join(dots, "npm"), filepath.Join(f.home, ".nvm")))
	// The shell's startup file and npm's settings, each a link into a folder of its own.
	for _, name := range []string{"zshrc", "npmrc"} {
		must(t, os.MkdirAll(filepath.Join(f.root, name), 0o755))
		must(t, os.WriteFile(filepath.Join(f.root, name, name), nil, 0o644))
		must(t, os.Symlink(filepath.Join(f.root, name, name), filepath.Join(f.home, "."+name)))
	}
	tests := []struct {
		name string
		rw   string
		want string // "" when the folder may be shared writable
	}{
		{"target", dots, "holds ~/.gitconfig (which is " + filepath.Join(dots, "gitconfig") + ")"},
		{"link_on_the_way", links, "holds ~/.gitconfig (which is " + filepath.Join(dots, "gitconfig") + ")"},
		{"absent_git_config", filepath.Join(dots, "git"), "holds ~/.config/git/config (which is " + filepath.Join(dots, "git", "config") + ")"},
		{"toolchain_login", filepath.Join(dots, "npm", "versions"), "holds ~/.nvm/versions/node/v22/etc/npmrc"},
		{"shell_startup", filepath.Join(f.root, "zshrc"), "holds ~/.zshrc (which is " + filepath.Join(f.root, "zshrc", "zshrc") + "): your shell runs it"},
		{"home_login", filepath.Join(f.root, "npmrc"), "holds ~/.npmrc (which is " + filepath.Join(f.root, "npmrc", "npmrc") + ")"},
		{"beside", filepath.Join(f.root, "beside"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{UserHome: f.home, StateDir: f.state, GOOS: "linux", Writable: []string{tt.rw}}
			_, err := New(opts)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "outside the sandbox")):
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			opts.Writable, opts.ReadOnly = nil, []string{tt.rw}
			if _, err := New(opts); err != nil {
				t.Fatalf("read-only: %v", err)
			}
		})
	}
}

// TestWhatGitSettingsNameIsObeyed: a file or folder the person's git settings name — a
// settings file they include (include.path, includeIf), the hooks folder (core.hooksPath),
// the template folder new repositories copy (init.templateDir), the attributes file — is
// obeyed as the settings are: no writable folder may hold it, however far the includes go.
func TestWhatGitSettingsNameIsObeyed(t *testing.T) {
	f := newFixture(t)
	for _, d := range []string{"dots/git", "dots/hooks", "dots/template", "work/inc", "beside"} {
		must(t, os.MkdirAll(filepath.Join(f.root, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(f.home, ".gitconfig"), []byte("[include]\n\tpath = "+filepath.Join(f.root, "dots", "git", "extra")+"\n"+
		"[includeIf \"gitdir:~/work/\"]\n\tpath = "+filepath.Join(f.root, "work", "inc", "work.gitconfig")+"\n"+
		"[init]\n\ttemplateDir = "+filepath.Join(f.root, "dots", "template")+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(f.root, "dots", "git", "extra"), []byte("[core]\n\thooksPath = ../hooks\n\tattributesFile = "+filepath.Join(f.root, "beside", "attrs")+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(f.root, "work", "inc", "work.gitconfig"), []byte("[user]\n\temail = me@work.example\n"), 0o644))
	tests := []struct {
		name string
		rw   string
		want string
	}{
		{"included", filepath.Join(f.root, "dots", "git"), "extra, which your git's settings name"},
		{"included_if", filepath.Join(f.root, "work"), "work.gitconfig, which your git's settings name"},
		{"template", filepath.Join(f.root, "dots", "template"), "template, which your git's settings name"},
		{"attributes", filepath.Join(f.root, "beside"), "attrs, which your git's settings name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Options{UserHome: f.home, StateDir: f.state, GOOS: "linux", Writable: []string{tt.rw}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
