package gitmeta

import "golang.org/x/sys/unix"

func stampOf(st *unix.Stat_t) stamp {
	return stamp{dev: uint64(st.Dev), ino: st.Ino, size: uint64(st.Size), mode: uint32(st.Mode), mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}
