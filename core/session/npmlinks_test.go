package session

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
)

// denyLinks stands in for a Seatbelt profile that refuses every hard link: a preload that
// makes Node's links fail as the kernel's refusal does.
const denyLinks = `const fs = require('fs');
const eperm = (s, d) => Object.assign(new Error("EPERM: operation not permitted, link '" + s + "' -> '" + d + "'"), {code: 'EPERM', errno: -1, syscall: 'link'});
fs.link = (s, d, cb) => process.nextTick(cb, eperm(s, d));
fs.linkSync = (s, d) => { throw eperm(s, d); };
fs.promises.link = async (s, d) => { throw eperm(s, d); };
`

// cacacheMove is cacache 17.0's moveFile (npm before 9.7) as npm runs it into its cache: a
// link, EEXIST taken as done, then the source unlinked and the entry made read-only; and the
// callback and synchronous links other npm code uses.
const cacacheMove = `const fs = require('fs');
(async () => {
  const [src, dst] = process.argv.slice(2);
  try { await fs.promises.link(src, dst); } catch (err) { if (err.code !== 'EEXIST' && err.code !== 'EBUSY') throw err; }
  await fs.promises.unlink(src);
  await fs.promises.chmod(dst, 0o444);
  fs.linkSync(dst, dst + '.sync');
  await new Promise((ok, fail) => fs.link(dst, dst + '.cb', (e) => (e ? fail(e) : ok())));
  console.log(fs.readFileSync(dst, 'utf8') + fs.readFileSync(dst + '.sync', 'utf8') + fs.readFileSync(dst + '.cb', 'utf8'));
})().catch((e) => { console.error(e.message); process.exit(1); });
`

// With links refused, npm's cache move fails; with the session's NODE_OPTIONS it copies, for
// npm only: another program's link stays refused.
func TestNpmLinkCopies(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	dir := t.TempDir()
	shim, err := writeNpmLinkCopies(dir)
	if err != nil {
		t.Fatal(err)
	}
	deny := filepath.Join(dir, "deny-links.cjs")
	os.WriteFile(deny, []byte(denyLinks), 0o600)
	for _, name := range []string{"npm-cli.js", "other.js"} {
		os.WriteFile(filepath.Join(dir, name), []byte(cacacheMove), 0o600)
	}
	run := func(script string, options string) (string, error) {
		src, dst := filepath.Join(dir, "tmp-entry"), filepath.Join(dir, "content-"+script)
		os.WriteFile(src, []byte("x"), 0o600)
		cmd := exec.Command("node", filepath.Join(dir, script), src, dst)
		cmd.Env = append(os.Environ(), "NODE_OPTIONS="+options)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("npm-cli.js", "--require="+deny); err == nil || !strings.Contains(out, "EPERM") {
		t.Fatalf("npm's cache move worked with links refused and no copies (%v): %s; the test proves nothing", err, out)
	}
	env := BuildEnv(EnvOptions{Tmp: dir, Home: dir, NpmLinkCopies: shim})
	options := hostVar(env, "NODE_OPTIONS")
	if options != "--require="+shim {
		t.Fatalf("NODE_OPTIONS = %q", options)
	}
	if out, err := run("npm-cli.js", "--require="+deny+" "+options); err != nil || strings.TrimSpace(out) != "xxx" {
		t.Errorf("npm's cache move with copies: %v %s", err, out)
	}
	if out, err := run("other.js", "--require="+deny+" "+options); err == nil || !strings.Contains(out, "EPERM") {
		t.Errorf("another program's link became a copy (%v): %s", err, out)
	}
	if hostVar(BuildEnv(EnvOptions{Tmp: dir, Home: dir}), "NODE_OPTIONS") != "" {
		t.Error("NODE_OPTIONS set where links are not refused")
	}
}

// linkRefusing is a wall that refuses every link and clone (a Mac the probe has not proved).
type linkRefusing struct{ sandbox.DirectProvider }

func (linkRefusing) RefusesLinks() bool { return true }

// A session on such a wall gives npm its copies and says why after a command that failed on
// a refused link; one on a wall that allows them does neither.
func TestSessionOnAWallThatRefusesLinks(t *testing.T) {
	for _, refuses := range []bool{true, false} {
		var prov sandbox.Provider = sandbox.DirectProvider{}
		if refuses {
			prov = linkRefusing{}
		}
		f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: prov})
		s, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.None})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Exec(runner.ExecArgs{Command: `printf '%s' "$NODE_OPTIONS"`}, nil)
		if err != nil {
			t.Fatal(err)
		}
		shim, ok := strings.CutPrefix(string(res.Stdout), "--require=")
		if refuses {
			if b, err := os.ReadFile(shim); !ok || err != nil || string(b) != npmLinkCopies {
				t.Errorf("NODE_OPTIONS %q: the copies' file is not there (%v)", res.Stdout, err)
			}
		} else if len(res.Stdout) != 0 {
			t.Errorf("NODE_OPTIONS %q on a wall that allows links", res.Stdout)
		}
		res, err = s.Exec(runner.ExecArgs{Command: "echo 'error: failed to link or copy `a` to `b`' >&2; exit 101"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if said := strings.Contains(string(res.Stderr), "hard links and clones are refused"); said != refuses {
			t.Errorf("refuses links %v: the line after cargo's failure: %q", refuses, res.Stderr)
		}
		s.End()
	}
}
