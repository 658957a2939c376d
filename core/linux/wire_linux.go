package linux

import (
	"fmt"

	"github.com/openworker/openworker/core/internal/wire"
	"github.com/openworker/openworker/core/policy"
)

// The setup and the reports are encoded with package wire: encoding/json spent up to half
// a millisecond on the setup in a fresh builder, before every sandbox's first mount.

// wireVersion changes whenever a field below is added, removed or moved.
const wireVersion = 8

func (s *wallSetup) encode() []byte {
	e := wire.NewEncoder(wireVersion)
	e.Flags(s.Stderr, s.UserNS, s.NetNS, s.Runner.Conn, s.Runner.Serve, s.TmpMount, s.Relay, s.NetReady)
	e.Flags(s.Sockets)
	e.String(string(s.Network))
	e.Uint(uint64(s.ProxyPort))
	e.Uint(s.TimerSlack)
	e.Uint(uint64(len(s.Forwards)))
	for _, port := range s.Forwards {
		e.Uint(uint64(port))
	}
	e.Uint(uint64(len(s.Mounts)))
	for _, m := range s.Mounts {
		e.String(m.Src)
		e.String(m.Dst)
		e.Flags(m.Writable, m.System, m.Empty, m.Tmp)
		e.Uint(m.Dev)
		e.Uint(m.Ino)
	}
	e.String(s.Runner.Path)
	e.Strings(s.Runner.Args)
	e.Strings(s.Runner.Env)
	e.String(s.Runner.Dir)
	e.String(s.UserHome)
	e.String(s.RelayErr)
	return e.Message()
}

func decodeSetup(b []byte) (*wallSetup, error) {
	d := wire.NewDecoder(b, wireVersion)
	var s wallSetup
	f := d.Byte()
	s.Stderr, s.UserNS, s.NetNS = wire.Flag(f, 0), wire.Flag(f, 1), wire.Flag(f, 2)
	s.Runner.Conn, s.Runner.Serve, s.TmpMount = wire.Flag(f, 3), wire.Flag(f, 4), wire.Flag(f, 5)
	s.Relay, s.NetReady = wire.Flag(f, 6), wire.Flag(f, 7)
	s.Sockets = wire.Flag(d.Byte(), 0)
	s.Network = policy.Network(d.String())
	s.ProxyPort = int(d.Uint())
	s.TimerSlack = d.Uint()
	if n := d.Count(1); n > 0 {
		s.Forwards = make([]int, n)
		for i := range s.Forwards {
			s.Forwards[i] = int(d.Uint())
			if s.Forwards[i] < 1 || s.Forwards[i] > 65535 {
				return nil, fmt.Errorf("the setup is unreadable: forwarded port %d", s.Forwards[i])
			}
		}
	}
	// A step takes at least five bytes, which bounds what a wrong count can allocate.
	if n := d.Count(5); n > 0 {
		s.Mounts = make([]mountStep, n)
		for i := range s.Mounts {
			m := &s.Mounts[i]
			m.Src, m.Dst = d.String(), d.String()
			f := d.Byte()
			m.Writable, m.System, m.Empty, m.Tmp = wire.Flag(f, 0), wire.Flag(f, 1), wire.Flag(f, 2), wire.Flag(f, 3)
			m.Dev, m.Ino = d.Uint(), d.Uint()
		}
	}
	s.Runner.Path = d.String()
	s.Runner.Args = d.Strings()
	s.Runner.Env = d.Strings()
	s.Runner.Dir = d.String()
	s.UserHome = d.String()
	s.RelayErr = d.String()
	if err := d.End(); err != nil {
		return nil, fmt.Errorf("the setup is unreadable: %w", err)
	}
	return &s, nil
}

func (r *wallReport) encode() []byte {
	e := wire.NewEncoder(wireVersion)
	e.Flags(r.Listener, r.Started, r.Relay, r.Stub)
	e.Uint(uint64(r.Forward))
	e.String(r.Step)
	e.String(r.Error)
	e.Strings(r.Active)
	return e.Message()
}

func decodeReport(b []byte) (*wallReport, error) {
	d := wire.NewDecoder(b, wireVersion)
	var r wallReport
	f := d.Byte()
	r.Listener, r.Started = wire.Flag(f, 0), wire.Flag(f, 1)
	r.Relay, r.Stub = wire.Flag(f, 2), wire.Flag(f, 3)
	r.Forward = int(d.Uint())
	r.Step = d.String()
	r.Error = d.String()
	r.Active = d.Strings()
	if err := d.End(); err != nil {
		return nil, err
	}
	return &r, nil
}
