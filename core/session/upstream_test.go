package session

import (
	"slices"
	"testing"
)

// A quiet git push -u is found in a command's words, with what it names; other pushes and
// other words are not.
func TestQuietPushes(t *testing.T) {
	for command, want := range map[string][]push{
		"git push -q -u origin topic": {{remote: "origin", src: "topic"}},
		"cd x && git push -uq":        {{remote: "origin"}},
		"git -C sub push --quiet --set-upstream up HEAD:refs/heads/main": {{dir: "sub", remote: "up", src: "HEAD", dst: "refs/heads/main"}},
		"git push -u origin topic":                                       nil, // git says it: the output names it
		"git push -q origin topic":                                       nil, // no upstream
		"echo git push -q -u origin x; git status":                       {{remote: "origin", src: "x"}},
		"git push -q -u -o ci.skip origin +feature:other":                {{remote: "origin", src: "feature", dst: "other"}},
		"git commit -qm 'push -u'":                                       nil,
	} {
		if got := quietPushes(command); !slices.Equal(got, want) {
			t.Errorf("quietPushes(%q) = %+v, want %+v", command, got, want)
		}
	}
}
