package main

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/linux"
	"github.com/openworker/openworker/core/sandbox"
)

func nativeProvider() sandbox.Provider { return &linux.Provider{} }

// checkIn has native's own check use dir, a recorded folder, as its private tmp.
func checkIn(native sandbox.Provider, dir string) {
	if p, ok := native.(*linux.Provider); ok {
		p.CheckTmp = dir
	}
}

// javaMissing is nil: on Linux a java on PATH is a Java.
var javaMissing func() string

// systemName is this machine's kernel release and distribution, for the check's report.
func systemName() string {
	name := "Linux"
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		name += " " + unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				name += " (" + strings.Trim(v, `"`) + ")"
			}
		}
	}
	return name
}

// rosettaMissing is nil: Rosetta is a Mac's.
var rosettaMissing func() string

// credentialsWhere is where the shared logins are besides this command: on Linux, which has
// no app, the settings file.
const credentialsWhere = "[[sandbox_credentials]] in the settings file, which this\ncommand changes; openworker config path says where it is"
