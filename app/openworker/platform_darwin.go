package main

import (
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/seatbelt"
)

func nativeProvider() sandbox.Provider { return &seatbelt.Provider{} }

// checkIn has native's own check use dir, a recorded folder: Seatbelt's check makes a folder
// of its own, which it removes as it ends.
func checkIn(native sandbox.Provider, dir string) {}

// javaMissing says why the java on PATH is no Java: /usr/bin/java is on every Mac, and with no
// runtime installed it only offers to install one. /usr/libexec/java_home, run outside the
// wall, finds an installed runtime or fails.
func javaMissing() string {
	if exec.Command("/usr/libexec/java_home").Run() != nil {
		return "no Java runtime is installed (/usr/libexec/java_home found none; /usr/bin/java only offers to install one)"
	}
	return ""
}

// systemName is this Mac's macOS version, for the check's report.
func systemName() string {
	v, err := unix.Sysctl("kern.osproductversion")
	if err != nil || v == "" {
		return "macOS (version unknown)"
	}
	return "macOS " + v
}

// rosettaMissing says why x86_64 programs cannot run on this Mac, as found outside the wall:
// an Intel Mac needs no Rosetta, and on Apple silicon it may not be installed.
func rosettaMissing() string {
	if runtime.GOARCH != "arm64" {
		return "this Mac is not Apple silicon: x86_64 programs run natively"
	}
	if exec.Command("arch", "-x86_64", "/usr/bin/true").Run() != nil {
		return "Rosetta is not installed on this Mac (arch -x86_64 /usr/bin/true fails outside the sandbox too)"
	}
	return ""
}

// credentialsWhere is where the shared logins are besides this command: on a Mac, the app's
// screen (and the settings file's [[sandbox_credentials]]).
const credentialsWhere = "Settings ▸ Sandbox ▸ \"Explicit config and keys exposed to\nAgent\", or [[sandbox_credentials]] in the settings file"
