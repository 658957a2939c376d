package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxLinks is how many symlinks one resolution may follow, as the kernel's limit.
const maxLinks = 40

// UnsafeLinkError is a session folder whose path goes through a symlink that lies inside a
// folder a sandboxed command may write: a command could have planted it to turn the folder a
// person names into one they never meant to share (their ~/.ssh, another project).
type UnsafeLinkError struct {
	Path   string // the folder as given
	Link   string // the symlink on the way
	Target string // what the link points to
	Inside string // the writable folder it lies in
}

func (e *UnsafeLinkError) Error() string {
	return fmt.Sprintf("%s goes through the symlink %s (to %s), which lies inside %s, a folder sandboxed commands may write: "+
		"a command could have planted it; give the folder you mean without the link", e.Path, e.Link, e.Target, e.Inside)
}

// resolveFrom returns path (absolute) with every symlink resolved, walking it from the root one
// component at a time as the kernel does, and refuses it when a symlink on the way lies
// inside one of the untrusted folders (resolved paths). It is filepath.EvalSymlinks that
// knows where each link it follows lies.
func resolveFrom(path string, untrusted []string) (string, error) {
	return walk(path, untrusted, false, nil)
}

// Chain returns every path that decides what path (absolute) leads to: each symlink met on
// the way, where it lies (its folder resolved), and the place it all leads, resolved as far
// as it exists. Whoever can replace one of them can make path another file.
func Chain(path string) []string {
	var out []string
	end, err := walk(filepath.Clean(path), nil, true, &out)
	if err != nil {
		return append(out, filepath.Clean(path))
	}
	return append(out, end)
}

// LinkFolders returns the folders of Chain(path): the folder each link on the way lies in,
// and the folder of the place it leads. A settings file that is a link into a dotfiles
// folder is as much in that folder as in its own.
func LinkFolders(path string) []string {
	var out []string
	for _, p := range Chain(path) {
		out = append(out, filepath.Dir(p))
	}
	return out
}

// walk is resolveFrom; loose, it stops at the first component that does not exist and
// appends the rest as it is. met, when not nil, gets each symlink met.
func walk(path string, untrusted []string, loose bool, met *[]string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%q is not an absolute path", path)
	}
	todo := strings.Split(filepath.Clean(path), "/")
	cur := "/"
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			// cur has no symlinks in it, so its parent is the lexical one.
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			if loose && errors.Is(err, os.ErrNotExist) {
				return filepath.Join(append([]string{next}, todo...)...), nil
			}
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if met != nil {
			*met = append(*met, next)
		}
		for _, u := range untrusted {
			if Within(u, next) {
				return "", &UnsafeLinkError{Path: path, Link: next, Target: target, Inside: u}
			}
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", path)
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return cur, nil
}
