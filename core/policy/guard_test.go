package policy

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestSensitiveFoldersAreRefused: no session folder or toolchain may be, hold or lie inside
// the app's own places, a folder of logins or one of the machine's own folders.
func TestSensitiveFoldersAreRefused(t *testing.T) {
	f := newFixture(t)
	config := filepath.Join(f.home, ".config", "openworker")
	audit := filepath.Join(f.root, "audit")
	program := filepath.Join(f.root, "tools", "bin", "openworker")
	dotfiles := filepath.Join(f.root, "dotfiles")
	for _, d := range []string{config, filepath.Join(config, "sub"), audit, filepath.Dir(program), f.state,
		filepath.Join(f.state, "sessions"), filepath.Join(f.home, ".ssh"), filepath.Join(f.home, ".aws", "sso"),
		filepath.Join(f.home, ".config", "gh"), filepath.Join(dotfiles, "gnupg"), filepath.Join(f.home, "tools")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(program, nil, 0o755))
	bundle := filepath.Join(f.home, "Applications", "OpenWorker.app")
	appProgram := filepath.Join(bundle, "Contents", "MacOS", "openworker")
	must(t, os.MkdirAll(filepath.Dir(appProgram), 0o755))
	must(t, os.MkdirAll(filepath.Join(bundle, "Contents", "Resources"), 0o755))
	must(t, os.WriteFile(appProgram, nil, 0o755))
	must(t, os.Symlink(filepath.Join(dotfiles, "gnupg"), filepath.Join(f.home, ".gnupg")))
	linkToSSH := filepath.Join(f.root, "innocent")
	must(t, os.Symlink(filepath.Join(f.home, ".ssh"), linkToSSH))
	must(t, os.Symlink(filepath.Join(f.home, ".ssh"), filepath.Join(f.home, ".cargo")))
	must(t, os.Symlink(filepath.Join(f.home, ".aws"), filepath.Join(f.home, "tools", "aws-tool")))
	base := Options{UserHome: f.home, StateDir: f.state, ConfigDirs: []string{config}, AuditDir: audit, RunnerFiles: []string{program, appProgram}, GOOS: "linux"}
	const logins = "Settings ▸ Sandbox ▸ Explicit config and keys exposed to Agent, or [[sandbox_credentials]]"
	tests := []struct {
		name     string
		rw, ro   []string
		tools    []string
		want     []string
		noConfig bool
	}{
		{name: "settings_folder", rw: []string{config}, want: []string{"is the folder of OpenWorker's settings file", "rewrite the settings"}},
		{name: "holds_settings", rw: []string{filepath.Join(f.home, ".config")}, want: []string{"contains the folder of OpenWorker's settings file " + config}},
		{name: "inside_settings", ro: []string{filepath.Join(config, "sub")}, want: []string{"lies inside the folder of OpenWorker's settings file"}},
		{name: "state_folder", ro: []string{f.state}, want: []string{"is OpenWorker's own state folder"}},
		{name: "inside_state", rw: []string{filepath.Join(f.state, "sessions")}, want: []string{"lies inside OpenWorker's own state folder"}},
		{name: "audit_folder", ro: []string{f.root + "/tools/../audit"}, want: []string{"is the folder of OpenWorker's audit trail"}},
		{name: "inside_app_bundle", rw: []string{filepath.Join(bundle, "Contents", "Resources")}, want: []string{"lies inside OpenWorker's app " + bundle}},
		{name: "holds_program", rw: []string{filepath.Dir(program)}, want: []string{"contains OpenWorker's own program " + program, "replace the program"}},
		{name: "ssh", ro: []string{filepath.Join(f.home, ".ssh")}, want: []string{"is ~/.ssh, which holds logins", logins}},
		{name: "link_to_ssh", rw: []string{linkToSSH}, want: []string{linkToSSH + " (which is " + filepath.Join(f.home, ".ssh") + ") is ~/.ssh"}},
		{name: "inside_aws", ro: []string{filepath.Join(f.home, ".aws", "sso")}, want: []string{"lies inside ~/.aws"}},
		{name: "holds_gh", rw: []string{filepath.Join(f.home, ".config")}, noConfig: true, want: []string{"contains ~/.config/gh", logins}},
		{name: "holds_linked_gnupg", ro: []string{dotfiles}, want: []string{"contains ~/.gnupg"}},
		{name: "toolchain_link_to_ssh", tools: []string{".cargo"}, want: []string{"toolchain folder ~/.cargo (which is " + filepath.Join(f.home, ".ssh") + ") is ~/.ssh"}},
		{name: "custom_toolchain_to_aws", tools: []string{"tools/aws-tool"}, want: []string{"toolchain folder ~/tools/aws-tool", "is ~/.aws"}},
		{name: "toolchain_holds_state", tools: []string{".local"}, want: []string{"toolchain folder ~/.local contains OpenWorker's own state folder"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := base
			if tt.noConfig {
				opts.ConfigDirs = nil
			}
			opts.Writable, opts.ReadOnly, opts.Toolchains = tt.rw, tt.ro, tt.tools
			_, err := New(opts)
			for _, want := range tt.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("got %v, want an error containing %q", err, want)
				}
			}
		})
	}
	// What lies beside them is fine, and so is reading the program (a toolchain such as
	// ~/go may hold it).
	if _, err := New(Options{UserHome: f.home, StateDir: f.state, ConfigDirs: []string{config}, RunnerFiles: []string{program},
		Writable: []string{f.proj, filepath.Join(f.home, "code")}, ReadOnly: []string{filepath.Dir(program)}, GOOS: "linux"}); err != nil {
		t.Fatalf("ordinary project folders were refused: %v", err)
	}
}

// TestMachineFoldersAreRefused: the machine's own folders are refused up front, each with
// its reason; those a sandbox already reads may be named read-only.
func TestMachineFoldersAreRefused(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the cases are this Linux machine's own folders")
	}
	f := newFixture(t)
	// A home folder outside /tmp, as a real one is, so that /tmp is judged as itself.
	home := "/nonexistent"
	if d, err := os.MkdirTemp("/var/tmp", "openworker-policy-home-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(d) })
		home = d
	} else {
		t.Skip("no /var/tmp for a home folder outside /tmp")
	}
	tests := []struct {
		name   string
		rw, ro string
		want   string // "" means accepted
	}{
		{name: "rw_usr", rw: "/usr", want: "writable folder /usr is part of the system"},
		{name: "rw_usr_local", rw: "/usr/local", want: "lies inside /usr, part of the system"},
		{name: "ro_usr_share", ro: "/usr/share", want: ""},
		{name: "rw_etc", rw: "/etc", want: "writable folder /etc is this machine's settings"},
		{name: "ro_etc", ro: "/etc", want: "read-only folder /etc is this machine's settings: it holds passwords"},
		{name: "ro_inside_etc", ro: "/etc/ssl", want: "lies inside /etc"},
		{name: "rw_proc", rw: "/proc", want: "writable folder /proc is the kernel's view of this machine's processes"},
		{name: "ro_proc_self", ro: "/proc/1", want: "lies inside /proc"},
		{name: "ro_sys", ro: "/sys", want: "is the kernel's view of this machine's devices"},
		{name: "rw_dev", rw: "/dev", want: "is this machine's devices"},
		{name: "rw_dev_shm", rw: "/dev/shm", want: "lies inside /dev"},
		{name: "rw_tmp", rw: "/tmp", want: "the sandbox's /tmp is a private one of its own"},
		{name: "rw_var_lib", rw: "/var/lib", want: "is the machine's service data"},
		{name: "rw_folder_in_tmp", rw: f.proj, want: ""}, // a folder inside /tmp is an ordinary one
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			given := tt.rw + tt.ro
			if _, err := os.Stat(given); err != nil {
				t.Skipf("%s is not on this machine", given)
			}
			opts := Options{UserHome: home, GOOS: "linux"}
			if tt.rw != "" {
				opts.Writable = []string{tt.rw}
			} else {
				opts.ReadOnly = []string{tt.ro}
			}
			_, err := New(opts)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// The machine's folders are judged as themselves, not where a home folder under one
	// lies: a service account's home under /var/lib keeps its projects.
	if got := refuse("writable", "/var/lib/ci/work", "/var/lib/ci/work", "/var/lib/ci", "linux", nil, nil); got != nil {
		t.Errorf("a project in a home under /var/lib was refused: %v", got)
	}
	if got := refuse("read-only", "/var", "/var", "/home/u", "linux", nil, nil); got == nil || !strings.Contains(got.Error(), "is the folder of every service's data") {
		t.Errorf("/var: %v", got)
	}
	if got := refuse("writable", "/Library/x", "/Library/x", "/Users/u", "darwin", nil, nil); got == nil {
		t.Error("darwin: a writable folder in /Library was accepted")
	}
	// The data volume's spelling of a folder is never a session folder, read-only either:
	// every profile denies it whole.
	for _, kind := range []string{"writable", "read-only"} {
		for _, d := range []string{"/System/Volumes/Data", "/System/Volumes/Data/Users/u/src/app", "/System/Volumes/Data/Volumes/Work"} {
			got := refuse(kind, d, d, "/Users/u", "darwin", nil, nil)
			if got == nil || !strings.Contains(got.Error(), "without /System/Volumes/Data") {
				t.Errorf("darwin: %s folder %s: %v, want it refused with its usual path named", kind, d, got)
			}
		}
	}
}

// TestPlantedSymlinkIsNotFollowed: a symlink inside a folder a sandboxed command may write
// (this session's or a running one's) is never followed to a session folder.
func TestPlantedSymlinkIsNotFollowed(t *testing.T) {
	f := newFixture(t)
	elsewhere := filepath.Join(f.home, "code", "app")
	// What a command in proj would do: move vendor away and plant vendor/lib.
	must(t, os.Rename(filepath.Join(f.proj, "vendor"), filepath.Join(f.proj, "vendor.old")))
	must(t, os.MkdirAll(filepath.Join(f.proj, "vendor"), 0o755))
	lib := filepath.Join(f.proj, "vendor", "lib")
	must(t, os.Symlink(elsewhere, lib))
	for _, tt := range []struct {
		name string
		opts Options
	}{
		{"own_writable", Options{Writable: []string{f.proj}, ReadOnly: []string{lib}}},
		{"other_session", Options{Untrusted: []string{f.proj}, ReadOnly: []string{lib}}},
		{"intermediate", Options{Untrusted: []string{f.proj}, Writable: []string{filepath.Join(f.proj, "vendor", "lib", "sub", "..")}}},
		{"toolchain", Options{Untrusted: []string{f.proj}, Toolchains: []string{lib}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.UserHome = f.home
			_, err := New(tt.opts)
			var unsafe *UnsafeLinkError
			if !errors.As(err, &unsafe) || unsafe.Link != lib || unsafe.Inside != f.proj {
				t.Fatalf("got %v, want the planted link %s refused", err, lib)
			}
			if !strings.Contains(err.Error(), "a command could have planted it") {
				t.Errorf("the message does not say why: %v", err)
			}
		})
	}
	// The same link outside every writable folder is the person's own, and followed.
	p, err := New(Options{UserHome: f.home, ReadOnly: []string{lib}})
	if err != nil || !slices.Equal(p.ReadOnly, []string{elsewhere}) {
		t.Fatalf("a trusted link: %v %v", p, err)
	}
}

// TestFolderIsResolvedOnce: each given folder maps to the one resolved path that was
// checked, with its identity recorded for the provider.
func TestFolderIsResolvedOnce(t *testing.T) {
	f := newFixture(t)
	link := filepath.Join(f.root, "link")
	must(t, os.Symlink(f.proj, link))
	p, err := New(Options{UserHome: f.home, Writable: []string{link}})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := p.Folder(link + "/"); !ok || got != f.proj {
		t.Fatalf("Folder(%s) = %q %v, want %s", link, got, ok, f.proj)
	}
	fi, err := os.Stat(f.proj)
	must(t, err)
	want, _ := identify(fi)
	if id, ok := p.ID(f.proj); !ok || id != want || id == (FileID{}) {
		t.Fatalf("ID = %v %v, want %v", id, ok, want)
	}
}

// TestToolchainLoginsAreHidden: the login files inside a toolchain are listed to hide; its
// tools are not.
func TestToolchainLoginsAreHidden(t *testing.T) {
	f := newFixture(t)
	cargo := filepath.Join(f.home, ".cargo")
	nvmrc := filepath.Join(f.home, ".nvm", "versions", "node", "v22.1.0", "etc", "npmrc")
	custom := filepath.Join(f.home, "sdk")
	for _, d := range []string{filepath.Join(cargo, "bin"), filepath.Dir(nvmrc), custom, filepath.Join(f.home, ".secrets")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	files := map[string]string{
		filepath.Join(cargo, "credentials.toml"): "token", filepath.Join(cargo, "credentials"): "token",
		filepath.Join(cargo, "bin", "cargo"): "tool", filepath.Join(cargo, "config.toml"): "settings",
		nvmrc: "//registry/:_authToken=x", filepath.Join(custom, ".npmrc"): "token",
		filepath.Join(f.home, ".secrets", "pypirc"): "token",
	}
	for p, s := range files {
		must(t, os.WriteFile(p, []byte(s), 0o600))
	}
	// A login file that is a symlink into another shared folder is hidden where it leads.
	must(t, os.Symlink(filepath.Join(f.home, ".secrets", "pypirc"), filepath.Join(custom, ".pypirc")))
	p, err := New(Options{UserHome: f.home, Toolchains: []string{".cargo", ".nvm", "sdk", ".secrets", ".absent"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(f.home, ".secrets", "pypirc"), filepath.Join(cargo, "credentials"), filepath.Join(cargo, "credentials.toml"), nvmrc, filepath.Join(custom, ".npmrc")}
	slices.Sort(want)
	if !slices.Equal(p.Hidden, want) {
		t.Fatalf("hidden = %v\nwant     %v", p.Hidden, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
