package localca

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Java's own keytool reads the store, its seal checked with the password, with every
// certificate of the bundle in it.
func TestJavaTrustStoreReadsInJava(t *testing.T) {
	keytool, err := exec.LookPath("keytool")
	if err != nil {
		t.Skip("no keytool here (Debian: apt-get install default-jdk-headless)")
	}
	a, err := Load(filepath.Join(t.TempDir(), "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	store, err := JavaTrustStore(append(a.CertPEM(), b.CertPEM()...), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cacerts")
	if err := os.WriteFile(path, store, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(keytool, "-list", "-keystore", path, "-storepass", JavaTrustStorePassword).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Your keystore contains 2 entries") || strings.Count(string(out), "trustedCertEntry") != 2 {
		t.Fatalf("keytool: %v\n%s", err, out)
	}
	// A wrong password fails the seal: keytool checks it.
	out, err = exec.Command(keytool, "-list", "-keystore", path, "-storepass", "not-the-password").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "password was incorrect") {
		t.Fatalf("keytool with a wrong password: %v\n%s", err, out)
	}
	if _, err := JavaTrustStore([]byte("no certificates"), time.Now()); err == nil {
		t.Error("a store of nothing was made")
	}
}
