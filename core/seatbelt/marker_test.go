package seatbelt

import (
	"regexp"
	"strings"
	"testing"
)

// The marker's rule, as a regular expression; validMarker must agree with it. (The regexp
// itself is not used at run time: compiling its bounded repeat cost every process start
// most of a millisecond.)
var markerSpec = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{7,127}$`)

func TestValidMarkerMatchesItsRule(t *testing.T) {
	cases := []string{"", "short", "openworker-5f0c2a9e41b7d3c8a6e1f204", "-leading", ".leading1", "abcdefgh", "abcdefg",
		strings.Repeat("a", 128), strings.Repeat("a", 129), "has space1", `quote"mark`, "paren(x)1", "semi;colon", "ünïcode12", "a.b_c-d.e"}
	for _, c := range cases {
		if got, want := validMarker(c), markerSpec.MatchString(c); got != want {
			t.Errorf("validMarker(%q) = %v, rule says %v", c, got, want)
		}
	}
}

func FuzzValidMarker(f *testing.F) {
	f.Add("openworker-5f0c2a9e41b7d3c8a6e1f204")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validMarker(s), markerSpec.MatchString(s); got != want {
			t.Fatalf("validMarker(%q) = %v, rule says %v", s, got, want)
		}
	})
}
