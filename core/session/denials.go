package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/seatbelt"
)

// DenialFollower collects a command's Seatbelt denials while it runs.
type DenialFollower interface {
	Stop() []seatbelt.Denial
}

// followSeatbelt is the default way to follow denials: the unified log, on macOS.
func followSeatbelt(ctx context.Context, marker string) (DenialFollower, error) {
	f, err := seatbelt.StartFollower(ctx, marker)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// startDenials starts following the run's denials when the wall is Seatbelt's. Where the log
// cannot be read, the command still runs behind the wall, and its error output starts with
// a line that says its denials are not reported and why.
func (s *Session) startDenials(onChunk func(string, []byte)) (stop func(*Result)) {
	if s.Enforcement != sandbox.Seatbelt {
		return func(*Result) {}
	}
	follow := s.m.opts.FollowDenials
	if follow == nil {
		follow = followSeatbelt
	}
	f, err := follow(context.Background(), s.pol.Marker)
	if err != nil {
		line := seatbelt.NotReportedLine(err)
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
		sum := seatbelt.SummarizeRun(f.Stop(), seatbelt.Run{UserHome: s.pol.UserHome, Failed: failed, LocalServers: s.pol.LocalServers})
		applyDenials(r, sum, onChunk)
		s.keepViolations(sum.All)
	}
}

// applyDenials adds what Seatbelt denied to a result: a direct connection around the proxy
// becomes a blocked site, and the report is appended to the command's error output.
func applyDenials(r *Result, sum seatbelt.Summary, onChunk func(string, []byte)) {
	for _, e := range sum.Egress {
		b := Blocked{Host: e.Host, Port: e.Port, Reason: e.Reason}
		dup := false
		for _, have := range r.Blocked {
			dup = dup || have == b
		}
		if !dup {
			r.Blocked = append(r.Blocked, b)
		}
	}
	for _, d := range sum.All {
		r.Denials = append(r.Denials, fmt.Sprintf("%s %s (%s)", d.Operation, d.Target, d.Process))
	}
	if sum.Text == "" {
		return
	}
	if onChunk != nil {
		onChunk("stderr", []byte(sum.Text))
	}
	if r.Result != nil {
		r.Stderr = append(r.Stderr, sum.Text...)
	}
}

// keepViolations appends every denial of a run to the session's violations file in the
// state folder, outside every wall.
func (s *Session) keepViolations(ds []seatbelt.Denial) {
	if len(ds) == 0 {
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
	_ = seatbelt.WriteViolations(f, ds)
}
