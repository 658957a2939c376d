package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The app's Check this Mac… runs the binary's own check and shows its lines and report: the
// same check a person runs in a terminal, read back here as the app reads it.
func TestRunMachineCheck(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The app gives the check the person's login environment: here, the world's.
	report := filepath.Join(w.state, "check-report.txt")
	os.MkdirAll(w.state, 0o700)
	mc, err := runMachineCheck(ctx, binary, report, w.env)
	if err != nil {
		t.Fatal(err)
	}
	if !mc.Holds || len(mc.Programs) < 10 || !strings.HasPrefix(mc.Report, "OpenWorker sandbox check\n") || mc.ReportPath != report {
		t.Fatalf("check: holds %v, %d programs, report %q", mc.Holds, len(mc.Programs), mc.Report)
	}
	names := map[string]bool{}
	for _, p := range mc.Programs {
		names[p.Name] = true
		if !strings.Contains(mc.Report, "  "+strings.ReplaceAll(p.Name, w.home, "~")+": ") {
			t.Errorf("the report lacks %q", p.Name)
		}
	}
	if !names["server on loopback with --local-servers"] {
		t.Errorf("programs: %v", names)
	}
	if s := mc.summary(); !strings.HasPrefix(s, "The wall held") {
		t.Errorf("summary %q", s)
	}
	// A binary that is not there is a check that could not run, said so.
	if _, err := runMachineCheck(ctx, filepath.Join(t.TempDir(), "missing"), report, w.env); err == nil || !strings.Contains(err.Error(), "openworker sandbox check:") {
		t.Errorf("a missing binary: %v", err)
	}
}
