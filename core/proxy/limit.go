package proxy

import "sync/atomic"

// ConnLimit caps the client connections of every proxy that shares it. Each session has a
// proxy of its own with its own cap, but they all draw on the one process's descriptors (a
// tunnel holds two), so the daemon gives all its sessions' proxies one ConnLimit: a session
// at its own cap cannot leave the others, or the daemon, without descriptors.
type ConnLimit struct {
	max  atomic.Int64
	open atomic.Int64
	full atomic.Int64 // full origin buffers held (see DaemonFullBuffers)
	// large buffers tunnels copy through (Linux; see daemonLarge)
	large atomic.Int64
}

// NewConnLimit returns a limit of n connections at once (at least 1).
func NewConnLimit(n int) *ConnLimit {
	l := &ConnLimit{}
	l.SetMax(n)
	return l
}

// SetMax changes the cap; connections already open above it stay until they close.
func (l *ConnLimit) SetMax(n int) { l.max.Store(int64(min(max(n, 1), 1<<30))) }

// Max is the cap.
func (l *ConnLimit) Max() int { return int(l.max.Load()) }

// Open is how many connections hold a place now.
func (l *ConnLimit) Open() int { return int(l.open.Load()) }

// take holds a place, or says there is none.
func (l *ConnLimit) take() bool {
	if l.open.Add(1) > l.max.Load() {
		l.open.Add(-1)
		return false
	}
	return true
}

func (l *ConnLimit) give() { l.open.Add(-1) }

// takeFull holds one of the daemon's full origin buffers, or says there is none.
func (l *ConnLimit) takeFull() bool {
	if l.full.Add(1) > DaemonFullBuffers {
		l.full.Add(-1)
		return false
	}
	return true
}

func (l *ConnLimit) giveFull() { l.full.Add(-1) }

// takeLarge holds one of the daemon's large copy buffers, or says there is none.
func (l *ConnLimit) takeLarge() bool {
	if l.large.Add(1) > daemonLarge {
		l.large.Add(-1)
		return false
	}
	return true
}

func (l *ConnLimit) giveLarge() { l.large.Add(-1) }
