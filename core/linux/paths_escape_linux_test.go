package linux

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tstest"
)

// A session folder is the folder that was checked, whatever a sandboxed command does to the
// path that leads to it. Each test plants its symlinks from inside a real wall, as a
// command in a writable folder would, and then starts another session on the path.

// swapHelper marks the copy of this test binary that swaps two folders inside a wall.
const swapHelper = "OPENWORKER_LINUX_TEST_SWAP"

// pathWorld is a world whose project holds vendor/lib (shared read-only by the second
// session), and whose home holds secrets/lib, which a planted link would lead to.
type pathWorld struct {
	*world
	lib, secretLib string
}

func newPathWorld(t *testing.T) *pathWorld {
	t.Helper()
	w := &pathWorld{world: newWorld(t)}
	w.lib = filepath.Join(w.readonly, "lib")
	w.secretLib = filepath.Join(w.home, "secrets", "lib")
	must(t, os.MkdirAll(w.lib, 0o755))
	must(t, os.MkdirAll(w.secretLib, 0o755))
	must(t, os.WriteFile(filepath.Join(w.lib, "lib.txt"), []byte("vendored\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(w.secretLib, "id_ed25519"), []byte(secret+"\n"), 0o600))
	return w
}

// newPolicy builds a policy as a session does, with policy.New, and the private tmp.
func (w *pathWorld) newPolicy(t *testing.T, opts policy.Options) (*policy.Policy, error) {
	t.Helper()
	opts.UserHome, opts.PrivateTmp, opts.GOOS, opts.Network = w.home, w.privateTmp, "linux", policy.None
	return policy.New(opts)
}

// attacker runs script in a session whose writable folder is the project.
func (w *pathWorld) attacker(t *testing.T, script string) {
	t.Helper()
	p, err := w.newPolicy(t, policy.Options{Writable: []string{w.project}})
	must(t, err)
	if out, code := run(t, w.world, p, script); code != 0 {
		t.Fatalf("the planting failed (exit %d):\n%s", code, out)
	}
}

// victim starts a session on p that lists and prints what its read-only folder shows. It
// returns the output, or the error of a start that was refused.
func (w *pathWorld) victim(t *testing.T, p *policy.Policy) (string, error) {
	t.Helper()
	r, wr, err := os.Pipe()
	must(t, err)
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	proc, err := (&Provider{}).Start(ctx, p, sandbox.RunnerSpec{
		Path: "/bin/sh", Args: []string{"-c", `ls "$LIB"; cat "$LIB"/* 2>&1; true`},
		Env: append(w.env(p), "LIB="+w.lib), Dir: p.Home, Stderr: wr,
	})
	wr.Close()
	if err != nil {
		return "", err
	}
	timer := time.AfterFunc(20*time.Second, func() { proc.Kill() })
	defer timer.Stop()
	out, _ := io.ReadAll(r)
	proc.Wait()
	if strings.Contains(string(out), secret) {
		t.Fatalf("the session showed the secret through %s:\n%s", w.lib, out)
	}
	return string(out), nil
}

func TestEscapePlantedSymlink(t *testing.T) {
	t.Run("planted_last_component", func(t *testing.T) {
		w := newPathWorld(t)
		w.attacker(t, `mv "$P/vendor" "$P/vendor.moved" && mkdir "$P/vendor" && ln -s "$H/.ssh" "$P/vendor/lib"`)
		// While the attacker's folder is writable in a running session, or given writable
		// here, the link is not followed at all; afterwards, where it leads is refused.
		for _, opts := range []policy.Options{
			{Untrusted: []string{w.project}, ReadOnly: []string{w.lib}},
			{Writable: []string{w.project}, ReadOnly: []string{w.lib}},
			{ReadOnly: []string{w.lib}},
		} {
			_, err := w.newPolicy(t, opts)
			var unsafe *policy.UnsafeLinkError
			if !errors.As(err, &unsafe) && (err == nil || !strings.Contains(err.Error(), "is ~/.ssh, which holds logins")) {
				t.Errorf("%+v: got %v, want the planted link refused", opts, err)
			}
		}
	})
	t.Run("intermediate_swapped_after_check", func(t *testing.T) {
		w := newPathWorld(t)
		p, err := w.newPolicy(t, policy.Options{ReadOnly: []string{w.lib}})
		must(t, err)
		// The policy saw a real folder; the attacker now turns an intermediate component
		// into a link to the home folder's secrets.
		w.attacker(t, `mv "$P/vendor" "$P/vendor.moved" && ln -s ../secrets "$P/vendor"`)
		out, err := w.victim(t, p)
		if err == nil {
			t.Fatalf("the session started on a path that now goes through a link:\n%s", out)
		}
		if !strings.Contains(err.Error(), "symlink") || !strings.Contains(err.Error(), "start the session again") {
			t.Errorf("the refusal does not say why: %v", err)
		}
	})
	t.Run("real_folder_swapped_after_check", func(t *testing.T) {
		w := newPathWorld(t)
		p, err := w.newPolicy(t, policy.Options{ReadOnly: []string{w.lib}})
		must(t, err)
		w.attacker(t, `mv "$P/vendor/lib" "$P/lib.moved" && mkdir "$P/vendor/lib" && echo planted > "$P/vendor/lib/planted.txt"`)
		out, err := w.victim(t, p)
		if err == nil {
			t.Fatalf("the session bound another folder than the one checked:\n%s", out)
		}
		if !strings.Contains(err.Error(), "is no longer the folder that was checked") {
			t.Errorf("the refusal does not say why: %v", err)
		}
	})
}

// TestEscapePlantedSymlinkRace: a command in the project swaps an intermediate component
// with a link to the home folder's secrets as fast as it can (renameat2 RENAME_EXCHANGE),
// while sessions start on the path. Each start either shows the real folder or is refused;
// none shows the secret.
func TestEscapePlantedSymlinkRace(t *testing.T) {
	w := newPathWorld(t)
	evil := filepath.Join(w.project, "evil")
	must(t, os.Symlink("../secrets", evil))
	self, err := os.Executable()
	must(t, err)
	self = resolved(t, self)
	ap, err := w.newPolicy(t, policy.Options{Writable: []string{w.project}, RunnerFiles: []string{self}})
	must(t, err)
	// Half the starts use a policy checked before the race began, as a session that is
	// slow to start would: only the wall stands between them and the swapped path.
	early, err := w.newPolicy(t, policy.Options{ReadOnly: []string{w.lib}})
	must(t, err)
	swapper := start(t, w.world, ap, `exec "$SELF" -test.run='^TestSwapHelper$'`,
		"SELF="+self, swapHelper+"="+w.readonly+"\n"+evil)
	// The race starts when the swapper does: the path is seen swapped once.
	if err := tstest.Poll(20*time.Second, func() error {
		if fi, err := os.Lstat(w.readonly); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		return errors.New("not swapped yet")
	}); err != nil {
		out, _ := swapper.wait(t)
		t.Fatalf("the swapper never swapped:\n%s", out)
	}
	deadline := time.Now().Add(40 * time.Second)
	var real, refusedByPolicy, refusedByWall int
	for i := 0; i < 40 && time.Now().Before(deadline); i++ {
		p := early
		if i%2 == 0 {
			if p, err = w.newPolicy(t, policy.Options{Untrusted: []string{w.project}, ReadOnly: []string{w.lib}}); err != nil {
				refusedByPolicy++
				continue
			}
		}
		out, err := w.victim(t, p)
		switch {
		case err != nil:
			refusedByWall++
			if !strings.Contains(err.Error(), "symlink") && !strings.Contains(err.Error(), "is no longer the folder that was checked") {
				t.Errorf("start %d was refused for another reason: %v", i, err)
			}
		case strings.Contains(out, "vendored"):
			real++
		default:
			t.Errorf("start %d showed neither the real folder nor a refusal: %q", i, out)
		}
	}
	swapper.proc.Kill()
	out, _ := swapper.wait(t)
	if !strings.Contains(out, "swapped") {
		t.Fatalf("the swapper did not run:\n%s", out)
	}
	t.Logf("%d starts showed the real folder, %d were refused by the policy, %d by the wall", real, refusedByPolicy, refusedByWall)
	if refusedByWall == 0 {
		t.Fatal("no start ever met the swapped path in the wall; the race was not run")
	}
}

// TestSwapHelper is the attacker of TestEscapePlantedSymlinkRace, run inside its wall.
func TestSwapHelper(t *testing.T) {
	pair := os.Getenv(swapHelper)
	if pair == "" {
		t.Skip("run by TestEscapePlantedSymlinkRace")
	}
	a, b, _ := strings.Cut(pair, "\n")
	os.Stdout.WriteString("swapped\n")
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); {
		if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
			t.Fatalf("swap: %v", err)
		}
	}
}

// TestToolchainLoginsHidden: a toolchain is shown whole and read-only, except the files in it
// that hold logins, which are empty inside; a toolchain that leads to a folder of logins is
// refused.
func TestToolchainLoginsHidden(t *testing.T) {
	w := newPathWorld(t)
	cargo := filepath.Join(w.home, ".cargo")
	must(t, os.MkdirAll(filepath.Join(cargo, "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(cargo, "bin", "cargo"), []byte("#!/bin/sh\necho cargo-ran\n"), 0o755))
	for _, f := range []string{"credentials.toml", "credentials"} {
		must(t, os.WriteFile(filepath.Join(cargo, f), []byte("[registry]\ntoken = \""+secret+"\"\n"), 0o600))
	}
	p, err := w.newPolicy(t, policy.Options{Writable: []string{w.project}, Toolchains: []string{".cargo"}})
	must(t, err)
	out, code := run(t, w.world, p, `C="$H/.cargo"; "$C/bin/cargo"; cat "$C/credentials.toml" "$C/credentials"; echo "size $(wc -c < "$C/credentials.toml")"; echo x > "$C/credentials.toml"`)
	t.Logf("exit %d: %s", code, out)
	if !strings.Contains(out, "cargo-ran") || !strings.Contains(out, "size 0") {
		t.Errorf("the toolchain did not run, or its login file was not empty:\n%s", out)
	}
	if !strings.Contains(out, "Read-only file system") {
		t.Errorf("the hidden file was writable:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(cargo, "credentials.toml")); !strings.Contains(string(b), secret) {
		t.Errorf("the host's file changed: %q", b)
	}
	// A toolchain the person adds that is a link to ~/.ssh is judged by where it leads.
	must(t, os.Symlink(filepath.Join(w.home, ".ssh"), filepath.Join(w.home, "sdk")))
	if _, err := w.newPolicy(t, policy.Options{Toolchains: []string{"sdk"}}); err == nil || !strings.Contains(err.Error(), "is ~/.ssh") {
		t.Errorf("a toolchain that leads to ~/.ssh: %v", err)
	}
}
