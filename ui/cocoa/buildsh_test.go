package cocoa

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// standIn is a shell script that plays one of the Mac's build tools: it records how it was
// called, one line per call, in $LOG, and does the least the build needs of it.
var standIns = map[string]string{
	"uname": `case "$1" in -s) echo Darwin ;; -m) echo arm64 ;; *) echo Darwin ;; esac`,
	// go build: record the parts of the environment the app's build sets, and write the
	// output file.
	"go": `out=""; prev=""; for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
echo "go $* CGO_ENABLED=$CGO_ENABLED GOARCH=$GOARCH MACOSX_DEPLOYMENT_TARGET=$MACOSX_DEPLOYMENT_TARGET CGO_CFLAGS=$CGO_CFLAGS CGO_LDFLAGS=$CGO_LDFLAGS" >>"$LOG"
[ -n "$out" ] && echo "binary $GOARCH cgo=$CGO_ENABLED" >"$out"`,
	"lipo":     `echo "lipo $*" >>"$LOG"; out=""; prev=""; for a in "$@"; do [ "$prev" = "-output" ] && out="$a"; prev="$a"; done; echo universal >"$out"`,
	"vtool":    `echo "vtool $*" >>"$LOG"; printf 'Load command 10\n      cmd LC_BUILD_VERSION\n  cmdsize 32\n platform MACOS\n    minos %s\n      sdk 15.0\n' "${MINOS:-12.0}"`,
	"plutil":   `exit 0`,
	"codesign": `echo "codesign $*" >>"$LOG"`,
	"ditto":    `echo "ditto $*" >>"$LOG"; for last; do :; done; echo zip >"$last"`,
	// notarytool answers as Apple's does with --output-format json, with the status the
	// test names (NOTARY_STATUS, Accepted by default), and has a log for the submission.
	"xcrun": `echo "xcrun $*" >>"$LOG"
case "$1 $2" in
"notarytool submit") printf '{"id":"2efe2717-52ef-43a5-96dc-0797e4ca1041","status":"%s","message":"Processing complete"}\n' "${NOTARY_STATUS:-Accepted}" ;;
"notarytool log") printf '{"status":"Invalid","issues":[{"path":"OpenWorker.app/Contents/MacOS/openworker","message":"The binary is not signed with a valid Developer ID certificate."}]}\n' ;;
esac`,
	"spctl": `echo "spctl $*" >>"$LOG"; echo "$3: accepted" >&2; echo "source=Notarized Developer ID" >&2`,
}

// buildApp runs build.sh app in a copy of the project's build inputs, with the Mac's tools
// played by stand-ins, and returns its log of calls, its output and whether it succeeded.
func buildApp(t *testing.T, env ...string) (calls []string, out string, ok bool, dir string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	dir = t.TempDir()
	bin := filepath.Join(dir, "stand-ins")
	os.Mkdir(bin, 0o755)
	for name, body := range standIns {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	project := filepath.Join(dir, "project")
	os.Mkdir(project, 0o755)
	for _, f := range []string{"build.sh", "Info.plist"} {
		b, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(project, f), b, 0o755)
	}
	os.Mkdir(filepath.Join(project, "resources"), 0o755)
	os.WriteFile(filepath.Join(project, "resources", "config.toml"), []byte("# defaults\n"), 0o644)
	log := filepath.Join(dir, "calls.log")
	cmd := exec.Command("bash", filepath.Join(project, "build.sh"), "app")
	cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin", "LOG=" + log, "HOME=" + dir}, env...)
	b, err := cmd.CombinedOutput()
	logged, _ := os.ReadFile(log)
	return strings.Split(strings.TrimSpace(string(logged)), "\n"), string(b), err == nil, project
}

// index is the position of the first call matching re, or -1.
func index(calls []string, re string) int {
	r := regexp.MustCompile(re)
	for i, c := range calls {
		if r.MatchString(c) {
			return i
		}
	}
	return -1
}

func TestBuildAppForMacOS12WithTheHelpers(t *testing.T) {
	calls, out, ok, project := buildApp(t)
	if !ok {
		t.Fatalf("build.sh app failed:\n%s", out)
	}
	for _, arch := range []string{"arm64", "amd64"} {
		// The app links no MCP server: that is the helper openworker-mcp, without cgo.
		if index(calls, `^go build .*-tags mcpapart .*-o build/arch/openworker-`+arch+` \./app/openworker CGO_ENABLED=1 GOARCH=`+arch+` MACOSX_DEPLOYMENT_TARGET=12\.0 CGO_CFLAGS=-mmacosx-version-min=12\.0 CGO_LDFLAGS=-mmacosx-version-min=12\.0$`) < 0 {
			t.Errorf("the app's %s build is not for macOS 12.0 with cgo and without the MCP server:\n%s", arch, strings.Join(calls, "\n"))
		}
		if index(calls, `^go build .*-o build/arch/openworker-runner-`+arch+` \./app/openworker-runner CGO_ENABLED=0 GOARCH=`+arch+` `) < 0 {
			t.Errorf("the helper's %s build is missing or uses cgo:\n%s", arch, strings.Join(calls, "\n"))
		}
		if i := index(calls, `^go build .*-o build/arch/openworker-mcp-`+arch+` \./app/openworker CGO_ENABLED=0 GOARCH=`+arch+` `); i < 0 || strings.Contains(calls[i], "mcpapart") {
			t.Errorf("the MCP server's %s build is missing, uses cgo or leaves the server out:\n%s", arch, strings.Join(calls, "\n"))
		}
		if index(calls, `^go build .*-o build/arch/openworker-shell-`+arch+` \./app/openworker-shell CGO_ENABLED=0 GOARCH=`+arch+` `) < 0 {
			t.Errorf("the agent hosts' shell's %s build is missing or uses cgo:\n%s", arch, strings.Join(calls, "\n"))
		}
	}
	for _, name := range []string{"openworker-runner", "openworker-mcp", "openworker-shell"} {
		helper := filepath.Join(project, "build", "OpenWorker.app", "Contents", "Helpers", name)
		if b, err := os.ReadFile(helper); err != nil || string(b) != "universal\n" {
			t.Fatalf("%s in the bundle: %q %v", name, b, err)
		}
	}
	for _, bin := range []string{"Contents/MacOS/openworker", "Contents/Helpers/openworker-runner", "Contents/Helpers/openworker-mcp", "Contents/Helpers/openworker-shell"} {
		if index(calls, `^vtool -show-build .*`+regexp.QuoteMeta(bin)+`$`) < 0 {
			t.Errorf("%s's minimum macOS was not checked", bin)
		}
	}
	// Ad hoc without an identity: the helpers, then the bundle, then a strict check.
	h, m := index(calls, `^codesign --force --sign - --timestamp=none .*openworker-runner$`), index(calls, `^codesign --force --sign - --timestamp=none .*openworker-mcp$`)
	sh := index(calls, `^codesign --force --sign - --timestamp=none .*openworker-shell$`)
	a, v := index(calls, `^codesign --force --sign - --timestamp=none .*OpenWorker\.app$`), index(calls, `^codesign --verify --strict --deep`)
	if h < 0 || m < 0 || sh < 0 || a < h || a < m || a < sh || v < a {
		t.Errorf("ad-hoc signing, inside out: %d %d %d %d\n%s", h, m, a, v, strings.Join(calls, "\n"))
	}
	if index(calls, `^xcrun `) >= 0 || index(calls, `^spctl `) >= 0 {
		t.Errorf("notarized or assessed without a profile:\n%s", strings.Join(calls, "\n"))
	}
}

func TestBuildAppSignsAndNotarizes(t *testing.T) {
	id := "Developer ID Application: Example (TEAM123456)"
	calls, out, ok, project := buildApp(t, "OPENWORKER_SIGN_IDENTITY="+id, "OPENWORKER_NOTARY_PROFILE=openworker-notary")
	if !ok {
		t.Fatalf("build.sh app failed:\n%s", out)
	}
	all := strings.Join(calls, "\n")
	h := index(calls, `^codesign --force --options runtime --timestamp --sign `+regexp.QuoteMeta(id)+` .*Helpers/openworker-runner$`)
	if m := index(calls, `^codesign --force --options runtime --timestamp --sign `+regexp.QuoteMeta(id)+` .*Helpers/openworker-mcp$`); m < 0 || m > index(calls, `OpenWorker\.app$`) {
		t.Errorf("the MCP server is not signed before the app:\n%s", strings.Join(calls, "\n"))
	}
	a := index(calls, `^codesign --force --options runtime --timestamp --entitlements build/entitlements\.plist --sign `+regexp.QuoteMeta(id)+` .*OpenWorker\.app$`)
	// Each helper is checked as it is signed, strictly, before the app is.
	for _, helper := range []string{"openworker-runner", "openworker-mcp"} {
		v := index(calls, `^codesign --verify --strict --verbose=2 .*Helpers/`+helper+`$`)
		if v < 0 || v < index(calls, `^codesign --force .*Helpers/`+helper+`$`) || v > a {
			t.Errorf("%s is not verified strictly after its signing and before the app's:\n%s", helper, all)
		}
	}
	sub := index(calls, `^xcrun notarytool submit build/OpenWorker-.*-macos\.zip --keychain-profile openworker-notary --wait --output-format json$`)
	staple := index(calls, `^xcrun stapler staple build/OpenWorker\.app$`)
	validate := index(calls, `^xcrun stapler validate build/OpenWorker\.app$`)
	gatekeeper := index(calls, `^spctl -a -vv -t exec build/OpenWorker\.app$`)
	rezip := -1
	for i, c := range calls {
		if strings.HasPrefix(c, "ditto ") && i > staple {
			rezip = i
		}
	}
	if h < 0 || a < h || sub < a || staple < sub || validate < staple || gatekeeper < validate || rezip < gatekeeper {
		t.Fatalf("sign the helper, then the app with its entitlements, submit, staple, validate, ask Gatekeeper, zip again: %d %d %d %d %d %d %d\n%s", h, a, sub, staple, validate, gatekeeper, rezip, all)
	}
	if !strings.Contains(out, "Notarized Developer ID") {
		t.Errorf("Gatekeeper's verdict is not shown:\n%s", out)
	}
	ent, err := os.ReadFile(filepath.Join(project, "build", "entitlements.plist"))
	if err != nil || !strings.Contains(string(ent), "com.apple.security.cs.allow-unsigned-executable-memory") {
		t.Fatalf("entitlements: %v\n%s", err, ent)
	}
}

// A submission the notary service did not accept stops the build with the service's log,
// before anything is stapled: notarytool submit --wait exits 0 for an Invalid one too.
func TestBuildAppStopsOnARejectedNotarization(t *testing.T) {
	for _, status := range []string{"Invalid", "Rejected", "In Progress"} {
		t.Run(strings.ReplaceAll(status, " ", "_"), func(t *testing.T) {
			calls, out, ok, _ := buildApp(t, "OPENWORKER_SIGN_IDENTITY=Developer ID Application: Example (TEAM123456)",
				"OPENWORKER_NOTARY_PROFILE=openworker-notary", "NOTARY_STATUS="+status)
			if ok {
				t.Fatalf("the build went on after the notary service said %s:\n%s", status, out)
			}
			if index(calls, `^xcrun notarytool log 2efe2717-52ef-43a5-96dc-0797e4ca1041 --keychain-profile openworker-notary$`) < 0 ||
				!strings.Contains(out, "not signed with a valid Developer ID certificate") || !strings.Contains(out, status) {
				t.Errorf("the build did not show the submission's status and log:\n%s\n%s", out, strings.Join(calls, "\n"))
			}
			if index(calls, `^xcrun stapler`) >= 0 || index(calls, `^spctl`) >= 0 {
				t.Errorf("stapled or assessed a submission that was not accepted:\n%s", strings.Join(calls, "\n"))
			}
		})
	}
}

// The app's one entitlement is one switch in build.sh, with its reason beside it: switched
// off, the app is signed with no entitlements at all.
func TestBuildAppEntitlementSwitch(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^readonly unsigned_executable_memory="\$\{OPENWORKER_UNSIGNED_EXECUTABLE_MEMORY:-1\}"$`).Match(b) {
		t.Fatal("build.sh has no unsigned_executable_memory switch")
	}
	calls, out, ok, project := buildApp(t, "OPENWORKER_SIGN_IDENTITY=Developer ID Application: Example (TEAM123456)", "OPENWORKER_UNSIGNED_EXECUTABLE_MEMORY=0")
	if !ok {
		t.Fatalf("build.sh app failed:\n%s", out)
	}
	a := index(calls, `^codesign --force --options runtime --timestamp .*OpenWorker\.app$`)
	if a < 0 || strings.Contains(calls[a], "--entitlements") {
		t.Errorf("switched off, the app is signed with entitlements: %q", calls[a:])
	}
	if _, err := os.Stat(filepath.Join(project, "build", "entitlements.plist")); err == nil {
		t.Error("switched off, an entitlements file was written")
	}
	if _, out, ok, _ := buildApp(t, "OPENWORKER_SIGN_IDENTITY=x", "OPENWORKER_UNSIGNED_EXECUTABLE_MEMORY=yes"); ok || !strings.Contains(out, "OPENWORKER_UNSIGNED_EXECUTABLE_MEMORY") {
		t.Errorf("a switch that is neither 0 nor 1 was taken:\n%s", out)
	}
}

// A binary that needs a newer macOS than Info.plist promises fails the build.
func TestBuildAppRefusesANewerMinimumMacOS(t *testing.T) {
	_, out, ok, _ := buildApp(t, "MINOS=14.0")
	if ok || !strings.Contains(out, "needs macOS 14.0, but the app promises 12.0") {
		t.Fatalf("a binary for macOS 14 passed: %v\n%s", ok, out)
	}
}

// Notarizing needs a Developer ID signature: a profile alone is refused with why.
func TestBuildAppNotarizesOnlyWithAnIdentity(t *testing.T) {
	calls, out, ok, _ := buildApp(t, "OPENWORKER_NOTARY_PROFILE=openworker-notary")
	if ok || !strings.Contains(out, "needs OPENWORKER_SIGN_IDENTITY") || index(calls, `^xcrun notarytool`) >= 0 {
		t.Fatalf("notarizing an ad-hoc signed app: %v\n%s", ok, out)
	}
}

// The build's minimum macOS is Info.plist's.
func TestBuildMinimumIsInfoPlists(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`readonly min_macos="([0-9.]+)"`).FindSubmatch(b)
	plist := readPlist(t, filepath.Join("..", "..", "Info.plist"))
	if m == nil || string(m[1]) != plist["LSMinimumSystemVersion"] {
		t.Fatalf("build.sh's min_macos %q, Info.plist's LSMinimumSystemVersion %q", m, plist["LSMinimumSystemVersion"])
	}
}
