package seatbelt

import (
	"context"
	"fmt"
)

// StartFollower follows the unified log for the denials that carry marker and returns once
// the stream is ready: start the command after it returns, and call Stop after it ends. An
// error wrapping ErrNotAdmin means this user may not read the log; the command still runs
// sandboxed, and its error output should start with NotReportedLine.
func StartFollower(ctx context.Context, marker string) (*Follower, error) {
	if !validMarker(marker) {
		return nil, fmt.Errorf("seatbelt: marker %q cannot be used in a log predicate", marker)
	}
	predicate := fmt.Sprintf(`eventMessage CONTAINS "%s"`, marker)
	f, err := startFollower(ctx, marker, "/usr/bin/log", []string{"stream", "--style", "ndjson", "--predicate", predicate}, followReady, FollowGrace)
	if err != nil {
		return nil, fmt.Errorf("seatbelt: following the unified log: %w", err)
	}
	return f, nil
}
