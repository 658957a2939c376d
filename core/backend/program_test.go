package backend

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The program a client names is guarded only when it is what it says: an executable file.
func TestClientPrograms(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	exe, data, link := filepath.Join(dir, "openworker"), filepath.Join(dir, "data"), filepath.Join(dir, "link")
	os.WriteFile(exe, nil, 0o755)
	os.WriteFile(data, nil, 0o644)
	os.Symlink(exe, link)
	tests := []struct {
		name, path, want, err string
	}{
		{"none", "", "", ""},
		{"program", exe, exe, ""},
		{"link", link, exe, ""},
		{"relative", "build/openworker", "", "is not an absolute path"},
		{"missing", filepath.Join(dir, "gone"), "", "cannot be found"},
		{"not_executable", data, "", "is not an executable file"},
		{"folder", dir, "", "is not an executable file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := clientPrograms([]string{tt.path, ""})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), tt.path) {
					t.Fatalf("got %q %v, want an error naming %s: %q", got, err, tt.path, tt.err)
				}
				return
			}
			if err != nil || strings.Join(got, "") != tt.want {
				t.Fatalf("got %q %v, want %q", got, err, tt.want)
			}
		})
	}
}
