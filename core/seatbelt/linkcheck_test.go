package seatbelt

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openworker/openworker/core/seatbelt/internal/sbpl"
)

// linkModes are what Seatbelt might check of a link or a clone; no public source says which,
// but it checks them as operations of their own (the second seed), so at least one end as one.
var linkModes = []sbpl.LinkCheck{sbpl.SourceOnly, sbpl.DestinationOnly, sbpl.BothEnds, sbpl.SourceAndCreate}

// safeModes are those under which a profile that allows links within the session's folders
// refuses every link and clone with an end outside them: the existing file is checked as a
// link, and the new name as a link or as a create (which a session's profile denies wherever
// it denies links).
var safeModes = map[sbpl.LinkCheck]bool{sbpl.BothEnds: true, sbpl.SourceAndCreate: true}

// probeOn runs the probe's attempts against the evaluator, configured as Seatbelt might be.
func probeOn(t *testing.T, mode sbpl.LinkCheck) []LinkResult {
	t.Helper()
	ev, err := sbpl.Parse(ProbeProfile, map[string]string{"ALLOWED": "/private/tmp/probe/allowed", "DENIED": "/private/tmp/probe/denied"})
	if err != nil {
		t.Fatal(err)
	}
	end := func(deny bool, name string) string {
		if deny {
			return "/private/tmp/probe/denied/" + name
		}
		return "/private/tmp/probe/allowed/" + name
	}
	var out []LinkResult
	for _, lp := range LinkProbes {
		done, err := ev.EvalLink(lp.Op, end(lp.FromDeny, "file"), end(lp.ToDeny, "new"), mode)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, LinkResult{Probe: lp, Done: done})
	}
	return out
}

// TestLinkProbeDecision: the probe says "both" exactly where Seatbelt checks what a session's
// profile relies on (safeModes): the existing file as a link, and the new name as a link or
// as a create. Where it checks less, or the probe is incomplete or its tool failed, it says
// "unknown". A probe whose profile let every create through said "unknown" on a Mac that
// checks the new name as a create, where a session's profile would have been safe.
func TestLinkProbeDecision(t *testing.T) {
	// And were the second seed wrong, and Seatbelt checked no end as a link, the probe
	// would not say both.
	for _, mode := range append(slices.Clone(linkModes), sbpl.CreateOnly) {
		got, why := DecideLinkChecks(probeOn(t, mode))
		want := LinkChecksUnknown
		if safeModes[mode] {
			want = LinkChecksBoth
		}
		if got != want {
			t.Errorf("Seatbelt checking %s: the probe says %s (%s), want %s", mode, got, why, want)
		}
	}
	both := probeOn(t, sbpl.BothEnds)
	if got, _ := DecideLinkChecks(both[:len(both)-1]); got != LinkChecksUnknown {
		t.Error("a probe with an attempt missing said both")
	}
	failed := append([]LinkResult(nil), both...)
	failed[2].Done, failed[2].Err = false, "Operation not supported"
	if got, why := DecideLinkChecks(failed); got != LinkChecksUnknown {
		t.Errorf("a probe whose link within the allowed folder failed said %s (%s)", got, why)
	}
	if got, _ := DecideLinkChecks(nil); got != LinkChecksUnknown {
		t.Error("no results said both")
	}
}

// linkCase is a link or clone of From to the new name To and whether a profile rendered
// with links allowed may let it through.
type linkCase struct {
	from, to string
	allow    bool
}

var linkCases = []linkCase{
	{"/Users/me/src/app/target/debug/deps/x-1", "/Users/me/src/app/target/debug/x", true},                                               // cargo
	{"/private/tmp/openworker-7f3a91/cache/npm/_cacache/tmp/a", "/private/tmp/openworker-7f3a91/cache/npm/_cacache/content-v2/b", true}, // npm
	{"/private/tmp/openworker-7f3a91/cache/x", "/Users/me/src/app/node_modules/x", true},
	{"/Users/me/src/app/a", "/Volumes/Work/data/a", true},
	{"/Users/me/.ssh/id_ed25519", "/Users/me/src/app/key", false},               // a second name for a secret
	{"/Users/me/.ssh/id_ed25519", "/private/tmp/openworker-7f3a91/key", false},  //
	{"/Users/me/docs/specs/a.md", "/Users/me/src/app/a.md", false},              // read-only, made writable
	{"/Users/me/src/app/a", "/Users/me/Library/LaunchAgents/evil.plist", false}, // out of the session
	{"/Users/me/src/app/a", "/private/tmp/other/a", false},
	{"/private/etc/hosts", "/Users/me/src/app/hosts", false},
	{"/Users/me/src/app/evil", "/Users/me/src/app/.git/hooks/pre-commit", false}, // onto repository metadata
	{"/Users/me/src/app/evil", "/Users/me/src/app/.git/config", false},
	{"/Users/me/src/app/.git/config", "/Users/me/src/app/config-alias", false}, // a writable second name for it
	{"/Users/me/src/app/frozen/lib.go", "/Users/me/src/app/lib.go", false},     // read-only inside writable
	{"/Users/me/src/app/a", "/Users/me/src/app/frozen/a", false},
	{"/Users/me/.cargo/credentials.toml", "/Users/me/src/app/c", false}, // hidden
}

// TestLinksAllowedOnlyWhenBoth: a profile rendered for a Mac the probe proved lets links and
// clones within the session's folders through, and none with an end outside them or on
// repository metadata, read-only or hidden files, under every mode of Seatbelt the probe
// proves (a link into a read-only or hidden folder is refused by the link rule itself where
// the new name is checked as a link, and by the write denies where it is checked as a
// create). Unproved, none at all, whatever Seatbelt checks.
func TestLinksAllowedOnlyWhenBoth(t *testing.T) {
	p := gitPolicy()
	p.ReadOnly = append(p.ReadOnly, "/Users/me/src/app/frozen")
	p.Toolchains = []string{"/Users/me/.cargo"}
	p.Hidden = []string{"/Users/me/.cargo/credentials.toml"}
	for _, checks := range []LinkChecks{LinkChecksUnknown, LinkChecksBoth} {
		pr, err := RenderWith(p, Options{LinkChecks: checks})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := sbpl.Parse(pr.Text, pr.ParamMap())
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range []string{"file-link", "file-clone"} {
			for _, c := range linkCases {
				for _, mode := range linkModes {
					got, err := ev.EvalLink(op, c.from, c.to, mode)
					if err != nil {
						t.Fatal(err)
					}
					// Allowed only when proved, and then only as Seatbelt proved it checks:
					// under every mode the probe proves, exactly the links within.
					want := c.allow && checks == LinkChecksBoth && safeModes[mode]
					if safeModes[mode] && got != want {
						t.Errorf("%s, %s of %s to %s: allowed = %v, want %v", checks, op, c.from, c.to, got, want)
					}
					if checks == LinkChecksUnknown && got {
						t.Errorf("unproved, Seatbelt checking %s: %s of %s to %s allowed", mode, op, c.from, c.to)
					}
				}
			}
		}
		t.Run(string(checks)+"/git", func(t *testing.T) { checkAll(t, ev, gitMetadataCases()) })
	}
}

func TestGoldenLinksBoth(t *testing.T) {
	p := gitPolicy()
	p.Hidden = []string{"/Users/me/.cargo/credentials.toml"}
	p.Toolchains = []string{"/Users/me/.cargo"}
	pr, err := RenderWith(p, Options{LinkChecks: LinkChecksBoth})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join("testdata", "links_both.sb.golden")
	if *update {
		if err := os.WriteFile(file, []byte(pr.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./core/seatbelt -update to create it)", err)
	}
	if pr.String() != string(want) {
		t.Errorf("profile differs from %s (run with -update and review the diff)", file)
	}
	if _, err := RenderWith(p, Options{LinkChecks: "source"}); err == nil {
		t.Error("an unknown link-checks answer was rendered")
	}
}

// The probe's answer is kept in the state folder for this macOS version only: an update may
// change what Seatbelt checks.
func TestLinkChecksRecord(t *testing.T) {
	dir := t.TempDir()
	if got := LoadLinkChecks(dir, "15.1"); got != LinkChecksUnknown {
		t.Errorf("no record: %s", got)
	}
	if err := SaveLinkChecks(dir, "15.1", LinkChecksBoth, "proved"); err != nil {
		t.Fatal(err)
	}
	if got := LoadLinkChecks(dir, "15.1"); got != LinkChecksBoth {
		t.Errorf("saved both, loaded %s", got)
	}
	if got := LoadLinkChecks(dir, "15.2"); got != LinkChecksUnknown {
		t.Errorf("another macOS version: %s", got)
	}
	if got := LoadLinkChecks("", "15.1"); got != LinkChecksUnknown {
		t.Errorf("no state folder: %s", got)
	}
	os.WriteFile(filepath.Join(dir, linkChecksFile), []byte(`{"answer":"source","os_version":"15.1"}`), 0o600)
	if got := LoadLinkChecks(dir, "15.1"); got != LinkChecksUnknown {
		t.Errorf("a record with an unknown answer: %s", got)
	}
}

// The app shows the answer recorded for this macOS version, with why; another version's, or
// none, is not an answer.
func TestRecordedLinkChecks(t *testing.T) {
	dir := t.TempDir()
	if probed, _, _ := recordedLinkChecks(dir, "15.3"); probed {
		t.Error("no record, yet probed")
	}
	if err := SaveLinkChecks(dir, "15.3", LinkChecksUnknown, "the new name only is checked"); err != nil {
		t.Fatal(err)
	}
	if probed, both, why := recordedLinkChecks(dir, "15.3"); !probed || both || why != "the new name only is checked" {
		t.Errorf("got %v %v %q", probed, both, why)
	}
	if probed, _, _ := recordedLinkChecks(dir, "15.4"); probed {
		t.Error("another version's record counted")
	}
	SaveLinkChecks(dir, "15.3", LinkChecksBoth, "both ends")
	if probed, both, _ := recordedLinkChecks(dir, "15.3"); !probed || !both {
		t.Errorf("both: %v %v", probed, both)
	}
}
