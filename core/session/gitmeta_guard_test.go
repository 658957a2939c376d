package session

import (
	"testing"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
)

// Both walls check repository metadata after each call: Linux for repositories its binds do
// not cover, Seatbelt for what a rename brings past its rules. Only a direct session, or the
// person's "writable", does not.
func TestWhichSessionsCheckGitMetadata(t *testing.T) {
	for _, tc := range []struct {
		e        sandbox.Enforcement
		writable bool
		want     bool
	}{
		{sandbox.Linux, false, true},
		{sandbox.Seatbelt, false, true},
		{sandbox.Direct, false, false},
		{sandbox.Linux, true, false},
		{sandbox.Seatbelt, true, false},
	} {
		s := &Session{Enforcement: tc.e}
		if got := s.guardsGitMetadata(&policy.Policy{GitMetadataWritable: tc.writable}); got != tc.want {
			t.Errorf("%s, writable %v: checks %v, want %v", tc.e, tc.writable, got, tc.want)
		}
	}
}
