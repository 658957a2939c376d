package seatbelt

import (
	"strings"
	"testing"

	"github.com/openworker/openworker/core/seatbelt/internal/sbpl"
)

// quietly is a query the profile must deny without a report: what programs try at start and
// do without, which would otherwise end every command's error output.
func quietly(q sbpl.Query) expect { return expect{q: q, allow: false, quiet: true} }

// checkQuiet evaluates each case as checkAll does, and also whether a denial is reported:
// every denial but a quiet one must be (no (with no-report) may hide what a command was
// refused), and a quiet one must not be.
func checkQuiet(t *testing.T, ev *sbpl.Profile, cases []expect) {
	t.Helper()
	checkAll(t, ev, cases)
	for _, c := range cases {
		if c.allow {
			continue
		}
		t.Run("report/"+c.q.String(), func(t *testing.T) {
			d := decide(t, ev, c.q)
			if d.Quiet != c.quiet {
				t.Errorf("%s: quiet = %v, want %v (rule %s)", c.q, d.Quiet, c.quiet, ev.Rules[d.Rule].Source)
			}
		})
	}
}

// TestQuietByDefault: what nearly every program does at start is either allowed (harmless)
// or denied without a report; its siblings, which reach something, stay denied and reported.
func TestQuietByDefault(t *testing.T) {
	cases := []expect{
		// Every process reads the boot arguments; none may change them.
		allow(sysctl("kern.bootargs")),
		deny(sbpl.Query{Op: "sysctl-write", Name: "kern.bootargs"}),
		// V8 reads whether thread-count protection is on; its write stays refused, quietly.
		allow(sysctl("kern.tcsm_enable")),
		quietly(sbpl.Query{Op: "sysctl-write", Name: "kern.tcsm_enable"}),
		deny(sysctl("kern.procargs2")),
		// libnotify's shared segment behind tzset/localtime: read only.
		allow(ipc("ipc-posix-shm-read-data", "apple.shm.notification_center")),
		allow(ipc("ipc-posix-shm-read-metadata", "apple.shm.notification_center")),
		deny(ipc("ipc-posix-shm-write-data", "apple.shm.notification_center")),
		deny(ipc("ipc-posix-shm-write-create", "apple.shm.notification_center")),
		deny(ipc("ipc-posix-shm-write-unlink", "apple.shm.notification_center")),
		deny(ipc("ipc-posix-shm-read-data", "apple.cfprefs.501")),
		// The automounter's no-wait device, probed by most programs at start: read only.
		allow(file("file-read-data", "/dev/autofs_nowait")),
		allow(file("file-read-metadata", "/dev/autofs_nowait")),
		deny(file("file-write-data", "/dev/autofs_nowait")),
		deny(file("file-ioctl", "/dev/autofs_nowait")),
		deny(file("file-read-data", "/dev/autofs")),
		// The OS's eligibility answers, which frameworks read at start.
		allow(file("file-read-data", "/private/var/db/os_eligibility/eligibility.plist")),
		allow(file("file-read-metadata", "/private/var/db/os_eligibility/eligibility.plist")),
		deny(file("file-write-data", "/private/var/db/os_eligibility/eligibility.plist")),
		deny(file("file-read-data", "/private/var/db/os_eligibility/other.plist")),
		allow(file("file-read-metadata", "/private/var/db/os_eligibility")),
		deny(file("file-read-data", "/private/var/db/os_eligibility")),
		// Foundation's services: looked up, refused, done without; no report.
		quietly(mach("com.apple.cfprefsd.agent")),
		quietly(mach("com.apple.cfprefsd.daemon")),
		quietly(mach("com.apple.diagnosticd")),
		quietly(mach("com.apple.analyticsd")),
		quietly(mach("com.apple.TrustEvaluationAgent")),
		quietly(mach("com.apple.CoreServices.coreservicesd")),
		quietly(sbpl.Query{Op: "user-preference-read"}),
		// Their siblings reach the person's apps, clipboard and keychain: reported.
		deny(mach("com.apple.pasteboard.1")),
		deny(mach("com.apple.coreservices.launchservicesd")),
		deny(mach("com.apple.SecurityServer")),
		deny(mach("com.apple.FSEvents")),
		deny(sbpl.Query{Op: "iokit-open"}),
		// The home folder's stats stay denied and reported (the report folds them).
		deny(file("file-read-metadata", "/Users/me/node_modules")),
		deny(file("file-read-metadata", "/Users/me/package.json")),
	}
	for name, p := range goldenPolicies() {
		t.Run(name, func(t *testing.T) {
			_, ev := render(t, p)
			checkQuiet(t, ev, cases)
		})
	}
}

// quietEscapes are the escapes of the matrix that are refused without a report: services
// Foundation looks up at start and does without. Every other escape is reported.
var quietEscapes = map[string]bool{"cfprefsd": true, "cfprefsd_daemon": true, "trust_evaluation_agent": true, "user_preference_read": true}

// TestQuietNeverHidesTheWall: no escape of the matrix is denied without a report.
func TestQuietNeverHidesTheWall(t *testing.T) {
	for name, p := range goldenPolicies() {
		_, ev := render(t, p)
		for _, a := range escapes {
			if quietEscapes[a.name] {
				continue
			}
			d := decide(t, ev, a.q)
			if !d.Allowed && d.Quiet {
				t.Errorf("%s: %s (%s) is denied without a report by %s", name, a.name, a.q, ev.Rules[d.Rule].Source)
			}
		}
	}
}

// TestXcrunFallbackCache: the /usr/bin developer shims, refused the person's per-user temp
// folder, fall back to /tmp/xcrun_db; that file (and its temporary siblings) is all they get.
func TestXcrunFallbackCache(t *testing.T) {
	cases := []expect{
		allow(file("file-write-create", "/private/tmp/xcrun_db")),
		allow(file("file-write-data", "/private/tmp/xcrun_db")),
		allow(file("file-read-data", "/private/tmp/xcrun_db")),
		allow(file("file-read-metadata", "/private/tmp/xcrun_db")),
		allow(file("file-write-unlink", "/private/tmp/xcrun_db")),
		allow(file("file-write-create", "/private/tmp/xcrun_db-Ab12Cd")),
		allow(file("file-write-unlink", "/private/tmp/xcrun_db-Ab12Cd")),
		// Nothing else in /private/tmp, nothing below the name, no other operation.
		deny(file("file-write-create", "/private/tmp/xcrun_dbx")),
		deny(file("file-write-create", "/private/tmp/xcrun_db-x/y")),
		deny(file("file-write-create", "/private/tmp/xcrun_db/y")),
		deny(file("file-write-create", "/private/tmp/x-xcrun_db")),
		deny(file("file-read-data", "/private/tmp")),
		deny(file("process-exec", "/private/tmp/xcrun_db")),
		deny(file("file-map-executable", "/private/tmp/xcrun_db")),
		deny(file("file-write-mode", "/private/tmp/xcrun_db")),
		deny(file("file-link", "/private/tmp/xcrun_db")),
		deny(file("file-write-create", "/private/var/tmp/xcrun_db")),
		// The person's own cache, which their xcrun outside reads, stays out of reach: so do
		// the per-user folders above it, so that confstr fails and xcrun stays on /tmp, and
		// the service that would make them.
		deny(file("file-write-create", "/private/var/folders/xy/abc123/T/xcrun_db")),
		deny(file("file-write-data", "/private/var/folders/xy/abc123/T/xcrun_db")),
		deny(file("file-read-data", "/private/var/folders/xy/abc123/T/xcrun_db")),
		deny(file("file-read-metadata", "/private/var/folders/xy/abc123/T")),
		deny(file("file-read-metadata", "/private/var/folders/xy/abc123")),
		deny(file("file-read-metadata", "/private/var/folders")),
		deny(mach("com.apple.bsd.dirhelper")),
	}
	for name, p := range goldenPolicies() {
		t.Run(name, func(t *testing.T) {
			_, ev := render(t, p)
			checkQuiet(t, ev, cases)
		})
	}
}

// TestPrivateTmpNotInVarFolders: a private tmp folder under /private/var/folders would make
// its per-user folders stat-able, so that xcrun's confstr succeeds and its cache moves into
// the person's own temp folder. Render refuses it.
func TestPrivateTmpNotInVarFolders(t *testing.T) {
	p := macPolicy()
	p.PrivateTmp = "/private/var/folders/xy/abc123/T/openworker-7f3a91"
	p.Home = p.PrivateTmp + "/home"
	if _, err := Render(p); err == nil || !strings.Contains(err.Error(), "/private/var/folders") {
		t.Errorf("Render err = %v, want a refusal naming /private/var/folders", err)
	}
}

func bindUnix(path string) sbpl.Query   { return sbpl.Query{Op: "network-bind", Path: path} }
func acceptUnix(path string) sbpl.Query { return sbpl.Query{Op: "network-inbound", Path: path} }

// TestUnixSocketsInPrivateTmp: tsx, vite, esbuild, jest workers, dotnet build, Nx, turbo and
// Python's multiprocessing.Manager listen on sockets in TMPDIR. Only there: a writable
// folder can hold a host daemon's socket.
func TestUnixSocketsInPrivateTmp(t *testing.T) {
	cases := []expect{
		allow(sbpl.Query{Op: "system-socket", Name: "AF_UNIX"}),
		allow(bindUnix("/private/tmp/openworker-7f3a91/tsx-501/1234.pipe")),
		allow(acceptUnix("/private/tmp/openworker-7f3a91/tsx-501/1234.pipe")),
		allow(unix("/private/tmp/openworker-7f3a91/tsx-501/1234.pipe")),
		allow(bindUnix("/private/tmp/openworker-7f3a91/home/.nx/d.sock")),
		// Everywhere else, writable folders too.
		deny(bindUnix("/Users/me/src/app/.sock")),
		deny(unix("/Users/me/src/app/.sock")),
		deny(acceptUnix("/Users/me/src/app/.sock")),
		deny(bindUnix("/private/tmp/openworker-7f3a91x/s")), // a sibling with the same prefix
		deny(unix("/private/tmp/openworker-7f3a91x/s")),
		deny(bindUnix("/private/tmp/s")),
		deny(unix("/private/tmp/com.apple.launchd.AbCdEf/Listeners")),
		deny(unix("/private/var/run/docker.sock")),
		deny(unix("/Users/me/.docker/run/docker.sock")),
		deny(bindUnix("/Users/me/.ssh/agent.sock")),
		deny(sbpl.Query{Op: "system-socket", Name: "AF_SYSTEM"}),
		// The folder's files stay what they were: a socket path is no door to exec or link.
		deny(file("file-link", "/private/tmp/openworker-7f3a91/tsx-501/1234.pipe")),
	}
	for name, p := range goldenPolicies() {
		t.Run(name, func(t *testing.T) {
			_, ev := render(t, p)
			checkQuiet(t, ev, cases)
		})
	}
}
