package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README's figures a newcomer acts on are the repository's: the Go version it asks for
// is go.mod's, and the packages it says CI installs are .ci/run's.
func TestReadmeFigures(t *testing.T) {
	readme := read(t, "../../README.md")
	mod := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(read(t, "../../go.mod"))
	if mod == nil {
		t.Fatal("go.mod has no go line")
	}
	// Every Go a reader is told to have ("Go 1.25 or later" is a range the text speaks of).
	for _, m := range regexp.MustCompile(`(?:need|with) Go (1\.[0-9.]+)( or later)?`).FindAllStringSubmatch(readme, -1) {
		if m[2] == "" && m[1] != mod[1] {
			t.Errorf("README says %q where go.mod says go %s", m[0], mod[1])
		}
	}
	if !strings.Contains(readme, "You need Go "+mod[1]+" or newer") {
		t.Errorf("README does not say the Go version go.mod needs (%s)", mod[1])
	}
	pkgs := regexp.MustCompile(`for pkg in ([^;]+);`).FindStringSubmatch(read(t, "../../.ci/run"))
	if pkgs == nil {
		t.Fatal(".ci/run has no package list")
	}
	said := regexp.MustCompile("`\\.ci/run` first installs ([^)]+)\\)").FindStringSubmatch(readme)
	if said == nil {
		t.Fatal("README does not say what .ci/run installs")
	}
	for _, p := range strings.Fields(pkgs[1]) {
		if !strings.Contains(said[1], "`"+p+"`") {
			t.Errorf("README's list of what .ci/run installs (%s) leaves out %s", said[1], p)
		}
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
