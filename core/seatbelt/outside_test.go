package seatbelt

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/seatbelt/internal/sbpl"
)

// expect is one query and what the profile must answer.
type expect struct {
	q     sbpl.Query
	allow bool
	quiet bool // denied without a report (see checkQuiet)
}

func deny(q sbpl.Query) expect  { return expect{q: q} }
func allow(q sbpl.Query) expect { return expect{q: q, allow: true} }

// checkAll evaluates each case; a denial must carry the run's marker, or it is not reported.
func checkAll(t *testing.T, ev *sbpl.Profile, cases []expect) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.q.String(), func(t *testing.T) {
			d := decide(t, ev, c.q)
			if d.Allowed != c.allow {
				t.Fatalf("%s: allowed = %v, want %v (rule %s)", c.q, d.Allowed, c.allow, ev.Rules[d.Rule].Source)
			}
			if !d.Allowed && !d.Quiet && d.Message != testMarker {
				t.Errorf("%s was denied by %s without the run's marker", c.q, ev.Rules[d.Rule].Source)
			}
		})
	}
}

// writes are every way of changing a path: its contents, creating it (and renaming onto it),
// removing it (and renaming it away), its mode, owner, flags, times, extended attributes and
// ACL, and giving it a second name by a hard link or a clone.
var writes = []string{
	"file-write-data", "file-write-create", "file-write-unlink", "file-write-mode", "file-write-owner",
	"file-write-setugid", "file-write-flags", "file-write-times", "file-write-xattr", "file-write-acl",
	"file-link", "file-clone",
}

// gitPolicy is a session with two writable folders holding repositories, protected as the
// session's start found them (gitmeta): the project's, with a linked worktree and a
// submodule, nested ones, one in a folder whose name holds a newline.
func gitPolicy() *policy.Policy {
	p := macPolicy()
	p.Writable = []string{"/Users/me/src/app", "/Volumes/Work/data"}
	withRepos(p, "/Users/me/src/app", "/Users/me/src/app/vendor/lib", "/Users/me/src/app/deep/b/c/d",
		"/Users/me/src/app/odd\nname", "/Volumes/Work/data", "/Volumes/Work/data/x")
	const g = "/Users/me/src/app/.git"
	for _, f := range []string{g + "/config.worktree", g + "/commondir", "/Users/me/src/app/wt/.git",
		g + "/worktrees/wt/config", g + "/worktrees/wt/commondir", g + "/modules/lib/config"} {
		p.Protected = append(p.Protected, policy.Protected{Path: f})
	}
	for _, d := range []string{g + "/worktrees/wt/hooks", g + "/modules/lib/hooks"} {
		p.Protected = append(p.Protected, policy.Protected{Path: d, Dir: true})
	}
	for _, d := range []string{g + "/worktrees", g + "/worktrees/wt", g + "/modules", g + "/modules/lib", "/Users/me/src/app/wt"} {
		p.Protected = append(p.Protected, policy.Protected{Path: d, Dir: true, Anchor: true})
	}
	return p
}

// gitMetadataPaths are paths the person's own git runs or obeys outside the wall, in the
// repositories gitPolicy's session found: at the top of a writable folder, nested ones, a
// linked worktree, a submodule's repository; and the same reached in another letter case.
var gitMetadataPaths = []string{
	"/Users/me/src/app/.git/config",
	"/Users/me/src/app/.git/hooks",
	"/Users/me/src/app/.git/hooks/pre-commit",
	"/Users/me/src/app/.git/hooks/post-checkout",
	"/Users/me/src/app/.git/hooks/lib/helper.sh",
	"/Users/me/src/app/.git/commondir",                   // names the folder git takes config and hooks from
	"/Users/me/src/app/.git/config.worktree",             // per-worktree config (extensions.worktreeConfig)
	"/Users/me/src/app/wt/.git",                          // a linked worktree's .git file: "gitdir: ..."
	"/Users/me/src/app/.git/worktrees/wt/config",         //
	"/Users/me/src/app/.git/worktrees/wt/commondir",      //
	"/Users/me/src/app/.git/worktrees/wt/hooks/x",        //
	"/Users/me/src/app/.git/modules/lib/config",          // a submodule's repository
	"/Users/me/src/app/.git/modules/lib/hooks/pre-push",  //
	"/Users/me/src/app/vendor/lib/.git/config",           // nested, at any depth
	"/Users/me/src/app/deep/b/c/d/.git/hooks/pre-commit", //
	"/Volumes/Work/data/.git/config",                     // the second writable folder
	"/Volumes/Work/data/x/.git/hooks/pre-commit",         //
	"/Users/me/src/app/odd\nname/.git/config",            // a folder name with a newline
	"/Users/me/src/app/.git/hooks/odd\nname",             //
	"/Users/me/src/app/.Git/config",                      // in another case, as APFS finds it
	"/Users/me/src/app/.GIT/CONFIG",                      //
	"/Users/me/src/app/.git/Hooks/pre-commit",            //
	"/Users/me/src/app/.git/HOOKS",                       //
	"/Users/me/src/app/Vendor/LIB/.Git/Config",           //
	"/Users/me/src/app/.git/Worktrees/WT/config",         //
	"/Users/me/src/app/WT/.GIT",                          //
}

// gitAnchors are the folders that hold those repositories: writable inside, but a command
// can neither rename nor remove them (and make its own in their place), in any case.
var gitAnchors = []string{
	"/Users/me/src/app/.git", // swapped for a .git whose config the command wrote
	"/Users/me/src/app/.git/worktrees",
	"/Users/me/src/app/.git/worktrees/wt",
	"/Users/me/src/app/.git/modules",
	"/Users/me/src/app/.git/modules/lib",
	"/Users/me/src/app/vendor",
	"/Users/me/src/app/vendor/lib",
	"/Users/me/src/app/vendor/lib/.git",
	"/Users/me/src/app/deep",
	"/Users/me/src/app/deep/b/c/d/.git",
	"/Volumes/Work/data/x",
	"/Users/me/src/app/.GIT",
	"/Users/me/src/app/VENDOR",
}

// gitNewRepositoryPaths are what git init, git clone, cargo new, git submodule update --init
// and git worktree add write during the session: the command's own repositories, allowed as
// on Linux (what is planted there is moved aside by the session as it is made).
var gitNewRepositoryPaths = []string{
	"/Users/me/src/app/new/.git",
	"/Users/me/src/app/new/.git/config",
	"/Users/me/src/app/new/.git/hooks",
	"/Users/me/src/app/new/.git/hooks/pre-commit.sample",
	"/Users/me/src/app/new/.git/HEAD",
	"/Volumes/Work/data/y/.git/config",
	"/Users/me/src/app/.git/modules/newsub/config",
	"/Users/me/src/app/.git/modules/newsub/HEAD",
	"/Users/me/src/app/.git/worktrees/feature/HEAD",
	"/Users/me/src/app/.git/worktrees/feature/commondir",
	"/Users/me/src/app/feature/.git",
}

// gitWorkPaths is what git writes for add, commit, checkout, branch, fetch, merge and stash: it
// stays writable.
var gitWorkPaths = []string{
	"/Users/me/src/app/.git/objects/ab/cdef0123",
	"/Users/me/src/app/.git/objects/pack/tmp_pack_x",
	"/Users/me/src/app/.git/refs/heads/main",
	"/Users/me/src/app/.git/refs/heads/main.lock",
	"/Users/me/src/app/.git/refs/heads/config", // a branch named config
	"/Users/me/src/app/.git/refs/heads/hooks",  // and one named hooks
	"/Users/me/src/app/.git/refs/stash",
	"/Users/me/src/app/.git/index",
	"/Users/me/src/app/.git/index.lock",
	"/Users/me/src/app/.git/HEAD",
	"/Users/me/src/app/.git/logs/HEAD",
	"/Users/me/src/app/.git/logs/refs/heads/main",
	"/Users/me/src/app/.git/packed-refs",
	"/Users/me/src/app/.git/FETCH_HEAD",
	"/Users/me/src/app/.git/ORIG_HEAD",
	"/Users/me/src/app/.git/MERGE_HEAD",
	"/Users/me/src/app/.git/COMMIT_EDITMSG",
	"/Users/me/src/app/.git/worktrees/wt/HEAD",
	"/Users/me/src/app/.git/worktrees/wt/index",
	"/Users/me/src/app/vendor/lib/.git/index",
	"/Users/me/src/app/config", // a file named config outside .git
	"/Users/me/src/app/hooks/pre-commit",
	"/Users/me/src/app/.gitignore",
	"/Users/me/src/app/.gitmodules",
	"/Users/me/src/app/.github/workflows/ci.yml",
	"/Users/me/src/app/.gitx/config",
	"/Volumes/Work/data/.git/objects/ab/cdef0123",
	"/private/tmp/openworker-7f3a91/clone/.git/config", // a clone in the private tmp folder
}

func TestGitMetadataReadOnly(t *testing.T) {
	_, ev := render(t, gitPolicy())
	checkAll(t, ev, gitMetadataCases())
}

// gitMetadataCases are what TestGitMetadataReadOnly asks of gitPolicy's profile, and of
// every variant of it a session can get.
func gitMetadataCases() []expect {
	var cases []expect
	for _, p := range gitMetadataPaths {
		for _, op := range writes {
			cases = append(cases, deny(file(op, p)))
		}
		// Reading it, and running a hook inside, stay allowed.
		cases = append(cases, allow(file("file-read-data", p)))
	}
	for _, p := range gitAnchors {
		for _, op := range []string{"file-write-unlink", "file-write-create", "file-link", "file-clone"} {
			cases = append(cases, deny(file(op, p)))
		}
		cases = append(cases, allow(file("file-write-create", p+"/new-file")), allow(file("file-write-unlink", p+"/new-file")))
	}
	for _, p := range gitNewRepositoryPaths {
		for _, op := range []string{"file-write-create", "file-write-data", "file-write-unlink"} {
			cases = append(cases, allow(file(op, p)))
		}
	}
	// An agent host's project settings, in any case, at any depth, whether the project had
	// them or not.
	for _, p := range []string{"/Users/me/src/app/.claude/settings.json", "/Users/me/src/app/x/.CLAUDE/settings.local.json",
		"/Users/me/src/app/.Codex/config.toml", "/Users/me/src/app/.mcp.json", "/Users/me/src/app/sub/.MCP.JSON", "/Volumes/Work/data/.cursor/mcp.json"} {
		cases = append(cases, deny(file("file-write-create", p)), deny(file("file-write-data", p)))
	}
	cases = append(cases, allow(file("process-exec", "/Users/me/src/app/.git/hooks/pre-commit")))
	// The writable folder itself cannot be renamed into the private tmp folder, its settings
	// rewritten there, and renamed back.
	for _, w := range []string{"/Users/me/src/app", "/Volumes/Work/data"} {
		cases = append(cases,
			deny(file("file-write-unlink", w)),
			deny(file("file-write-create", w)),
			allow(file("file-write-create", "/private/tmp/openworker-7f3a91/app")),
			allow(file("file-write-unlink", w+"/build")),
			allow(file("file-write-create", w+"/build")),
			allow(file("file-write-mode", w)))
	}
	for _, p := range gitWorkPaths {
		for _, op := range []string{"file-write-data", "file-write-create", "file-write-unlink"} {
			cases = append(cases, allow(file(op, p)))
		}
	}
	return cases
}

func TestGitMetadataWritableWhenAsked(t *testing.T) {
	p := gitPolicy()
	p.GitMetadataWritable = true
	pr, ev := render(t, p)
	if strings.Contains(pr.Text, `\\.git`) {
		t.Errorf("with repository metadata writable, the profile still names .git:\n%s", pr.Text)
	}
	var cases []expect
	for _, path := range slices.Concat(gitMetadataPaths, gitNewRepositoryPaths) {
		cases = append(cases, allow(file("file-write-data", path)), allow(file("file-write-create", path)))
		// Links and clones stay denied everywhere.
		cases = append(cases, deny(file("file-link", path)), deny(file("file-clone", path)))
	}
	cases = append(cases, allow(file("file-write-unlink", "/Users/me/src/app")))
	checkAll(t, ev, cases)
}

// TestGitMetadataHoldsAgainstBroadAllows: the repository-metadata denies name every write
// operation, so no allow of one of them, wherever it stands, reopens them.
func TestGitMetadataHoldsAgainstBroadAllows(t *testing.T) {
	pr, _ := render(t, gitPolicy())
	head, rest, ok := strings.Cut(pr.Text, "(deny default\n  (with message "+`"`+testMarker+`"`+"))\n")
	if !ok {
		t.Fatal("the profile has no (deny default ...) to add a rule after")
	}
	for _, allowRule := range broadAllows {
		ev, err := sbpl.Parse(head+"(deny default (with message \""+testMarker+"\"))\n"+allowRule+"\n"+rest, pr.ParamMap())
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []sbpl.Query{
			file("file-write-data", "/Users/me/src/app/.git/config"),
			file("file-write-create", "/Users/me/src/app/.git/hooks/pre-commit"),
			file("file-write-unlink", "/Users/me/src/app/.git"),
			file("file-link", "/Users/me/src/app/.git/config"),
		} {
			if d := decide(t, ev, q); d.Allowed {
				t.Errorf("after %s, %s was allowed by %s", allowRule, q, ev.Rules[d.Rule].Source)
			}
		}
	}
}

// TestGitMetadataHostileFolderNames: the writable folder's path is part of the regular
// expressions, so every character that means something in one is quoted: unquoted, a name
// like a(b)c or a[b]c would not match itself and leave its repositories unprotected.
func TestGitMetadataHostileFolderNames(t *testing.T) {
	for _, name := range []string{
		`a.b`, `a*b`, `a+b`, `a?b`, `a(b)c`, `a|b`, `a[b]c`, `a{1}b`, `a^b`, `a$b`, `a\b`, `a"b`,
		`a\"b`, `a") (allow default) ("`, "a\nb", `.*`, `x|.*`, `名前`, `a]b`, `a}b`, `#"`,
	} {
		t.Run(name, func(t *testing.T) {
			p := macPolicy()
			w := "/Users/me/w/" + name
			p.Writable = []string{w}
			_, ev := render(t, withRepos(p, w, w+"/sub"))
			checkAll(t, ev, []expect{
				deny(file("file-write-data", w+"/.git/config")),
				deny(file("file-write-create", w+"/sub/.git/hooks/pre-commit")),
				allow(file("file-write-data", w+"/.git/index")),
				allow(file("file-write-data", w+"/main.go")),
			})
		})
	}
}

// openPolicy is a session in open network mode whose person allowed one loopback service.
func openPolicy() *policy.Policy {
	p := macPolicy()
	p.Network = policy.Open
	p.ProxyPort = 0
	p.Forwards = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:5432")}
	return p
}

func TestOpenNetworkIsNotLoopback(t *testing.T) {
	_, ev := render(t, openPolicy())
	checkAll(t, ev, []expect{
		deny(dial("127.0.0.1:11434")), // Ollama
		deny(dial("127.0.0.1:8888")),  // Jupyter
		deny(dial("[::1]:8888")),
		deny(dial("127.0.0.1:2375")), // Docker's TCP API
		deny(dial("127.0.0.1:9222")), // a browser's remote-debugging port
		deny(dial("127.0.0.1:6379")), // Redis without a password
		deny(dial("127.0.0.1:53127")),
		allow(dial("93.184.216.34:443")), // the internet
		allow(dial("93.184.216.34:80")),
		allow(dial("[2606:2800:220:1:248:1893:25c8:1946]:443")),
		allow(dial("1.1.1.1:53")),
		allow(dial("127.0.0.1:5432")), // the loopback entry the person allowed
		allow(dial("[::1]:5432")),     // Seatbelt's localhost names both loopback addresses
		allow(unix("/private/var/run/mDNSResponder")),
		deny(unix("/private/var/run/docker.sock")),
		deny(sbpl.Query{Op: "network-bind", Addr: "127.0.0.1:8080"}),
	})

	// The proxy, when a session in open mode has one, stays reachable.
	p := openPolicy()
	p.ProxyPort = 53127
	_, ev = render(t, p)
	checkAll(t, ev, []expect{
		allow(dial("127.0.0.1:53127")),
		allow(dial("[::1]:53127")),
		deny(dial("127.0.0.1:11434")),
		allow(dial("93.184.216.34:443")),
	})
}

// TestForwardsInAllowlistMode: a loopback entry the person allowed is reachable directly in
// allowlist mode too, by programs that never use a proxy for loopback; nothing else is.
func TestForwardsInAllowlistMode(t *testing.T) {
	p := macPolicy()
	p.Forwards = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:5432"), netip.MustParseAddrPort("[::1]:6379")}
	_, ev := render(t, p)
	checkAll(t, ev, []expect{
		allow(dial("127.0.0.1:53127")),
		allow(dial("127.0.0.1:5432")),
		allow(dial("[::1]:6379")),
		deny(dial("127.0.0.1:11434")),
		deny(dial("93.184.216.34:443")),
	})
}

func TestHomebrewVarOutOfReach(t *testing.T) {
	_, ev := render(t, macPolicy())
	var cases []expect
	for _, path := range []string{
		"/opt/homebrew/var/postgresql@16/base/1/1259", // PostgreSQL's data
		"/opt/homebrew/var/postgresql@16/pg_hba.conf",
		"/opt/homebrew/var/mysql/ibdata1", // MySQL's
		"/opt/homebrew/var/db/redis/dump.rdb",
		"/opt/homebrew/var/log/nginx/access.log",
		"/opt/homebrew/var",
		"/usr/local/var/mysql/mysql/user.ibd", // Intel Homebrew
		"/usr/local/var/log/postgres.log",
		"/usr/local/var",
	} {
		for _, op := range []string{"file-read-data", "file-read-metadata", "file-read-xattr", "file-test-existence", "file-map-executable", "process-exec"} {
			cases = append(cases, deny(file(op, path)))
		}
	}
	cases = append(cases,
		allow(file("file-read-data", "/opt/homebrew/etc/ca-certificates/cert.pem")), // CA bundles
		allow(file("file-read-data", "/opt/homebrew/etc/openssl@3/cert.pem")),
		allow(file("file-read-data", "/usr/local/etc/openssl@3/cert.pem")),
		allow(file("file-read-data", "/opt/homebrew/bin/git")),
		allow(file("process-exec", "/opt/homebrew/bin/git")),
		allow(file("file-map-executable", "/opt/homebrew/lib/libpcre2-8.0.dylib")),
		allow(file("file-read-data", "/opt/homebrew/Cellar/git/2.47.0/bin/git")),
		allow(file("file-read-data", "/usr/local/bin/python3")),
		allow(file("file-read-data", "/usr/lib/libSystem.B.dylib")),
		allow(file("file-read-data", "/opt/homebrew/variant/x")), // a sibling, not inside var
		allow(file("file-read-metadata", "/opt/homebrew")),
	)
	checkAll(t, ev, cases)
}

// TestHomebrewVarSessionFolderInside: a folder the person shares inside var (nginx's web root)
// is theirs to share; the rest of var stays out of reach.
func TestHomebrewVarSessionFolderInside(t *testing.T) {
	p := macPolicy()
	p.Writable = append(p.Writable, "/opt/homebrew/var/www")
	_, ev := render(t, p)
	checkAll(t, ev, []expect{
		allow(file("file-write-data", "/opt/homebrew/var/www/index.html")),
		allow(file("file-read-data", "/opt/homebrew/var/www/index.html")),
		allow(file("file-read-data", "/opt/homebrew/var/www")),
		allow(file("file-read-metadata", "/opt/homebrew/var")), // on the way to it
		deny(file("file-read-data", "/opt/homebrew/var")),
		deny(file("file-read-data", "/opt/homebrew/var/postgresql@16/base/1/1259")),
		deny(file("file-read-data", "/opt/homebrew/var/www2/x")),
	})
}

func TestLibraryPreferencesNarrowed(t *testing.T) {
	_, ev := render(t, macPolicy())
	var cases []expect
	for _, path := range []string{
		"/Library/Preferences/SystemConfiguration/preferences.plist", // network configuration
		"/Library/Preferences/SystemConfiguration/com.apple.airport.preferences.plist",
		"/Library/Preferences/com.apple.loginwindow.plist", // the login window's users
		"/Library/Preferences/com.apple.Bluetooth.plist",   // pairings
		"/Library/Preferences/com.apple.TimeMachine.plist", // backup targets
		"/Library/Preferences/SystemConfiguration",
	} {
		for _, op := range []string{"file-read-data", "file-read-metadata", "file-read-xattr", "file-test-existence"} {
			cases = append(cases, deny(file(op, path)))
		}
	}
	cases = append(cases,
		deny(file("file-read-data", "/Library/Preferences")), // no listing
		allow(file("file-read-metadata", "/Library/Preferences")),
		allow(file("file-read-data", "/Library/Preferences/com.apple.dt.Xcode.plist")), // the Xcode licence check
		allow(file("file-read-data", "/Library/Preferences/.GlobalPreferences.plist")),
		allow(file("file-read-data", "/Library/Preferences/Logging/com.apple.diagnosticd.filter.plist")),
		allow(file("file-read-data", "/Library/Preferences/Logging/Subsystems/com.apple.network.plist")),
		allow(file("file-read-data", "/Library/Preferences/com.apple.networkd.plist")),
		allow(file("file-read-data", "/Library/Managed Preferences/com.apple.x.plist")),
		deny(file("file-write-data", "/Library/Preferences/com.apple.dt.Xcode.plist")),
		deny(file("file-read-data", "/Library/Preferences/com.apple.dt.Xcode.plist.bak")),
	)
	checkAll(t, ev, cases)
}

func TestSemaphoresByName(t *testing.T) {
	_, ev := render(t, macPolicy())
	checkAll(t, ev, []expect{
		allow(ipc("ipc-posix-sem", "/mp-k3j_9x2a")),         // Python's multiprocessing
		allow(ipc("ipc-posix-sem", "/loky-4242-k3j_9x2a")),  // joblib's loky
		deny(ipc("ipc-posix-sem", "/com.example.app.lock")), // another program's
		deny(ipc("ipc-posix-sem", "/pgsql-5432001")),
		deny(ipc("ipc-posix-sem", "/mp")),
		deny(ipc("ipc-posix-sem", "/mpx-k3j_9x2a")),
		deny(ipc("ipc-posix-sem", "mp-k3j_9x2a")),
		deny(ipc("ipc-posix-sem", "/MP-K3J9X2AB")),
		deny(ipc("ipc-posix-sem", "/loky-x-k3j_9x2a")),
	})
}
