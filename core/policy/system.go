package policy

import "runtime"

var hostGOOS = runtime.GOOS

// darwinSystem is what a sandboxed command may read of a Mac (first seed, narrowed by the
// second: of /Library only the parts programs and toolchains need).
var darwinSystem = []string{
	"/usr",
	"/bin",
	"/sbin",
	"/System",
	"/opt",
	"/Applications",
	"/private/etc",
	"/private/var/db/timezone",
	"/Library/Apple",
	"/Library/Developer/CommandLineTools",
	"/Library/Frameworks",
	"/Library/Java",
	"/Library/Fonts",
	"/Library/TeX",
	"/Library/Preferences",
	"/Library/Managed Preferences",
}

// linuxSystem is what a sandboxed command may read of a Linux machine. Of /etc only what
// programs need: name lookups, certificates, time zone, alternatives.
var linuxSystem = []string{
	"/usr",
	"/bin",
	"/sbin",
	"/lib",
	"/lib32",
	"/lib64",
	"/libx32",
	"/opt",
	"/etc/alternatives",
	"/etc/ca-certificates",
	"/etc/ca-certificates.conf",
	"/etc/ssl",
	"/etc/pki",
	"/etc/passwd",
	"/etc/group",
	"/etc/hosts",
	"/etc/host.conf",
	"/etc/nsswitch.conf",
	"/etc/localtime",
	"/etc/timezone",
	"/etc/ld.so.cache",
	"/etc/ld.so.conf",
	"/etc/ld.so.conf.d",
	"/etc/mime.types",
	"/etc/gitconfig",
	"/etc/profile",
	"/etc/bash.bashrc",
	"/etc/inputrc",
	"/usr/share/zoneinfo",
}

// SystemPaths returns the system paths a sandbox may read on goos ("darwin" or "linux").
// The list is data, not logic, so that a Seatbelt profile can be rendered on any OS.
func SystemPaths(goos string) []string {
	switch goos {
	case "darwin":
		return append([]string(nil), darwinSystem...)
	default:
		return append([]string(nil), linuxSystem...)
	}
}
