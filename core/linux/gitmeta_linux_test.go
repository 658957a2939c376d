package linux

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/gitmeta"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
)

// protect adds what gitmeta finds in p's writable folders to p, as the session does.
func protect(p *policy.Policy) {
	for _, e := range gitmeta.Scan(p.Writable, gitmeta.DefaultBounds).Protect() {
		p.Protected = append(p.Protected, policy.Protected{Path: e.Path, Dir: e.IsDir(), ID: policy.FileID{Dev: e.Dev, Ino: e.Ino}})
	}
}

// A repository's hooks folder and settings are read-only inside; the rest of .git is not.
func TestProtectedMetadataIsReadOnly(t *testing.T) {
	w := newWorld(t)
	g := filepath.Join(w.project, "repo", ".git")
	must(t, os.MkdirAll(filepath.Join(g, "hooks"), 0o755))
	must(t, os.MkdirAll(filepath.Join(g, "objects"), 0o755))
	must(t, os.WriteFile(filepath.Join(g, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(g, "config"), []byte("[core]\n\tbare = false\n"), 0o644))
	p := w.policy(t, policy.None, 0)
	protect(p)
	if len(p.Protected) != 2 {
		t.Fatalf("protected: %+v", p.Protected)
	}
	out, code := run(t, w, p, `G=$P/repo/.git
echo x >> $G/config && echo CONFIG-WRITTEN
echo x > $G/config.lock && mv $G/config.lock $G/config && echo CONFIG-REPLACED
echo x > $G/hooks/pre-commit && echo HOOK-WRITTEN
mv $G/hooks $G/hooks.old && echo HOOKS-MOVED
ln $G/config $P/second-name && echo LINKED
echo ok > $G/index && echo INDEX-WRITTEN`)
	if code != 0 && !strings.Contains(out, "INDEX-WRITTEN") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, bad := range []string{"CONFIG-WRITTEN", "CONFIG-REPLACED", "HOOK-WRITTEN", "HOOKS-MOVED", "LINKED"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s inside:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "INDEX-WRITTEN") {
		t.Errorf("the rest of .git is not writable:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(g, "config")); string(b) != "[core]\n\tbare = false\n" {
		t.Errorf("config is now %q", b)
	}
}

// What the scan found is what is bound: a settings file replaced (or turned into a link)
// between the scan and the bind refuses the wall.
func TestProtectedMetadataReplacedIsRefused(t *testing.T) {
	for _, tc := range []struct{ name, swap string }{
		{"replaced", "mv config config.old && cp config.old config"},
		{"symlink", "mv config config.old && ln -s ../../../notshared.txt config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			g := filepath.Join(w.project, ".git")
			must(t, os.MkdirAll(g, 0o755))
			must(t, os.WriteFile(filepath.Join(g, "config"), []byte("[core]\n"), 0o644))
			p := w.policy(t, policy.None, 0)
			protect(p)
			swap := exec.Command("sh", "-c", tc.swap)
			swap.Dir = g
			if out, err := swap.CombinedOutput(); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			proc, err := (&Provider{}).Start(ctx, p, sandbox.RunnerSpec{Path: "/bin/true", Env: w.env(p), Dir: p.Home})
			if err == nil {
				proc.Kill()
				proc.Wait()
				t.Fatal("the wall was built over a settings file other than the one found")
			}
			if !strings.Contains(err.Error(), "start the session again") {
				t.Errorf("the refusal does not say why: %v", err)
			}
		})
	}
}
