package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// openNoMagicLinks, the walk made where openat2 does not exist, follows ordinary symbolic
// links as open does and refuses the magic ones of /proc as openat2 does.
func TestOpenNoMagicLinks(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "a", "b", "f"), []byte("content"), 0o644))
	must(os.Symlink("a/b", filepath.Join(dir, "rel")))
	must(os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "abs")))
	must(os.Symlink("rel/f", filepath.Join(dir, "chain")))
	must(os.Symlink("new-target", filepath.Join(dir, "dangling")))
	must(os.Symlink("loop", filepath.Join(dir, "loop")))
	must(os.Symlink("/proc/self/fd/"+strconv.Itoa(int(os.Stderr.Fd())), filepath.Join(dir, "log")))
	t.Chdir(dir)
	f, err := os.Open("/dev/null")
	must(err)
	defer f.Close()
	fdLink := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))

	for _, tc := range []struct {
		path  string
		flags int
		want  error // nil: opens
	}{
		{filepath.Join(dir, "a", "b", "f"), unix.O_RDONLY, nil},
		{"a/b/f", unix.O_RDONLY, nil},
		{"rel/f", unix.O_RDONLY, nil},
		{filepath.Join(dir, "abs", "b", "f"), unix.O_RDONLY, nil},
		{"chain", unix.O_RDONLY, nil},
		{"a/../a/b/./f", unix.O_RDONLY, nil},
		{"rel/", unix.O_RDONLY | unix.O_DIRECTORY, nil},
		{"abs", unix.O_RDONLY | unix.O_DIRECTORY, nil},
		{"/", unix.O_RDONLY | unix.O_DIRECTORY, nil},
		{"dangling", unix.O_WRONLY | unix.O_CREAT, nil},
		{"/proc/self/status", unix.O_RDONLY, nil},
		{"/proc/thread-self/status", unix.O_RDONLY, nil},
		{"/proc/net/unix", unix.O_RDONLY, nil},
		{"missing", unix.O_RDONLY, unix.ENOENT},
		{"loop", unix.O_RDONLY, unix.ELOOP},
		{fdLink, unix.O_RDONLY, unix.ELOOP},
		{"log", unix.O_WRONLY, unix.ELOOP},
		{"/proc/self/cwd/a/b/f", unix.O_RDONLY, unix.ELOOP},
		{"/proc/self/root/etc/hostname", unix.O_RDONLY, unix.ELOOP},
		{"/proc/self/exe", unix.O_RDONLY, unix.ELOOP},
		{"/proc/self/ns/net", unix.O_RDONLY, unix.ELOOP},
	} {
		fd, err := openNoMagicLinks(tc.path, tc.flags|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Close(fd)
		}
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.path, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new-target")); err != nil {
		t.Errorf("a create through a dangling link made no target: %v", err)
	}
}
