package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// git's settings are read inside only when they are the person's own: never through a link
// a sandboxed command could have planted, never from a folder of logins.
func TestSettingsFiles(t *testing.T) {
	tests := []struct {
		name string
		// plant makes ~/.gitconfig in home; project is a folder sessions have had writable.
		plant  func(t *testing.T, home, project string)
		want   bool
		darwin bool
	}{
		{name: "file", want: true, plant: func(t *testing.T, home, _ string) { writeFile(t, filepath.Join(home, ".gitconfig")) }},
		{name: "file_darwin", want: true, darwin: true, plant: func(t *testing.T, home, _ string) { writeFile(t, filepath.Join(home, ".gitconfig")) }},
		{name: "link_to_dotfiles", want: true, plant: func(t *testing.T, home, _ string) {
			writeFile(t, filepath.Join(home, "dotfiles", "gitconfig"))
			link(t, filepath.Join(home, "dotfiles", "gitconfig"), filepath.Join(home, ".gitconfig"))
		}},
		{name: "link_through_untrusted", plant: func(t *testing.T, home, project string) {
			// A sandboxed command replaced the target in its writable folder with a link.
			writeFile(t, filepath.Join(home, ".ssh", "id_ed25519"))
			link(t, filepath.Join(home, ".ssh", "id_ed25519"), filepath.Join(project, "gitconfig"))
			link(t, filepath.Join(project, "gitconfig"), filepath.Join(home, ".gitconfig"))
		}},
		{name: "link_into_logins", plant: func(t *testing.T, home, _ string) {
			writeFile(t, filepath.Join(home, ".ssh", "config"))
			link(t, filepath.Join(home, ".ssh", "config"), filepath.Join(home, ".gitconfig"))
		}},
		{name: "folder", plant: func(t *testing.T, home, _ string) { os.MkdirAll(filepath.Join(home, ".gitconfig"), 0o755) }},
		{name: "absent", plant: func(*testing.T, string, string) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, _ := filepath.EvalSymlinks(t.TempDir())
			home, project, tmp := filepath.Join(root, "home"), filepath.Join(root, "home", "project"), filepath.Join(root, "tmp")
			for _, d := range []string{project, filepath.Join(tmp, "home")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			tt.plant(t, home, project)
			goos := "linux"
			if tt.darwin {
				goos = "darwin"
			}
			opts := Options{Writable: []string{project}, PrivateTmp: tmp, UserHome: home, GOOS: goos, Settings: GitSettings}
			p, err := New(opts)
			if tt.name == "link_through_untrusted" {
				// The folder holds a link on the way to git's settings: it is never
				// shared writable again, and another session that only reads it
				// leaves the settings out.
				if err == nil || !strings.Contains(err.Error(), "holds ~/.gitconfig") {
					t.Fatalf("got %v, want the folder that holds the link refused", err)
				}
				opts.Writable, opts.Untrusted = nil, []string{project}
				p, err = New(opts)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := len(p.Settings) == 1
			if got != tt.want {
				t.Fatalf("settings %+v, want one: %v", p.Settings, tt.want)
			}
			if !got {
				return
			}
			if st := p.Settings[0]; st.Dst != filepath.Join(tmp, "home", ".gitconfig") || filepath.Base(filepath.Dir(st.Src)) == ".ssh" {
				t.Errorf("setting %+v", st)
			}
			if inRO := slices.Contains(p.ReadOnly, p.Settings[0].Src); inRO != tt.darwin {
				t.Errorf("in ReadOnly: %v, want %v (macOS only)", inRO, tt.darwin)
			}
		})
	}
}

func writeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("[user]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}
