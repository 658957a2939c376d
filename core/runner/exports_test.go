package runner

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// nasty are values that need every kind of quoting a shell uses when it lists them.
var nasty = map[string]string{
	"OW_EMPTY":   "",
	"OW_QUOTES":  `it's "quoted"`,
	"OW_SHELL":   "$HOME `id` \\ \\\\ $(x) ${y}",
	"OW_LINES":   "one\ntwo\n\nthree\n",
	"OW_TABS":    "a\tb  c ",
	"OW_CONTROL": "bell\a esc\x1b del\x7f one\x01",
	"OW_UNICODE": "héllo — 世界 🙂",
	"OW_EQUALS":  "a=b==c",
	"OW_BACKSL":  `ends with\`,
}

// Each shell that may be /bin/sh lists the variables its own way; the parse must give back
// exactly what env sees.
func TestParseExportsOfRealShells(t *testing.T) {
	shells := [][]string{{"dash"}, {"bash", "--posix"}, {"bash"}, {"busybox", "sh"}, {"mksh"}, {"zsh", "--emulate", "sh"}}
	ran := 0
	for _, sh := range shells {
		if _, err := exec.LookPath(sh[0]); err != nil {
			continue
		}
		ran++
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			script := "export -p; printf '\\000\\000'; env -0"
			cmd := exec.Command(sh[0], append(sh[1:], "-c", script)...)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
			for k, v := range nasty {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			listing, envOut, ok := strings.Cut(string(out), "\x00\x00")
			if !ok {
				t.Fatalf("no separator in %q", out)
			}
			got, err := parseExports(listing)
			if err != nil {
				t.Fatalf("%v; the listing:\n%s", err, listing)
			}
			want := strings.Split(strings.TrimSuffix(envOut, "\x00"), "\x00")
			ignore := func(kv string) bool {
				return strings.HasPrefix(kv, "_=") || strings.HasPrefix(kv, "SHLVL=") || strings.HasPrefix(kv, "OLDPWD=") || strings.HasPrefix(kv, "PWD=")
			}
			got = slices.DeleteFunc(got, ignore)
			want = slices.DeleteFunc(want, ignore)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("parsed\n%q\nenv says\n%q\nfrom the listing:\n%s", got, want, listing)
			}
		})
	}
	if ran == 0 {
		t.Skip("no POSIX shell found")
	}
}

func TestParseExportsForms(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"export A='x'\"'\"'y'\nexport B\nexport C=''\n", []string{"A=x'y", "C="}},
		{"declare -x A=\"a\\\"b\\\\c\\$d\\`e\\f\"\ndeclare -x N\n", []string{"A=a\"b\\c$d`e\\f"}},
		{"export A=$'l1\\nl2\\t\\x41\\101\\u00e9\\cA\\'q'\n", []string{"A=l1\nl2\tAAé\x01'q"}},
		{"export A=plain\\ word\n", []string{"A=plain word"}},
		{"export A='multi\nline'\nexport B=1", []string{"A=multi\nline", "B=1"}},
		{"", nil},
	} {
		got, err := parseExports(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("parseExports(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"export A='unterminated\n", "A=1\n", "export A=\"open\n", "export A=two words\n", "export =x\n", "export A=$'\\xZZ'\n"} {
		if got, err := parseExports(bad); err == nil {
			t.Errorf("parseExports(%q) = %q, want an error", bad, got)
		}
	}
}
