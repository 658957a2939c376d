package main

import (
	"strings"
	"testing"

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
