//go:build !linux

package gitmeta

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// readDir lists the folder open as fd (which it leaves open), up to max entries.
func readDir(fd int, max int, _ []byte) (out []dent, more bool) {
	d, err := unix.Dup(fd)
	if err != nil {
		return nil, false
	}
	f := os.NewFile(uintptr(d), "")
	defer f.Close()
	list, err := f.ReadDir(max + 1)
	if err != nil && len(list) == 0 {
		return nil, false
	}
	if len(list) > max {
		list, more = list[:max], true
	}
	for _, e := range list {
		t := typeOther
		switch m := e.Type(); {
		case m.IsDir():
			t = typeDir
		case m&fs.ModeSymlink != 0:
			t = typeLink
		case m.IsRegular():
			t = typeFile
		}
		out = append(out, dent{name: e.Name(), typ: t})
	}
	return out, more
}
