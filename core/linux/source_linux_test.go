package linux

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The builder reaches sources and mount points without following links; openBeneath is also
// how openNoLinks works on kernels without openat2.
func TestOpenWithoutLinks(t *testing.T) {
	root := resolved(t, t.TempDir())
	must(t, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(t, os.Symlink("a", filepath.Join(root, "link")))
	must(t, os.Symlink("b", filepath.Join(root, "a", "last")))
	rel := strings.TrimPrefix(root, "/")
	tests := []struct {
		name   string
		path   string
		create bool
		dir    bool
		want   error // nil: opened
		made   string
	}{
		{name: "plain", path: "a/b"},
		{name: "link_on_the_way", path: "link/b", want: errLink},
		{name: "link_at_the_end", path: "a/last", want: errLink},
		{name: "missing", path: "a/none", want: unix.ENOENT},
		{name: "made_folder", path: "a/new/deeper", create: true, dir: true, made: "a/new/deeper"},
		{name: "made_file", path: "a/b/file", create: true, made: "a/b/file"},
		{name: "no_making_through_a_link", path: "link/x", create: true, dir: true, want: errLink},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fd, err := openBeneath("/", rel+"/"+tt.path, tt.create, tt.dir)
			if fd >= 0 {
				unix.Close(fd)
			}
			if !errors.Is(err, tt.want) && !(tt.want == nil && err == nil) {
				t.Fatalf("openBeneath: %v, want %v", err, tt.want)
			}
			if tt.made != "" {
				fi, err := os.Lstat(filepath.Join(root, tt.made))
				if err != nil || fi.IsDir() != tt.dir {
					t.Fatalf("%s was not made as asked: %v %v", tt.made, fi, err)
				}
			}
			if tt.create {
				return
			}
			fd, err = openNoLinks(filepath.Join(root, tt.path))
			if fd >= 0 {
				unix.Close(fd)
			}
			if !errors.Is(err, tt.want) && !(tt.want == nil && err == nil) {
				t.Fatalf("openNoLinks: %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(root, "a", "x")); err == nil {
		t.Error("a folder was made through a link")
	}
}
