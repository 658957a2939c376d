package backend

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// clientPrograms checks the programs of the client that asks for a session (see
// Request.Programs) and returns them resolved, to be guarded as the daemon's own program
// is. It checks what the daemon can know of a path the client names: that it is an absolute
// path to an executable regular file. Where the kernel says which program is at the other
// end of the connection (Linux), that one is guarded too, so a client that names another,
// or none, does not lose the guard of its own. Nothing named widens what a session may
// reach.
func clientPrograms(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		r, err := clientProgram(p)
		if err != nil {
			return nil, err
		}
		if r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

func clientProgram(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	bad := func(why string) error {
		return fmt.Errorf("the program that asked for this session, %s, %s; start the session from the openworker program itself", path, why)
	}
	if !filepath.IsAbs(path) {
		return "", bad("is not an absolute path")
	}
	r, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", bad("cannot be found")
	}
	fi, err := os.Stat(r)
	if err != nil {
		return "", bad("cannot be found")
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", bad("is not an executable file")
	}
	return r, nil
}
