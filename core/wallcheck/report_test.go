package wallcheck

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// reportResults are a Mac's battery as a first run might give it: what worked, what broke,
// what was skipped, an escape refused, and the denials the wall reported, some in the home
// folder, and an env line whose output holds the environment.
var reportResults = []Result{
	{Name: "sh here-document and $(...)", Command: "/bin/sh -c '...'", Status: Works, OK: true},
	{Name: "env", Command: "env", Status: Broken, Detail: `its output "HOME=/Users/me/x\nGITHUB_TOKEN=ghp_secret" lacks "HOME="`, Private: true},
	{Name: "git --version", Command: "/usr/bin/git --version", Status: Broken,
		Detail:  "its error output is not empty: xcrun: error: couldn't create cache file '/tmp/xcrun_db-Ab12' (errno=Operation not permitted)",
		Denials: []string{"file-write-create /private/tmp/xcrun_db-Ab12 (git)"}},
	{Name: "npm install from a registry on loopback", Command: "npm install ...", Status: Broken,
		Detail:  "exit status 1: npm error code EPERM",
		Denials: []string{"file-link /private/tmp/openworker-1/cache/npm/_cacache/content-v2/x (node)", "file-read-metadata /Users/me/node_modules (node, from an earlier command)"}},
	{Name: "java -version", Status: Skipped, OK: true, Detail: "no Java runtime is installed"},
	{Name: "ls -l /; date, with no report of denials", Status: Works, OK: true, Denials: []string{"mach-lookup com.apple.cfprefsd.daemon (date, logged by sandboxd)"}},
	{Name: "read of /Users/me/.ssh/known_hosts", Command: "head -c 0 -- '/Users/me/.ssh/known_hosts'", Status: Refused, OK: true,
		Denials: []string{"file-read-data /Users/me/.ssh/known_hosts (head)"}},
	{Name: "links and clones: which ends Seatbelt checks", Command: "ln and cp -c under a test profile", Status: "not proved (the destination alone is checked): links and clones stay denied", OK: true,
		Raw: []string{
			"link from the denied folder into the allowed one: made",
			"link from the allowed folder into the denied one: refused (ln: /private/tmp/openworker-links-1/denied/new-1: Operation not permitted)",
		}},
}

func TestReportGolden(t *testing.T) {
	var b bytes.Buffer
	err := WriteReport(&b, Report{
		Version: "1.2.3", System: "macOS 15.3.1", Arch: "arm64", Enforcement: "seatbelt", Sandbox: "tier 1 (seatbelt)",
		Home: "/Users/me", Results: reportResults, ReportsDenials: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden")
	if *update {
		os.WriteFile(golden, b.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("report:\n%s\nwant (%s):\n%s", b.String(), golden, want)
	}
	// The link probe's raw attempts, each on a line of its own under its line.
	for _, raw := range reportResults[len(reportResults)-1].Raw {
		if !strings.Contains(b.String(), "\n      tried: "+raw+"\n") {
			t.Errorf("the report lacks the link probe's attempt %q", raw)
		}
	}
	// Nothing a person would not send: no environment values, no home folder's name.
	for _, never := range []string{"ghp_secret", "GITHUB_TOKEN", "/Users/me"} {
		if strings.Contains(b.String(), never) {
			t.Errorf("the report holds %q", never)
		}
	}
}

// A machine whose sandbox cannot run says why, in the same shape.
func TestReportWithoutASandbox(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReport(&b, Report{Version: "dev", System: "Linux 6.8.0", Arch: "amd64", Enforcement: "linux",
		Sandbox: "not available: Landlock is off in /home/me's kernel", Home: "/home/me"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Sandbox: not available: Landlock is off in ~'s kernel") || !strings.Contains(b.String(), "No programs were run") {
		t.Errorf("report:\n%s", b.String())
	}
}

func TestShortenHome(t *testing.T) {
	for in, want := range map[string]string{
		"/Users/me":                "~",
		"/Users/me/.ssh/id (cat)":  "~/.ssh/id (cat)",
		"/Users/meow/x":            "/Users/meow/x",
		"a /Users/me, /Users/me.x": "a ~, /Users/me.x",
		"in '/Users/me'":           "in '~'",
	} {
		if got := shortenHome(in, "/Users/me"); got != want {
			t.Errorf("shortenHome(%q) = %q, want %q", in, got, want)
		}
	}
}
