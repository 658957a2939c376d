package tstest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Nobody is the ordinary user the tests run as again where root runs them: uid and gid 65534.
const Nobody = 65534

// NobodysEnv is the environment a test binary gets as Nobody, after the given variables.
func NobodysEnv(vars ...string) []string {
	return append(vars, "PATH="+os.Getenv("PATH"), "HOME=/nonexistent", "TMPDIR=/tmp")
}

// NobodysCopy copies this test binary into a folder Nobody can run it from (the build cache
// is root's and closed to others), removed when t ends, and returns the copy's path.
func NobodysCopy(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "openworker-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(self))
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err == nil {
		_, err = io.Copy(out, in)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// AsNobody runs the named tests of this test binary again, from NobodysCopy, as Nobody with
// NobodysEnv(vars...), and fails t unless each of them passed.
func AsNobody(t *testing.T, tests []string, vars ...string) {
	t.Helper()
	cmd := exec.Command(NobodysCopy(t), "-test.count=1", "-test.v", "-test.run", "^("+strings.Join(tests, "|")+")$")
	cmd.Dir = "/"
	cmd.Env = NobodysEnv(vars...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as uid %d: %v\n%s", Nobody, err, out)
	}
	for _, name := range tests {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("as uid %d, %s did not pass:\n%s", Nobody, name, out)
		}
	}
}
