package policy

import (
	"fmt"
	"path/filepath"
	"runtime"
)

var hostGOOS = runtime.GOOS

// darwinSystem is what a sandboxed command may read of a Mac (first seed, narrowed by the
// second: of /Library only the parts programs and toolchains need). Of /System only what
// programs load: its Library (frameworks, and the dyld shared cache up to macOS 12), the
// Cryptexes and the Preboot volume (the dyld shared cache from macOS 13 on), and the Mac
// Catalyst frameworks. Not /System/Volumes whole: /System/Volumes/Data is the data volume's
// own path to every file of the Mac, the home folder included (DarwinDataVolume).
var darwinSystem = []string{
	"/usr",
	"/bin",
	"/sbin",
	"/System/Library",
	"/System/Cryptexes",
	"/System/Volumes/Preboot",
	"/System/iOSSupport",
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

// SystemCABundles are the files where goos's TLS stacks look for the trusted roots when no
// variable names a file: each distribution's bundle, and the places other stacks (Go's,
// OpenSSL's defaults) look. The first that exists is the system's own bundle.
func SystemCABundles(goos string) []string {
	if goos == "darwin" {
		return []string{"/etc/ssl/cert.pem", "/private/etc/ssl/cert.pem"}
	}
	return []string{
		"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Arch, Gentoo
		"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // Fedora, RHEL (what ca-bundle.crt leads to)
		"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL
		"/etc/ssl/ca-bundle.pem",                            // openSUSE
		"/etc/pki/tls/cacert.pem",                           // OpenELEC
		"/etc/ssl/cert.pem",                                 // Alpine
	}
}

// SystemJavaTrustStores are the key stores Java programs read their trusted roots from when
// none is named: the distributions' shared stores, and each JDK's own under /usr/lib/jvm
// (most are links to the shared one, covered where they lead). A Mac's JDKs keep theirs
// in each JDK, which a Seatbelt wall cannot replace: none there.
func SystemJavaTrustStores(goos string) []string {
	if goos != "linux" {
		return nil
	}
	out := []string{
		"/etc/ssl/certs/java/cacerts",              // Debian, Ubuntu, Alpine
		"/etc/pki/ca-trust/extracted/java/cacerts", // Fedora, RHEL
		"/var/lib/ca-certificates/java-cacerts",    // openSUSE
	}
	for _, pattern := range []string{"/usr/lib/jvm/*/lib/security/cacerts", "/usr/lib/jvm/*/jre/lib/security/cacerts"} {
		found, _ := filepath.Glob(pattern)
		out = append(out, found...)
	}
	return out
}

// DarwinDataVolume is the data volume's own path on a Mac (macOS 10.15 and later): every file
// that is not on the system volume has a second spelling below it (/Users/me/.ssh is also
// /System/Volumes/Data/Users/me/.ssh). Whether Seatbelt matches that spelling as given or
// the firmlinked one is not documented, so a profile denies it whole, as it denies the home
// folder, and it is never a session folder.
const DarwinDataVolume = "/System/Volumes/Data"

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
	// Debian's and Ubuntu's OpenJDKs keep their settings here (java.security among them),
	// without which java does not start.
	"/etc/java-8-openjdk",
	"/etc/java-11-openjdk",
	"/etc/java-17-openjdk",
	"/etc/java-21-openjdk",
	"/etc/java-25-openjdk",
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

// systemFolder is a machine folder a session folder may not be (or lie inside), and why.
type systemFolder struct {
	path string
	// inside: a folder inside it is refused as well.
	inside bool
	// readOnly: refused as a read-only folder too, not only as a writable one.
	readOnly     bool
	what, reason string
}

func (s systemFolder) message(kind, name string, exact bool) string {
	if exact {
		return fmt.Sprintf("%s folder %s is %s: %s", kind, name, s.what, s.reason)
	}
	return fmt.Sprintf("%s folder %s lies inside %s, %s: %s", kind, name, s.path, s.what, s.reason)
}

const (
	partOfSystem   = "part of the system"
	systemReadOnly = "the sandbox already reads what programs need of it, and no sandboxed command may change it"
	privateTmp     = "inside, the sandbox's /tmp is a private one of its own, emptied when the session ends; share a folder inside it, or a project folder"
)

// linuxFolders are a Linux machine's own folders. Writing one would change the machine for
// everyone (as root, for real); reading the kernel's and the settings' ones would show a
// sandboxed command the machine's processes, devices and secrets.
var linuxFolders = []systemFolder{
	{path: "/proc", inside: true, readOnly: true, what: "the kernel's view of this machine's processes", reason: "the sandbox has a /proc of its own"},
	{path: "/sys", inside: true, readOnly: true, what: "the kernel's view of this machine's devices and settings", reason: "no sandboxed command may read or change them"},
	{path: "/dev", inside: true, readOnly: true, what: "this machine's devices", reason: "the sandbox has a /dev of its own with null, zero, full and random only"},
	{path: "/run", inside: true, readOnly: true, what: "the running services' sockets and state", reason: "a sandboxed command could talk to the machine's services"},
	{path: "/etc", inside: true, readOnly: true, what: "this machine's settings", reason: "it holds passwords and host keys, and the sandbox already reads what programs need of it"},
	{path: "/boot", inside: true, readOnly: true, what: "the kernel and its boot loader", reason: "no sandboxed command has business there"},
	{path: "/usr", inside: true, what: partOfSystem, reason: systemReadOnly},
	{path: "/bin", inside: true, what: partOfSystem, reason: systemReadOnly},
	{path: "/sbin", inside: true, what: partOfSystem, reason: systemReadOnly},
	{path: "/lib", inside: true, what: partOfSystem, reason: systemReadOnly},
	{path: "/lib32", inside: true, what: partOfSystem, reason: systemReadOnly},
	{path: "/lib64", inside: true, what: partOfSystem, reason: systemReadOnly},
	{path: "/libx32", inside: true, what: partOfSystem, reason: systemReadOnly},
	{path: "/nix", inside: true, what: partOfSystem, reason: systemReadOnly},
	{path: "/snap", inside: true, what: partOfSystem, reason: systemReadOnly},
	{path: "/opt", what: "the folder of programs installed for the whole machine", reason: "the sandbox already reads it; share the one program's folder you mean"},
	{path: "/var", readOnly: true, what: "the folder of every service's data", reason: "share the one folder you mean"},
	{path: "/var/lib", inside: true, what: "the machine's service data", reason: "a sandboxed command could change what its services keep"},
	{path: "/var/log", inside: true, what: "the machine's logs", reason: "a sandboxed command could rewrite them"},
	{path: "/var/cache", inside: true, what: "the machine's caches", reason: "a sandboxed command could poison what its services and package manager cache"},
	{path: "/var/spool", inside: true, what: "the machine's queues (mail, print, cron)", reason: "a sandboxed command could queue work for them"},
	{path: "/var/mail", inside: true, what: "the machine's mail", reason: "no sandboxed command may read or change it"},
	{path: "/var/backups", inside: true, what: "the machine's backups", reason: "no sandboxed command may read or change them"},
	{path: "/tmp", readOnly: true, what: "the machine's /tmp", reason: privateTmp},
	{path: "/var/tmp", readOnly: true, what: "a folder every user of this machine shares", reason: "share a folder inside it"},
}

// darwinFolders are a Mac's own folders, as resolved paths (/etc is /private/etc).
var darwinFolders = []systemFolder{
	{path: "/dev", inside: true, readOnly: true, what: "this machine's devices", reason: "the sandbox reaches the few it needs already"},
	{path: "/private/etc", inside: true, readOnly: true, what: "this machine's settings", reason: "it holds its secrets, and the sandbox already reads what programs need of it"},
	{path: DarwinDataVolume, inside: true, readOnly: true, what: "the data volume's own path to every file of this Mac", reason: "the sandbox never reaches anything by it; share the folder by its usual path (without " + DarwinDataVolume + ")"},
	{path: "/System", inside: true, what: partOfSystem, reason: systemReadOnly},
	{path: "/usr", inside: true, what: partOfSystem, reason: systemReadOnly},
	{path: "/bin", inside: true, what: partOfSystem, reason: systemReadOnly},
	{path: "/sbin", inside: true, what: partOfSystem, reason: systemReadOnly},
	{path: "/Library", inside: true, what: "the machine's library", reason: "a sandboxed command could change what every program and user loads"},
	{path: "/Applications", inside: true, what: "the machine's apps", reason: "a sandboxed command could change an app you open later"},
	{path: "/private/var", readOnly: true, what: "the folder of every service's data", reason: "share the one folder you mean"},
	{path: "/private/var/db", inside: true, readOnly: true, what: "the machine's databases", reason: "no sandboxed command may read or change them"},
	{path: "/private/var/root", inside: true, readOnly: true, what: "the root user's home folder", reason: "no sandboxed command may read or change it"},
	{path: "/private/var/log", inside: true, what: "the machine's logs", reason: "a sandboxed command could rewrite them"},
	{path: "/private/tmp", readOnly: true, what: "the machine's /tmp", reason: privateTmp},
	{path: "/Volumes", readOnly: true, what: "the folder of every disk", reason: "share a folder on the disk you mean"},
}

func systemFolders(goos string) []systemFolder {
	if goos == "darwin" {
		return darwinFolders
	}
	return linuxFolders
}
