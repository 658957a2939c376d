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

// The line after a command names the loopback address the program could not reach, and only
// when the count says a loopback connection was refused and the program said which (the count
// is the whole sandbox network's), whatever the exit status; and how the address is reached in
// the words of the session's refusals: an agent's session names its tool, a person's theirs.
func TestLoopbackRefusedHint(t *testing.T) {
	agent := func(string) string {
		return "ask the person for it with the request_site tool and a reason they can judge"
	}
	person := func(target string) string { return "allow it with openworker run --allow " + target }
	for _, tc := range []struct {
		name    string
		how     func(string) string
		more    uint64
		exit    int
		stderr  string
		want    string
		wantNot bool
	}{
		{"curl", agent, 1, 7, "curl: (7) Failed to connect to 127.0.0.1 port 5432 after 0 ms: Couldn't connect to server", "at 127.0.0.1:5432 inside", false},
		{"node_v6", agent, 1, 1, "Error: connect ECONNREFUSED ::1:3000", "at [::1]:3000 inside", false},
		{"no_count", agent, 0, 7, "curl: (7) Failed to connect to 127.0.0.1 port 5432", "", true},
		{"succeeded", agent, 1, 0, "curl: (7) Failed to connect to 127.0.0.1 port 5432", "at 127.0.0.1:5432 inside", false},
		{"other_failure", agent, 1, 56, "curl: (56) CONNECT tunnel failed, response 403", "", true},
		{"person", person, 1, 0, "curl: (7) Failed to connect to 127.0.0.1 port 5432", "openworker run --allow 127.0.0.1:5432", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &countingProc{refused: 10}
			s := &Session{proc: p, spec: Spec{HowToAllow: tc.how}}
			s.hints.refused, s.hints.refusedSet = 10, true
			p.refused += tc.more
			line := s.loopbackRefused(&runner.Result{ExitCode: tc.exit, Stderr: []byte(tc.stderr)})
			if tc.wantNot != (line == "") || !strings.Contains(line, tc.want) {
				t.Fatalf("hint %q", line)
			}
			if line != "" && !strings.Contains(line, tc.how("x")[:20]) {
				t.Fatalf("the hint does not say it in the session's words: %q", line)
			}
		})
	}
}
