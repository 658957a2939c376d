package localca

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLoadMakesTheCAOnceAndReadsItAfter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "ca")
	ca, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		mode os.FileMode
	}{{KeyFile, 0o600}, {CertFile, 0o644}} {
		st, err := os.Stat(filepath.Join(dir, f.name))
		if err != nil || st.Mode().Perm() != f.mode {
			t.Errorf("%s: %v %v, want mode %v", f.name, err, st.Mode(), f.mode)
		}
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("the CA's folder is %v, want owner-only", st.Mode())
	}
	c := ca.Certificate()
	if !c.IsCA || c.MaxPathLen != 0 || !c.MaxPathLenZero || c.NotAfter.Before(time.Now().Add(9*365*24*time.Hour)) {
		t.Errorf("CA certificate: IsCA %v MaxPathLen %d NotAfter %v", c.IsCA, c.MaxPathLen, c.NotAfter)
	}
	if c.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("CA key is %v, want ECDSA", c.PublicKeyAlgorithm)
	}
	again, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(again.CertPEM()) != string(ca.CertPEM()) {
		t.Fatal("a second Load made another CA instead of reading the first")
	}
}

func TestLoadAtOnceMakesOneCA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	var wg sync.WaitGroup
	pems := make([]string, 8)
	errs := make([]error, 8)
	for i := range pems {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ca, err := Load(dir)
			errs[i] = err
			if err == nil {
				pems[i] = string(ca.CertPEM())
			}
		}()
	}
	wg.Wait()
	for i := range pems {
		if errs[i] != nil {
			t.Fatalf("load %d: %v", i, errs[i])
		}
		if pems[i] != pems[0] {
			t.Fatalf("load %d read another CA than load 0", i)
		}
	}
}

func TestLeafVerifiesForItsHostOnly(t *testing.T) {
	ca, err := Load(filepath.Join(t.TempDir(), "ca"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	for _, host := range []string{"api.github.com", "registry.example.test", "127.0.0.1"} {
		leaf, err := ca.Leaf(host)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots}); err != nil {
			t.Errorf("%s: the leaf does not verify for its host: %v", host, err)
		}
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "gist.github.com", Roots: roots}); err == nil {
			t.Errorf("%s: the leaf verifies for another host", host)
		}
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: host}); err == nil {
			t.Errorf("%s: the leaf verifies against the system's roots", host)
		}
		same, _ := ca.Leaf(strings.ToUpper(host))
		if same != leaf {
			t.Errorf("%s: a second ask made a second certificate", host)
		}
	}
}

func TestLeafIsMadeAgainBeforeItEnds(t *testing.T) {
	now := time.Now()
	ca, err := load(filepath.Join(t.TempDir(), "ca"), func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	first, _ := ca.Leaf("api.github.com")
	now = now.Add(leafLifetime - leafRenewal/2)
	second, _ := ca.Leaf("api.github.com")
	if second == first || !second.Leaf.NotAfter.After(first.Leaf.NotAfter) {
		t.Fatal("a certificate about to end was kept")
	}
}

func TestLoadRefusesWithTheReason(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(dir string)
		want  string
	}{
		{"not_a_folder", func(dir string) { os.RemoveAll(dir); os.WriteFile(dir, []byte("x"), 0o600) }, "is not a folder"},
		{"key_gone", func(dir string) { os.Remove(filepath.Join(dir, KeyFile)) }, "has no key"},
		{"key_garbage", func(dir string) { os.WriteFile(filepath.Join(dir, KeyFile), []byte("garbage"), 0o600) }, "is damaged: ca-key.pem holds no PEM private key"},
		{"key_open_to_others", func(dir string) { os.Chmod(filepath.Join(dir, KeyFile), 0o644) }, "can be read by others (mode 0644)"},
		{"cert_of_another_key", func(dir string) {
			other := filepath.Join(filepath.Dir(dir), "other")
			Load(other)
			b, _ := os.ReadFile(filepath.Join(other, CertFile))
			os.WriteFile(filepath.Join(dir, CertFile), b, 0o644)
		}, "the certificate is not the key's"},
		{"key_is_a_symlink", func(dir string) {
			os.Rename(filepath.Join(dir, KeyFile), filepath.Join(dir, "real"))
			os.Symlink("real", filepath.Join(dir, KeyFile))
		}, "cannot be read at"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ca")
			if _, err := Load(dir); err != nil {
				t.Fatal(err)
			}
			c.spoil(dir)
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "certificate authority") {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
}

func TestLoadRefusesWhereItCannotMakeOne(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes a read-only folder all the same")
	}
	parent := t.TempDir()
	os.Chmod(parent, 0o500)
	defer os.Chmod(parent, 0o700)
	_, err := Load(filepath.Join(parent, "ca"))
	if err == nil || !strings.Contains(err.Error(), "could not be made in") {
		t.Fatalf("got %v, want the reason it could not be made", err)
	}
}

func TestAnExpiredCAIsMadeAnew(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	old, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(caLifetime)
	ca, err := load(dir, func() time.Time { return later })
	if err != nil {
		t.Fatal(err)
	}
	if string(ca.CertPEM()) == string(old.CertPEM()) || !ca.Certificate().NotAfter.After(later) {
		t.Fatal("an expired CA was kept")
	}
}
