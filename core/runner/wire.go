package runner

import (
	"bufio"
	"fmt"
	"io"
	"time"

	"github.com/openworker/openworker/core/internal/wire"
)

// wireVersion changes whenever a field below is added, removed or moved.
const wireVersion = 3

// maxMessage bounds one message either way. The largest honest ones are a read's content
// (MaxRead) and a write's; a runner that sends more is broken or lying.
const maxMessage = 64 << 20

// Which argument a request carries, as bits of its flags byte.
const (
	hasExec = iota
	hasRead
	hasWrite
	hasList
	hasProbe
	hasSignal
	hasStdin
)

func (r *Request) encode() []byte {
	e := wire.NewEncoder(wireVersion)
	e.Uint(r.ID)
	e.String(r.Tool)
	e.Flags(r.Exec != nil, r.Read != nil, r.Write != nil, r.List != nil, r.Probe != nil, r.Sig != nil, r.In != nil)
	if a := r.Exec; a != nil {
		e.String(a.Command)
		e.Strings(a.Argv)
		e.String(a.Dir)
		e.Int(int64(a.Timeout))
		e.Int(int64(a.MaxOutput))
		e.Flags(a.Stream, a.StdinStream, a.Apart)
		e.Bytes(a.Stdin)
		e.Strings(a.Env)
	}
	if a := r.Read; a != nil {
		e.String(a.Path)
		e.Int(a.Offset)
		e.Int(a.Limit)
	}
	if a := r.Write; a != nil {
		e.String(a.Path)
		e.Bytes(a.Content)
	}
	if a := r.List; a != nil {
		e.String(a.Path)
	}
	if a := r.Probe; a != nil {
		e.Strings(a.Writable)
		e.Strings(a.ReadOnly)
		e.String(a.Home)
		e.Strings(a.Unreachable)
		e.Strings(a.Reachable)
		e.Strings(a.Unwritable)
	}
	if a := r.Sig; a != nil {
		e.Uint(a.Call)
		e.Int(int64(a.Signal))
	}
	if a := r.In; a != nil {
		e.Uint(a.Call)
		e.Bytes(a.Data)
		e.Flags(a.EOF)
	}
	return e.Message()
}

func decodeRequest(b []byte) (*Request, error) {
	d := wire.NewDecoder(b, wireVersion)
	r := &Request{ID: d.Uint(), Tool: d.String()}
	has := d.Byte()
	if wire.Flag(has, hasExec) {
		r.Exec = &ExecArgs{Command: d.String(), Argv: d.Strings(), Dir: d.String(),
			Timeout: time.Duration(d.Int()), MaxOutput: int(d.Int())}
		f := d.Byte()
		r.Exec.Stream, r.Exec.StdinStream, r.Exec.Apart = wire.Flag(f, 0), wire.Flag(f, 1), wire.Flag(f, 2)
		r.Exec.Stdin = d.Bytes()
		r.Exec.Env = d.Strings()
	}
	if wire.Flag(has, hasRead) {
		r.Read = &ReadArgs{Path: d.String(), Offset: d.Int(), Limit: d.Int()}
	}
	if wire.Flag(has, hasWrite) {
		r.Write = &WriteArgs{Path: d.String(), Content: d.Bytes()}
	}
	if wire.Flag(has, hasList) {
		r.List = &ListArgs{Path: d.String()}
	}
	if wire.Flag(has, hasProbe) {
		r.Probe = &ProbeArgs{Writable: d.Strings(), ReadOnly: d.Strings(), Home: d.String(),
			Unreachable: d.Strings(), Reachable: d.Strings(), Unwritable: d.Strings()}
	}
	if wire.Flag(has, hasSignal) {
		r.Sig = &SignalArgs{Call: d.Uint(), Signal: int(d.Int())}
	}
	if wire.Flag(has, hasStdin) {
		r.In = &StdinArgs{Call: d.Uint(), Data: d.Bytes()}
		r.In.EOF = wire.Flag(d.Byte(), 0)
	}
	if err := d.End(); err != nil {
		return nil, fmt.Errorf("an unreadable request: %w", err)
	}
	return r, nil
}

func (r *Response) encode() []byte {
	e := wire.NewEncoder(wireVersion)
	e.Uint(r.ID)
	e.String(r.Stream)
	e.Bytes(r.Data)
	e.String(r.Error)
	e.Int(r.Ack)
	e.Flags(r.Result != nil)
	if res := r.Result; res != nil {
		e.Int(int64(res.ExitCode))
		e.Int(int64(res.Duration))
		e.Bytes(res.Stdout)
		e.Bytes(res.Stderr)
		e.Int(res.StdoutTruncated)
		e.Int(res.StderrTruncated)
		e.Flags(res.TimedOut, res.Idle)
		e.String(res.Dir)
		e.String(res.StateRefused)
		e.Bytes(res.Content)
		e.Int(res.Size)
		e.Uint(uint64(len(res.Entries)))
		for _, en := range res.Entries {
			e.String(en.Name)
			e.Flags(en.Dir)
			e.Int(en.Size)
			e.String(en.Mode)
			e.String(en.Link)
			e.Int(en.MTime)
		}
		e.Uint(uint64(len(res.Checks)))
		for _, c := range res.Checks {
			e.String(c.Name)
			e.String(c.Target)
			e.Flags(c.OK)
			e.String(c.Detail)
		}
	}
	return e.Message()
}

// encodeFitting is encode for an answer that must fit one message: one that would not
// (a listing of hundreds of thousands of names) becomes an error that says so.
func (r *Response) encodeFitting() []byte {
	msg := r.encode()
	if len(msg) <= maxMessage {
		return msg
	}
	return (&Response{ID: r.ID, Error: fmt.Sprintf("the answer is %d bytes, more than one message holds (%d MiB)", len(msg), maxMessage>>20)}).encode()
}

func decodeResponse(b []byte) (*Response, error) {
	d := wire.NewDecoder(b, wireVersion)
	r := &Response{ID: d.Uint(), Stream: d.String(), Data: d.Bytes(), Error: d.String(), Ack: d.Int()}
	if wire.Flag(d.Byte(), 0) {
		res := &Result{ExitCode: int(d.Int()), Duration: time.Duration(d.Int()), Stdout: d.Bytes(), Stderr: d.Bytes(),
			StdoutTruncated: d.Int(), StderrTruncated: d.Int()}
		f := d.Byte()
		res.TimedOut, res.Idle = wire.Flag(f, 0), wire.Flag(f, 1)
		res.Dir, res.StateRefused = d.String(), d.String()
		res.Content, res.Size = d.Bytes(), d.Int()
		// An entry takes at least six bytes and a check four: a count that promises more
		// than the message holds is refused before anything is allocated for it.
		if n := d.Count(6); n > 0 {
			res.Entries = make([]Entry, n)
			for i := range res.Entries {
				en := &res.Entries[i]
				en.Name = d.String()
				en.Dir = wire.Flag(d.Byte(), 0)
				en.Size, en.Mode, en.Link, en.MTime = d.Int(), d.String(), d.String(), d.Int()
			}
		}
		if n := d.Count(4); n > 0 {
			res.Checks = make([]Check, n)
			for i := range res.Checks {
				c := &res.Checks[i]
				c.Name, c.Target = d.String(), d.String()
				c.OK = wire.Flag(d.Byte(), 0)
				c.Detail = d.String()
			}
		}
		r.Result = res
	}
	if err := d.End(); err != nil {
		return nil, fmt.Errorf("an unreadable answer: %w", err)
	}
	return r, nil
}

// reader reads one message at a time from a connection.
type reader struct{ r *bufio.Reader }

func newReader(conn io.Reader) *reader { return &reader{bufio.NewReaderSize(conn, 64<<10)} }

func (r *reader) next() ([]byte, error) { return wire.ReadFrame(r.r, maxMessage) }
