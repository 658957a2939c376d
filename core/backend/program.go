package backend

import (
	"fmt"
	"os"
	"path/filepath"
)

// clientPrograms checks the program a client says it runs from (see Request.Program) and
// returns it resolved, to be guarded as the daemon's own program is. It checks what the
// daemon can know: that it is an absolute path to an executable regular file. It cannot
// prove the client runs that file; a client that names another only loses the guard of its
// own, and nothing it names widens what a session may reach.
func clientPrograms(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("the program that asked for this session, %s, %s; start the session from the openworker program itself", path, why)
	}
	if !filepath.IsAbs(path) {
		return nil, bad("is not an absolute path")
	}
	r, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, bad("cannot be found")
	}
	fi, err := os.Stat(r)
	if err != nil {
		return nil, bad("cannot be found")
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return nil, bad("is not an executable file")
	}
	return []string{r}, nil
}
