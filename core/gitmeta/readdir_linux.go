package gitmeta

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// readDir lists the folder open as fd with getdents64 itself: the walk after each command
// reads thousands of folders, and os.File costs each one four more system calls (a dup, an
// fcntl, a poller registration, a second getdents). It stops after max entries (more says
// there were more).
func readDir(fd int, max int, buf []byte) (out []dent, more bool) {
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil || n <= 0 {
			return out, false
		}
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return out, false
			}
			typ := b[18]
			name := b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			b = b[reclen:]
			if string(name) == "." || string(name) == ".." {
				continue
			}
			if len(out) >= max {
				return out, true
			}
			out = append(out, dent{name: string(name), typ: direntType(typ)})
		}
	}
}

func direntType(t uint8) uint8 {
	switch t {
	case unix.DT_DIR:
		return typeDir
	case unix.DT_LNK:
		return typeLink
	case unix.DT_REG:
		return typeFile
	case unix.DT_UNKNOWN:
		return typeUnknown
	}
	return typeOther
}
