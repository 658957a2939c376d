package main

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// sandbox check --report writes, on Linux too, the report a person attaches to a bug report:
// its header, a line for each program the check printed, what to make of the denials, and
// nothing of the person's own (no environment values, no home folder's path), owner-only.
func TestSandboxCheckReport(t *testing.T) {
	w := newWorld(t)
	report := filepath.Join(w.project, "check report.txt")
	out, errs, code := w.run("sandbox", "check", "--report", report)
	if code != 0 {
		t.Skipf("no sandbox here: %s%s", out, errs)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, re := range []string{
		`(?m)^OpenWorker sandbox check\nOpenWorker: \S+\nSystem: Linux \S+.* \(` + regexp.QuoteMeta(goarch()) + `\)\nSandbox: tier 1 \(linux: .*\)\nPrograms: \d+ as they must be, \d+ not, \d+ skipped; the wall held\n\nWhat ran, and how it went:\n`,
		`(?m)^  read of ~/\.ssh/id_ed25519: refused$`,
		`(?m)^  npm install from a registry on loopback: `,
		`(?m)^  server on loopback with --local-servers: `,
		`This wall does not report its denials`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("the report lacks %s:\n%s", re, text)
		}
	}
	// Every program the check printed has its line.
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "  ") {
			continue
		}
		name := strings.TrimSpace(regexp.MustCompile(`\s{2,}\S.*$`).ReplaceAllString(strings.TrimPrefix(l, "  "), ""))
		name = strings.ReplaceAll(name, w.home, "~")
		if !strings.Contains(text, "  "+name+": ") {
			t.Errorf("the report has no line for %q", name)
		}
	}
	for _, never := range []string{w.home, "ghp_planted", "planted"} {
		if strings.Contains(text, never) {
			t.Errorf("the report holds %q:\n%s", never, text)
		}
	}
	if fi, err := os.Stat(report); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the report's mode: %v %v", fi.Mode(), err)
	}
}

func goarch() string { return runtime.GOARCH }
