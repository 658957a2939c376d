package session

import (
	"strings"
	"testing"

	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
)

// countingProc is a sandbox whose refused loopback connections the test sets.
type countingProc struct {
	sandbox.Process
	refused uint64
}

func (p *countingProc) RefusedLoopback() (uint64, error) { return p.refused, nil }

// The line after a failed command names the loopback address the program could not reach,
// and only when the count says a loopback connection was refused and the program said which:
// the count is the whole sandbox network's.
func TestLoopbackRefusedHint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		more    uint64
		exit    int
		stderr  string
		want    string
		wantNot bool
	}{
		{"curl", 1, 7, "curl: (7) Failed to connect to 127.0.0.1 port 5432 after 0 ms: Couldn't connect to server", "request_site 127.0.0.1:5432", false},
		{"node_v6", 1, 1, "Error: connect ECONNREFUSED ::1:3000", "request_site [::1]:3000", false},
		{"no_count", 0, 7, "curl: (7) Failed to connect to 127.0.0.1 port 5432", "", true},
		{"succeeded", 1, 0, "curl: (7) Failed to connect to 127.0.0.1 port 5432", "", true},
		{"other_failure", 1, 56, "curl: (56) CONNECT tunnel failed, response 403", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &countingProc{refused: 10}
			s := &Session{proc: p}
			s.hints.refused, s.hints.refusedSet = 10, true
			p.refused += tc.more
			line := s.loopbackRefused(&runner.Result{ExitCode: tc.exit, Stderr: []byte(tc.stderr)})
			if tc.wantNot != (line == "") || !strings.Contains(line, tc.want) {
				t.Fatalf("hint %q", line)
			}
			if strings.Contains(line, "openworker access") || strings.Contains(line, "--allow") {
				t.Fatalf("the hint names a way to open the site: %q", line)
			}
		})
	}
}
