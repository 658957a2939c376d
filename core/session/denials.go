package session

import (
	"context"
	"os"
	"path/filepath"

	"github.com/openworker/openworker/core/sandbox"
)

// FollowDenials opens one command's report of what its wall refused; its error says, in a
// sentence, why the command's denials cannot be reported.
type FollowDenials func(ctx context.Context, marker string, proc sandbox.Process) (sandbox.DenialReport, error)

// startDenials opens the command's report where the session's wall reports its denials
// (sandbox.DenialReporter: Seatbelt). Where they cannot be read, the command still runs
// behind the wall, and its error output starts with a line that says its denials are not
// reported and why. s.mu is held.
func (s *Session) startDenials(onChunk func(string, []byte)) (stop func(*Result)) {
	return s.startDenialsOn(&lane{pol: s.pol, proc: s.proc}, onChunk)
}

// startDenialsOn is startDenials for a command on l, the runner that runs it.
func (s *Session) startDenialsOn(l *lane, onChunk func(string, []byte)) (stop func(*Result)) {
	follow := s.m.opts.FollowDenials
	if follow == nil {
		dr, ok := s.m.opts.Providers[s.Enforcement].(sandbox.DenialReporter)
		if !ok {
			return func(*Result) {}
		}
		follow = dr.FollowDenials
	}
	rep, err := follow(context.Background(), l.pol.Marker, l.proc)
	if err != nil {
		line := "openworker sandbox: " + err.Error() + "\n"
		if onChunk != nil {
			onChunk("stderr", []byte(line))
		}
		return func(r *Result) {
			if r.Result != nil {
				r.Stderr = append([]byte(line), r.Stderr...)
			}
		}
	}
	return func(r *Result) {
		failed := r.Result == nil || r.ExitCode != 0 || r.TimedOut
		s.applyDenials(r, rep.Close(sandbox.DenialRun{UserHome: l.pol.UserHome, Failed: failed, LocalServers: l.pol.LocalServers}), onChunk)
	}
}

// applyDenials adds what the wall denied to a result: a direct connection around the proxy
// becomes a blocked site, and the report is appended to the command's error output.
func (s *Session) applyDenials(r *Result, ds sandbox.Denials, onChunk func(string, []byte)) {
	applyDenials(r, ds, onChunk)
	s.keepViolations(ds.Violations)
}

func applyDenials(r *Result, ds sandbox.Denials, onChunk func(string, []byte)) {
	for _, e := range ds.Egress {
		b := Blocked{Host: e.Host, Port: e.Port, Reason: e.Reason}
		dup := false
		for _, have := range r.Blocked {
			dup = dup || have == b
		}
		if !dup {
			r.Blocked = append(r.Blocked, b)
		}
	}
	r.Denials = append(r.Denials, ds.Listed...)
	if ds.Text == "" {
		return
	}
	if onChunk != nil {
		onChunk("stderr", []byte(ds.Text))
	}
	if r.Result != nil {
		r.Stderr = append(r.Stderr, ds.Text...)
	}
}

// keepViolations appends every denial of a run to the session's violations file in the
// state folder, outside every wall.
func (s *Session) keepViolations(lines []byte) {
	if len(lines) == 0 {
		return
	}
	dir := filepath.Join(s.m.opts.StateDir, "violations")
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, s.ID+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(lines)
}
