package gitmeta

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitKeys returns the keys git itself reads from a settings file, or false when git refuses
// the file.
func gitKeys(t testing.TB, git string, data []byte) ([]key, bool) {
	f := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(git, "config", "--file", f, "--list", "--name-only")
	c.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=/nonexistent"}
	out, err := c.Output()
	if err != nil {
		return nil, false
	}
	var keys []key
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		first, last := strings.Index(line, "."), strings.LastIndex(line, ".")
		k := key{section: line[:first], name: line[last+1:]}
		if first != last {
			k.sub = line[first+1 : last]
		}
		keys = append(keys, k)
	}
	return keys, true
}

// checkAgainstGit fails when git reads a dangerous key from data that dangerousKeys does
// not report (unless it refused the file as a whole, which moves it aside).
func checkAgainstGit(t testing.TB, git string, data []byte) {
	ours, err := dangerousKeys(data, "", nil)
	if err != nil {
		return
	}
	theirs, ok := gitKeys(t, git, data)
	if !ok {
		return
	}
	for _, k := range theirs {
		if isDangerous(k) && !slices.Contains(ours, k.String()) {
			t.Errorf("git reads %s from %q; dangerousKeys found only %q", k, data, ours)
		}
	}
}

var trickyConfigs = []string{
	"[core]\n\tfsmonitor = x\n",
	"[core]fsmonitor=x",
	"[core] ; c\n fsmonitor\n",
	"[a]\n\tb = \"x\\\n\"\n[core]\n\tpager = y\n",
	"[a]\n\tb = x \\\n[core]\n\tpager = y\n",
	"[a]\n\tb = x # \\\n[core]\n\tpager = y\n",
	"[a]\n\tb = \"x # \" \\\n\tfsmonitor = z\n",
	"[a \"b\\\"]\"]\n\tc = d\n[core]\n\teditor = e\n",
	"[Core.Sub]\n\tFsMonitor = x\n",
	"[core \"\"]\n\tfsmonitor = x\n",
	"[diff \"a.b\"]\n\ttextconv = x\n",
	"[diff.a.b]\n\ttextconv = x\n",
	"\xef\xbb\xbf[core]\n\tfsmonitor = x\n",
	"[core]\r\n\tfsmonitor = x\r\n",
	"[core]\n\tfsmonitor = x\x00y\n",
	"[core]\n\t\tfsmonitor\t=\tx\n",
	"[include]\n\tpath = x\n",
	"[includeIf \"onbranch:main\"]\n\tpath = x\n",
	"[core]\n\tfsmonitor = \"x\" \"y\"\n",
}

func TestDangerousKeysAgreeWithGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git here")
	}
	for _, c := range trickyConfigs {
		checkAgainstGit(t, git, []byte(c))
	}
}

// FuzzDangerousKeys compares the reader with git's own on mutated settings files: every
// dangerous key git reads from a file the reader accepts, the reader reports.
func FuzzDangerousKeys(f *testing.F) {
	git, err := exec.LookPath("git")
	if err != nil {
		f.Skip("no git here")
	}
	for _, c := range trickyConfigs {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstGit(t, git, data)
	})
}
