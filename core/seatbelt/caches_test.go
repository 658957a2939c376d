package seatbelt

import (
	"testing"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/seatbelt/internal/sbpl"
)

const (
	stateDir  = "/Users/me/Library/Application Support/OpenWorker"
	keptCache = stateDir + "/caches/0123456789abcdef/tools"
	hostCache = "/Users/me/go/pkg/mod/cache/download"
)

// A session's project keeps its tools' caches in the state folder: that one folder is read,
// written and linked within; the rest of the state folder (another project's caches, the
// sessions' records, the settings) stays out of reach, and the person's download cache is
// read, never written.
func TestKeptAndHostCaches(t *testing.T) {
	p := macPolicy()
	p.Caches = []policy.Placed{{Src: keptCache, Dst: keptCache}}
	p.HostCaches = []policy.Placed{{Src: hostCache, Dst: hostCache}}
	for _, checks := range []LinkChecks{LinkChecksUnknown, LinkChecksBoth} {
		pr, err := RenderWith(p, Options{LinkChecks: checks})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := sbpl.Parse(pr.Text, pr.ParamMap())
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			q    sbpl.Query
			want bool
		}{
			{file("file-write-create", keptCache+"/go-build/ab/abcdef-d"), true},
			{file("file-write-data", keptCache+"/npm/_cacache/index-v5/00/x"), true},
			{file("file-write-unlink", keptCache+"/pip/http-v2/a"), true},
			{file("file-read-data", keptCache+"/go-mod/cache/download/x/@v/v1.0.0.zip"), true},
			{file("process-exec", keptCache+"/cargo/bin/tool"), true},
			{file("file-read-metadata", stateDir+"/caches/0123456789abcdef"), true}, // on the way, as any folder above a shared one
			{file("file-read-data", stateDir+"/caches/0123456789abcdef"), false},
			{file("file-read-data", stateDir+"/caches/0123456789abcdef/project.json"), false},
			{file("file-write-data", stateDir+"/caches/0123456789abcdef/lock"), false},
			{file("file-read-data", stateDir+"/caches/fedcba9876543210/tools/go-build/ab/x"), false},
			{file("file-write-create", stateDir+"/caches/fedcba9876543210/tools/x"), false},
			{file("file-read-data", stateDir+"/caches"), false},
			{file("file-read-data", stateDir+"/config.toml"), false},
			{file("file-read-data", stateDir+"/api.token"), false},
			{file("file-read-data", hostCache+"/golang.org/x/text/@v/v0.3.0.zip"), true},
			{file("file-read-data", hostCache+"/golang.org/x/text/@v/list"), true},
			{file("file-write-data", hostCache+"/golang.org/x/text/@v/v0.3.0.zip"), false},
			{file("file-write-create", hostCache+"/evil.com/m/@v/v1.0.0.zip"), false},
			{file("file-write-unlink", hostCache+"/golang.org/x/text/@v/v0.3.0.mod"), false},
			{file("file-read-data", "/Users/me/go/pkg/mod/golang.org/x/text@v0.3.0/go.mod"), false},
			{file("file-write-create", "/Users/me/go/bin/tool"), false},
			{file("file-read-data", "/Users/me/Library/Caches/go-build/ab/x"), false},
		} {
			t.Run(string(checks)+"/"+tt.q.String(), func(t *testing.T) {
				if d := decide(t, ev, tt.q); d.Allowed != tt.want {
					t.Errorf("allowed = %v, want %v (rule %s)", d.Allowed, tt.want, ev.Rules[d.Rule].Source)
				}
			})
		}
		for _, c := range []struct {
			from, to string
			allow    bool
		}{
			{keptCache + "/npm/_cacache/tmp/x", keptCache + "/npm/_cacache/content-v2/y", true},
			{keptCache + "/a", "/Users/me/src/app/a", true},
			{hostCache + "/m/@v/v1.zip", keptCache + "/go-mod/cache/download/m/@v/v1.zip", false},
			{keptCache + "/a", hostCache + "/a", false},
			{stateDir + "/api.token", keptCache + "/token", false},
		} {
			for _, op := range []string{"file-link", "file-clone"} {
				got, err := ev.EvalLink(op, c.from, c.to, sbpl.BothEnds)
				if err != nil {
					t.Fatal(err)
				}
				if want := c.allow && checks == LinkChecksBoth; got != want {
					t.Errorf("%s: %s of %s to %s allowed = %v, want %v", checks, op, c.from, c.to, got, want)
				}
			}
		}
	}
}
