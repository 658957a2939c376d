package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/seatbelt"
	"github.com/openworker/openworker/core/wallcheck"
)

// What the battery asks a person to send names commands of the OS it ran on: sandbox
// profile prints a Seatbelt profile, which says nothing of a Linux wall.
func TestBatteryAdviceNamesThisOSsCommands(t *testing.T) {
	escape := []wallcheck.Result{{Name: "read of ~/.ssh", Status: wallcheck.NotRefused}}
	broken := []wallcheck.Result{{Name: "ls /", Status: wallcheck.Broken}, {Name: "env", Status: wallcheck.Works, OK: true}}
	for _, rs := range [][]wallcheck.Result{escape, broken} {
		linux, darwin := batteryAdvice(rs, "linux"), batteryAdvice(rs, "darwin")
		if linux == "" || strings.Contains(linux, "sandbox profile") || !strings.Contains(linux, "openworker machine sandbox status") {
			t.Errorf("on Linux the battery says %q; want it to name machine sandbox status, never sandbox profile", linux)
		}
		if !strings.Contains(darwin, "openworker sandbox profile") {
			t.Errorf("on a Mac the battery says %q; want it to name sandbox profile", darwin)
		}
	}
	if a := batteryAdvice([]wallcheck.Result{{Name: "env", Status: wallcheck.Works, OK: true}}, "linux"); a != "" {
		t.Errorf("a battery that passed says %q", a)
	}
}

// The link probe's line keeps each of its six attempts for the report, and says what a Mac
// whose answer stays unknown gets: npm's links made copies, cargo failing.
func TestLinkProbeResult(t *testing.T) {
	var results []seatbelt.LinkResult
	for _, lp := range seatbelt.LinkProbes {
		results = append(results, seatbelt.LinkResult{Probe: lp, Done: lp.Want(), Err: map[bool]string{true: "", false: "ln: new: Operation not permitted"}[lp.Want()]})
	}
	results[1].Done, results[1].Err = true, ""
	why := "the link from the allowed folder into the denied one was made: Seatbelt checks the new name neither as a link nor as the create it makes"
	r := linkProbeResult(seatbelt.LinkAnswer{Checks: seatbelt.LinkChecksUnknown, Why: why, Results: results}, nil)
	if len(r.Raw) != 6 || r.Raw[1] != "link from the allowed folder into the denied one: made" || !strings.Contains(r.Raw[0], "refused (ln: new: Operation not permitted)") {
		t.Errorf("raw attempts: %q", r.Raw)
	}
	if !strings.Contains(r.Status, why) || !strings.Contains(r.Status, "npm's links are made copies") || !strings.Contains(r.Status, "cargo build") {
		t.Errorf("unknown: %q", r.Status)
	}
	both := linkProbeResult(seatbelt.LinkAnswer{Checks: seatbelt.LinkChecksBoth, Results: results}, nil)
	if !strings.Contains(both.Status, "allowed") || len(both.Raw) != 6 {
		t.Errorf("both: %+v", both)
	}
	failed := linkProbeResult(seatbelt.LinkAnswer{Checks: seatbelt.LinkChecksUnknown}, errors.New("no state folder"))
	if !strings.Contains(failed.Status, "no state folder") {
		t.Errorf("failed: %+v", failed)
	}
}
