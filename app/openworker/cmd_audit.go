package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/termtext"
)

var auditCommand = command{
	name:     "audit",
	synopsis: "audit [--session ID] [--since WHEN] [--follow]",
	about: `Shows the audit trail: one line per session and tool-call event, each with the enforcement
level that produced it. What a command wrote is shown escaped (a newline as \n), so that it can
neither forge a line nor drive the terminal. --follow starts at the end unless --since is given.`,
	example: "openworker audit --session 3f9c2a1b7d0e --since 1h\nopenworker audit --follow",
	maxArgs: 0,
}

func cmdAudit(args []string) error {
	fs := newFlags(auditCommand)
	follow := fs.Bool("follow", false, "keep printing new events as they happen")
	sessionID := fs.String("session", "", "only this session's events")
	since := fs.String("since", "", "only events since then: a duration back from now (10m, 2h) or a time (2026-12-01 or 2026-12-01T09:30)")
	if _, _, err := parse(fs, auditCommand, args); err != nil {
		return err
	}
	o := audit.ShowOptions{Follow: *follow, Session: *sessionID}
	if *since != "" {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			return usagef("audit", "%v", err)
		}
		o.Since = t
	}
	state, err := config.StateDir()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	out := &countingWriter{w: os.Stdout}
	if err := audit.Show(ctx, filepath.Join(state, "audit.jsonl"), out, o); err != nil {
		return err
	}
	if out.n == 0 && !*follow {
		// Nothing printed is said, with what was asked, so that a mistyped ID shows.
		what := "no events"
		if *sessionID != "" {
			what += " of session " + termtext.Escape(*sessionID)
		}
		if *since != "" {
			what += " since " + termtext.Escape(*since)
		}
		fmt.Fprintf(os.Stderr, "openworker: %s in the audit trail (openworker session ls lists the running sessions)\n", what)
	}
	return nil
}

// countingWriter counts what goes through it.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// parseSince reads --since: a duration back from now, or a local date or time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, strings.TrimSpace(s), time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q is neither a duration (10m, 2h) nor a time (2026-12-01, 2026-12-01T09:30)", s)
}
