package seatbelt

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/policy"

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

// TestRunnerNotInVarFolders: an app opened where it was downloaded or unzipped runs from a
// translocated copy under /private/var/folders; its runner's files there would make the
// person's per-user folders stat-able, as a private tmp there would. Render refuses it, and
// says what to do.
func TestRunnerNotInVarFolders(t *testing.T) {
	p := macPolicy()
	p.RunnerFiles = []string{"/private/var/folders/xy/abc123/T/AppTranslocation/1A2B3C4D-5E6F/d/OpenWorker.app/Contents/Helpers/openworker-runner"}
	_, err := Render(p)
	if err == nil || !strings.Contains(err.Error(), "/private/var/folders") || !strings.Contains(err.Error(), "move OpenWorker.app to /Applications") {
		t.Errorf("Render err = %v, want a refusal naming /private/var/folders and what to do", err)
	}
}

// A binary under /private/var/folders is the app's translocated copy (or another temporary
// one): sessions are refused until the app is moved, and the reason says how.
func TestTranslocated(t *testing.T) {
	for bin, want := range map[string]bool{
		"/private/var/folders/xy/abc123/T/AppTranslocation/1A2B/d/OpenWorker.app/Contents/Helpers/openworker-runner": true,
		"/private/var/folders/xy/abc123/T/go-build123/exe/openworker":                                                true,
		"/Applications/OpenWorker.app/Contents/Helpers/openworker-runner":                                            false,
		"/Users/me/Downloads/OpenWorker.app/Contents/Helpers/openworker-runner":                                      false,
	} {
		why := runnerPlace(bin)
		if (why != "") != want {
			t.Errorf("runnerPlace(%s) = %q, want a reason: %v", bin, why, want)
		}
		if want && !strings.Contains(why, "/Applications") {
			t.Errorf("runnerPlace(%s) = %q: it does not say where to move the app", bin, why)
		}
	}
	if why := runnerPlace("/private/var/folders/xy/abc123/T/AppTranslocation/1A2B/d/OpenWorker.app/Contents/Helpers/openworker-runner"); !strings.Contains(why, "App Translocation") {
		t.Errorf("a translocated app: %q", why)
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

func bindIP(addr string) sbpl.Query   { return sbpl.Query{Op: "network-bind", Addr: addr} }
func acceptIP(addr string) sbpl.Query { return sbpl.Query{Op: "network-inbound", Addr: addr} }

// TestLocalServers: the person's switch lets a session's servers bind on any local address
// (Node's listen(port), Express, supertest and python3 -m http.server bind :: or 0.0.0.0)
// and take connections that arrive at loopback, and its clients reach any loopback port
// (Seatbelt cannot tell the session's own from the host's). Off, none of it.
func TestLocalServers(t *testing.T) {
	loopback := []sbpl.Query{
		bindIP("127.0.0.1:8080"), bindIP("[::1]:3000"), bindIP("127.0.0.1:0"),
		bindIP("[::]:3000"), bindIP("0.0.0.0:8000"), bindIP("[::]:0"), bindIP("192.168.1.20:8080"),
		acceptIP("127.0.0.1:8080"), acceptIP("[::1]:3000"),
		dial("127.0.0.1:8080"), dial("[::1]:5432"),
	}
	// Never, switch or not: a connection that arrives at an address the network reaches, and
	// host sockets; in allowlist and none modes, the internet and the rest of 127/8 (open
	// mode cannot name it, as its profile says).
	never := []expect{
		deny(acceptIP("192.168.1.20:8080")),
		deny(acceptIP("[fe80::1]:3000")),
		deny(acceptIP("10.0.0.5:8000")),
		deny(unix("/private/var/run/docker.sock")),
	}
	for _, mode := range []policy.Network{policy.Allowlist, policy.Open, policy.None} {
		for _, on := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%v", mode, on), func(t *testing.T) {
				p := macPolicy()
				p.Network, p.LocalServers = mode, on
				if mode != policy.Allowlist {
					p.ProxyPort = 0
				}
				_, ev := render(t, p)
				var cases []expect
				for _, q := range loopback {
					cases = append(cases, expect{q: q, allow: on})
				}
				cases = append(cases, never...)
				if mode != policy.Open {
					cases = append(cases, deny(dial("93.184.216.34:443")), deny(dial("127.0.0.2:8080")), deny(dial("[::ffff:127.0.0.1]:8080")))
				}
				checkQuiet(t, ev, cases)
			})
		}
	}
}

// TestForwardsReachLoopback: an allowed host loopback entry is reached directly, at its port
// only, by clients that never use a proxy (psql, redis-cli, Go's HTTP client).
func TestForwardsReachLoopback(t *testing.T) {
	p := macPolicy()
	p.Forwards = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:5432"), netip.MustParseAddrPort("[::1]:6379")}
	_, ev := render(t, p)
	checkQuiet(t, ev, []expect{
		allow(dial("127.0.0.1:5432")), allow(dial("[::1]:5432")), allow(dial("127.0.0.1:6379")),
		deny(dial("127.0.0.1:5433")), deny(dial("127.0.0.1:22")),
		deny(bindIP("127.0.0.1:5432")),
	})
}

// TestEverydaySwitchesKeepGitMetadata: the switches of this file open nothing of the
// repositories' metadata.
func TestEverydaySwitchesKeepGitMetadata(t *testing.T) {
	for _, mode := range []policy.Network{policy.Allowlist, policy.Open} {
		p := gitPolicy()
		p.LocalServers, p.Network = true, mode
		p.Forwards = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:5432")}
		_, ev := render(t, p)
		t.Run(string(mode), func(t *testing.T) { checkAll(t, ev, gitMetadataCases()) })
	}
}

// TestOpenModeResolvConf: in open mode, tools that read the resolver's file (dig, Go built
// with netgo, c-ares in Node and curl) resolve names themselves; the rest of the folder stays
// out, and in the other modes the proxy resolves names and the file stays out.
func TestOpenModeResolvConf(t *testing.T) {
	for _, mode := range []policy.Network{policy.Open, policy.Allowlist, policy.None} {
		t.Run(string(mode), func(t *testing.T) {
			p := macPolicy()
			p.Network = mode
			if mode != policy.Allowlist {
				p.ProxyPort = 0
			}
			_, ev := render(t, p)
			open := mode == policy.Open
			checkQuiet(t, ev, []expect{
				{q: file("file-read-data", "/private/var/run/resolv.conf"), allow: open},
				{q: file("file-read-metadata", "/private/var/run/resolv.conf"), allow: open},
				{q: file("file-read-metadata", "/private/var/run"), allow: open},
				deny(file("file-write-data", "/private/var/run/resolv.conf")),
				deny(file("file-read-data", "/private/var/run")),
				deny(file("file-read-data", "/private/var/run/utmpx")),
				deny(file("file-read-data", "/private/var/run/resolv.conf.bak")),
			})
		})
	}
}

// TestJavaCPUGrade: the JVM writes kern.grade_cputype at start (codex allows it); no other
// kernel value may be written.
func TestJavaCPUGrade(t *testing.T) {
	_, ev := render(t, macPolicy())
	checkQuiet(t, ev, []expect{
		allow(sbpl.Query{Op: "sysctl-write", Name: "kern.grade_cputype"}),
		deny(sbpl.Query{Op: "sysctl-write", Name: "kern.hostname"}),
		deny(sbpl.Query{Op: "sysctl-write", Name: "kern.maxfiles"}),
		deny(sbpl.Query{Op: "sysctl-write", Name: "kern.grade_cputype2"}),
	})
}
