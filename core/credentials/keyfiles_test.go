package credentials

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/config"
)

// keyLayouts are files that hold a private key past their first 4 KiB, as client
// certificate bundles do (the chain first, the key last): in PEM, in DER (certificates and
// key one after the other), and, where openssl is installed, as PKCS#12 and as `openssl
// pkcs12 -nodes` writes one out. Each is made fresh with Go's crypto (and openssl).
func keyLayouts(t *testing.T) map[string][]byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	var chainPEM, chainDER []byte
	for i := 0; len(chainDER) < 5<<10; i++ {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 1)), Subject: pkix.Name{CommonName: "chain " + strings.Repeat("x", 200)},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{strings.Repeat("a", 60) + ".example"}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		chainDER = append(chainDER, der...)
		chainPEM = append(chainPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	out := map[string][]byte{
		"client-bundle.pem": append(append([]byte{}, chainPEM...), keyPEM...),
		"client-bundle.der": append(append([]byte{}, chainDER...), pkcs8...),
		"client-key.der":    pkcs8,
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Logf("no openssl here: the PKCS#12 layouts are not tried")
		return out
	}
	dir := t.TempDir()
	chainFile, keyFile, p12 := filepath.Join(dir, "chain.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "bundle.p12")
	if err := os.WriteFile(chainFile, chainPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	openssl := func(args ...string) []byte {
		t.Helper()
		b, err := exec.Command("openssl", args...).Output()
		if err != nil {
			t.Fatalf("openssl %s: %v", strings.Join(args, " "), err)
		}
		return b
	}
	openssl("pkcs12", "-export", "-in", chainFile, "-inkey", keyFile, "-passout", "pass:", "-out", p12)
	bundle, err := os.ReadFile(p12)
	if err != nil {
		t.Fatal(err)
	}
	out["client.p12"] = bundle
	out["client-nodes.pem"] = openssl("pkcs12", "-in", p12, "-passin", "pass:", "-nodes")
	if i := bytes.Index(out["client-nodes.pem"], []byte("PRIVATE KEY")); i < 4096 {
		t.Fatalf("openssl pkcs12 -nodes wrote the key %d bytes in, not past the first 4 KiB", i)
	}
	return out
}

// TestSSHAgentModeKeepsKeysWhereverTheyAre: with keys = "agent", a file whose private key
// comes after its first 4 KiB, in PEM, DER or PKCS#12, stays outside, as does a file that
// is not text (whose key, if it holds one, could not be told from other data) and one whose
// PEM key comes after its first MiB; each is said, with why. A large text file that holds no
// key is copied.
func TestSSHAgentModeKeepsKeysWhereverTheyAre(t *testing.T) {
	home, sandbox := t.TempDir(), t.TempDir()
	ssh := filepath.Join(home, ".ssh")
	out := keyLayouts(t)
	noise := make([]byte, 8<<10)
	rand.Read(noise)
	out["random.bin"] = noise
	out["far-bundle.pem"] = append([]byte(strings.Repeat("# a long comment before the key\n", 40000)), out["client-bundle.pem"]...)
	for name, b := range out {
		write(t, filepath.Join(ssh, name), string(b), 0o600)
	}
	knownHosts := strings.Repeat("|1|c2FsdA==|aGFzaA== ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGV4YW1wbGUga2V5IGZvciBhIHRlc3Q=\n", 20000)
	write(t, filepath.Join(ssh, "known_hosts"), knownHosts, 0o644)
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox, Helper: "/bin/true", SSHAgentSocket: filepath.Join(t.TempDir(), "agent.sock")},
		entries(t, config.Credential{Name: "ssh", Keys: config.SSHKeysAgent}))
	if err != nil {
		t.Fatal(err)
	}
	said := strings.Join(res.Entries[0].LeftOut, "\n")
	for name := range out {
		if _, err := os.Lstat(filepath.Join(sandbox, ".ssh", name)); err == nil {
			t.Errorf("%s was copied into the sandbox home", name)
		}
		if !strings.Contains(said, "~/.ssh/"+name+" ") {
			t.Errorf("%s is not said to be left out:\n%s", name, said)
		}
	}
	if b, err := os.ReadFile(filepath.Join(sandbox, ".ssh", "known_hosts")); err != nil || string(b) != knownHosts {
		t.Errorf("the %d-byte known_hosts was not copied as it is: %v", len(knownHosts), err)
	}
}

// TestSurveyLooksAgainOnlyAtWhatChanged: a list read again looks through a file of ~/.ssh
// only when its size or modification time changed; a session's copy always looks afresh.
func TestSurveyLooksAgainOnlyAtWhatChanged(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ".ssh", "notes")
	clean := "a note of the same length as the key line that follows---\n"
	key := "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIE\n--------\n"
	if len(clean) != len(key) {
		t.Fatalf("the two texts differ in length: %d, %d", len(clean), len(key))
	}
	write(t, path, clean, 0o600)
	then := time.Now().Add(-time.Hour).Truncate(time.Second)
	os.Chtimes(path, then, then)
	memo := &ScanMemo{}
	survey := func() string {
		s := Survey(Options{UserHome: home, Memo: memo}, entries(t, config.Credential{Name: "ssh", Keys: config.SSHKeysAgent}))
		return strings.Join(s[0].LeftOut, "\n")
	}
	if lo := survey(); lo != "" {
		t.Fatalf("a clean file is left out: %s", lo)
	}
	// The same size and time: the memo's verdict stands (only the person changes ~/.ssh).
	write(t, path, key, 0o600)
	os.Chtimes(path, then, then)
	if lo := survey(); lo != "" {
		t.Fatalf("a file whose size and time did not change was looked through again: %s", lo)
	}
	// A session's copy looks through it afresh whatever the memo says.
	sandbox := t.TempDir()
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox, Helper: "/bin/true", SSHAgentSocket: filepath.Join(t.TempDir(), "s"), Memo: memo},
		entries(t, config.Credential{Name: "ssh", Keys: config.SSHKeysAgent}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sandbox, ".ssh", "notes")); err == nil || len(res.Entries[0].LeftOut) != 1 {
		t.Fatalf("the copy went by the memo: %v %v", err, res.Entries[0].LeftOut)
	}
	os.Chtimes(path, time.Now(), time.Now())
	if lo := survey(); !strings.Contains(lo, "~/.ssh/notes holds a private key") {
		t.Fatalf("a file whose time changed was not looked through again: %q", lo)
	}
}
