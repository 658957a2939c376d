package credentials

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// helper returns the ProxyCommand's program as the sandbox sees it. The Linux wall serves
// its runner from outside and shows no openworker binary inside, so a copy of it goes beside
// the generated ssh config. A copy, not a hard link: a command that writes to it must change
// nothing outside the sandbox.
func (c *copier) helper(dir string) (string, error) {
	if c.o.Helper == "" {
		return "", fmt.Errorf("no openworker binary to run as ssh's ProxyCommand")
	}
	in, err := os.Open(c.o.Helper)
	if err != nil {
		return "", fmt.Errorf("reading the openworker binary for ssh's ProxyCommand: %w", err)
	}
	defer in.Close()
	dst := filepath.Join(dir, "openworker")
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o700)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
		return "", err
	}
	return dst, nil
}
