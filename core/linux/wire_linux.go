package linux

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/openworker/openworker/core/policy"
)

// The setup and the reports travel between two processes of the same binary, so their
// encoding need not outlive a build: it is a version byte, then each field in order,
// strings and lists after their length. encoding/json spent up to half a millisecond on
// the setup in a fresh builder, most of it learning the types, and that half millisecond
// came before every sandbox.

// wireVersion changes whenever a field is added, removed or reordered below.
const wireVersion = 1

// Flag bits of the setup and of a mount step.
const (
	setupStderr = 1 << iota
	setupUserNS
	setupNetNS
	setupRunnerConn
	setupRunnerServe
)

const (
	mountWritable = 1 << iota
	mountSystem
)

const (
	reportListener = 1 << iota
	reportStarted
)

func (s *wallSetup) encode() []byte {
	var e encoder
	e.byte(wireVersion)
	e.byte(flags(s.Stderr, s.UserNS, s.NetNS, s.Runner.Conn, s.Runner.Serve))
	e.string(string(s.Network))
	e.uint(uint64(s.ProxyPort))
	e.uint(uint64(len(s.Mounts)))
	for _, m := range s.Mounts {
		e.string(m.Src)
		e.string(m.Dst)
		e.byte(flags(m.Writable, m.System))
	}
	e.string(s.Runner.Path)
	e.strings(s.Runner.Args)
	e.strings(s.Runner.Env)
	e.string(s.Runner.Dir)
	return e.b
}

func decodeSetup(b []byte) (*wallSetup, error) {
	d := decoder{b: b}
	d.version()
	var s wallSetup
	f := d.byte()
	s.Stderr, s.UserNS, s.NetNS = f&setupStderr != 0, f&setupUserNS != 0, f&setupNetNS != 0
	s.Runner.Conn, s.Runner.Serve = f&setupRunnerConn != 0, f&setupRunnerServe != 0
	s.Network = policy.Network(d.string())
	s.ProxyPort = int(d.uint())
	// Each step takes at least three bytes, which bounds what a wrong count can allocate.
	if n := d.count(3); n > 0 {
		s.Mounts = make([]mountStep, n)
		for i := range s.Mounts {
			m := &s.Mounts[i]
			m.Src, m.Dst = d.string(), d.string()
			f := d.byte()
			m.Writable, m.System = f&mountWritable != 0, f&mountSystem != 0
		}
	}
	s.Runner.Path = d.string()
	s.Runner.Args = d.strings()
	s.Runner.Env = d.strings()
	s.Runner.Dir = d.string()
	if err := d.end(); err != nil {
		return nil, fmt.Errorf("the setup is unreadable: %w", err)
	}
	return &s, nil
}

func (r *wallReport) encode() []byte {
	var e encoder
	e.byte(wireVersion)
	e.byte(flags(r.Listener, r.Started))
	e.string(r.Step)
	e.string(r.Error)
	e.strings(r.Active)
	return e.b
}

func decodeReport(b []byte) (*wallReport, error) {
	d := decoder{b: b}
	d.version()
	var r wallReport
	f := d.byte()
	r.Listener, r.Started = f&reportListener != 0, f&reportStarted != 0
	r.Step = d.string()
	r.Error = d.string()
	r.Active = d.strings()
	if err := d.end(); err != nil {
		return nil, err
	}
	return &r, nil
}

func flags(bits ...bool) byte {
	var f byte
	for i, b := range bits {
		if b {
			f |= 1 << i
		}
	}
	return f
}

type encoder struct{ b []byte }

func (e *encoder) byte(c byte)     { e.b = append(e.b, c) }
func (e *encoder) uint(n uint64)   { e.b = binary.AppendUvarint(e.b, n) }
func (e *encoder) string(s string) { e.uint(uint64(len(s))); e.b = append(e.b, s...) }

func (e *encoder) strings(ss []string) {
	e.uint(uint64(len(ss)))
	for _, s := range ss {
		e.string(s)
	}
}

// decoder reads what encoder wrote. The first error sticks; every read after it returns
// zero values, and end reports it.
type decoder struct {
	b   []byte
	err error
}

var errShort = errors.New("it ends early")

func (d *decoder) version() {
	if v := d.byte(); d.err == nil && v != wireVersion {
		d.err = fmt.Errorf("encoding version %d, not %d: the two ends come from different builds", v, wireVersion)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail(errShort)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.fail(errors.New("a number is malformed"))
		return 0
	}
	d.b = d.b[k:]
	return n
}

// count reads a list's length, each item taking at least least bytes.
func (d *decoder) count(least int) int {
	n := d.uint()
	if d.err == nil && n > uint64(len(d.b)/least) {
		d.fail(errShort)
	}
	if d.err != nil {
		return 0
	}
	return int(n)
}

func (d *decoder) string() string {
	n := d.uint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail(errShort)
	}
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) strings() []string {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.string()
	}
	return ss
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) end() error {
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes follow its end", len(d.b))
	}
	return d.err
}
