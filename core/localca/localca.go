// Package localca is this machine's own certificate authority: made once, kept in
// OpenWorker's state folder (which no sandbox reaches), and used only to sign the
// certificates OpenWorker's proxy shows a sandbox for the hosts of its stand-in logins, where
// it puts the real secret on a request in place of the stand-in. Each host's certificate is
// made when it is first asked for and kept in memory.
//
// It is not a general CA: it issues nothing else, trusts nothing, and knows nothing of
// sessions or logins. The sandbox trusts it only through the bundle a session gives its
// programs; the machine's own trust store is never changed.
package localca

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/openworker/openworker/core/internal/regularfile"
)

// Files of the CA in its folder.
const (
	CertFile = "ca.pem"
	KeyFile  = "ca-key.pem"
)

// Lifetimes. The CA lives long, so that a machine makes it once; a host's certificate lives
// a few days and is made again before it ends, so that a copy taken out of a session is soon
// worthless.
const (
	caLifetime   = 10 * 365 * 24 * time.Hour
	caRenewal    = 30 * 24 * time.Hour // a CA this close to its end is made anew
	leafLifetime = 7 * 24 * time.Hour
	leafRenewal  = 24 * time.Hour
	// backdate covers clocks a little behind the daemon's (a sandbox's is the same clock;
	// this is for the origin-facing checks of programs that compare to their own).
	backdate = time.Hour
)

// CA is the machine's certificate authority, loaded. It is safe for concurrent use.
type CA struct {
	dir     string
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	now     func() time.Time

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// Load reads the CA kept in dir, making it there the first time (and again when it is
// expired or about to be). dir is made owner-only. An error says what could not be made or
// read, and where: a stand-in login cannot work without the CA, and must not fall back to
// something else silently.
func Load(dir string) (*CA, error) { return load(dir, time.Now) }

func load(dir string, now func() time.Time) (*CA, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("OpenWorker's certificate authority: the folder %q is not an absolute path", dir)
	}
	ca, err := read(dir, now)
	switch {
	case err == nil && now().Add(caRenewal).Before(ca.cert.NotAfter):
		return ca, nil
	case err == nil:
		// Expired or about to be: the sandboxes trust whichever CA their session's bundle
		// holds, so a new one can take its place.
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("OpenWorker's certificate authority in %s has expired and could not be removed to make a new one: %w", dir, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	if err := makeCA(dir, now()); err != nil {
		return nil, err
	}
	return read(dir, now)
}

// read loads the CA's files; fs.ErrNotExist when there is none yet.
func read(dir string, now func() time.Time) (*CA, error) {
	st, err := os.Lstat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("OpenWorker's certificate authority cannot be read at %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("OpenWorker's certificate authority cannot be read: %s is not a folder; remove it, and OpenWorker makes a new one", dir)
	}
	keyPath, certPath := filepath.Join(dir, KeyFile), filepath.Join(dir, CertFile)
	if kst, err := os.Lstat(keyPath); err == nil && kst.Mode().IsRegular() && kst.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("OpenWorker's certificate authority's key %s can be read by others (mode %04o); make it owner-only (chmod 600 %s), or remove the folder and OpenWorker makes a new one", keyPath, kst.Mode().Perm(), keyPath)
	}
	keyPEM, err := regularfile.Read(keyPath, 64<<10)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("OpenWorker's certificate authority in %s has no key (%s); remove the folder, and OpenWorker makes a new one", dir, KeyFile)
		}
		return nil, fmt.Errorf("OpenWorker's certificate authority's key cannot be read at %s: %w", keyPath, err)
	}
	certPEM, err := regularfile.Read(certPath, 64<<10)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("OpenWorker's certificate authority in %s has no certificate (%s); remove the folder, and OpenWorker makes a new one", dir, CertFile)
		}
		return nil, fmt.Errorf("OpenWorker's certificate authority's certificate cannot be read at %s: %w", certPath, err)
	}
	bad := func(what string, err error) error {
		return fmt.Errorf("OpenWorker's certificate authority in %s is damaged: %s (%v); remove the folder, and OpenWorker makes a new one", dir, what, err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil || kb.Type != "PRIVATE KEY" {
		return nil, bad(KeyFile+" holds no PEM private key", errors.New("no PRIVATE KEY block"))
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, bad(KeyFile+" cannot be parsed", err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok || key.Curve != elliptic.P256() {
		return nil, bad(KeyFile+" is not an ECDSA P-256 key", errors.New("wrong key type"))
	}
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, bad(CertFile+" holds no PEM certificate", errors.New("no CERTIFICATE block"))
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, bad(CertFile+" cannot be parsed", err)
	}
	if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, bad("the certificate is not the key's", errors.New("public keys differ"))
	}
	if !cert.IsCA {
		return nil, bad("the certificate is not a CA's", errors.New("no CA basic constraint"))
	}
	return &CA{dir: dir, cert: cert, key: key, certPEM: pem.EncodeToMemory(cb), now: now, leaves: map[string]*tls.Certificate{}}, nil
}

// makeCA makes a new CA in dir: written whole in a folder beside it, then renamed into
// place, so that a daemon starting at the same moment reads either none or a whole one.
func makeCA(dir string, now time.Time) error {
	fail := func(err error) error {
		return fmt.Errorf("OpenWorker's certificate authority could not be made in %s: %w", dir, err)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fail(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fail(err)
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject: pkix.Name{
			Organization: []string{"OpenWorker"},
			CommonName:   strings.TrimSpace("OpenWorker stand-in logins " + host),
		},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fail(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fail(err)
	}
	tmp, err := os.MkdirTemp(parent, ".ca-new-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o700); err != nil {
		return fail(err)
	}
	if err := writeNew(filepath.Join(tmp, KeyFile), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return fail(err)
	}
	if err := writeNew(filepath.Join(tmp, CertFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Lstat(dir); serr == nil {
			return nil // another process made one first: that one is read
		}
		return fail(err)
	}
	return nil
}

func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		// crypto/rand does not fail on supported systems.
		panic("localca: no randomness: " + err.Error())
	}
	return n.Add(n, big.NewInt(1))
}

// CertPEM is the CA's certificate, PEM-encoded: what a sandbox's programs are given to trust.
func (ca *CA) CertPEM() []byte { return bytes.Clone(ca.certPEM) }

// Certificate is the CA's certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// Dir is the folder the CA is kept in.
func (ca *CA) Dir() string { return ca.dir }

// Leaf returns the certificate the proxy shows for host (a name, or an IP address), signed
// by the CA: made at the first ask, then kept until it is about to end.
func (ca *CA) Leaf(host string) (*tls.Certificate, error) {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" {
		return nil, errors.New("OpenWorker's certificate authority: no host to make a certificate for")
	}
	now := ca.now()
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[host]; ok && now.Add(leafRenewal).Before(c.Leaf.NotAfter) {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making a certificate for %s: %w", host, err)
	}
	notAfter := now.Add(leafLifetime)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{"OpenWorker"}, CommonName: host},
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("making a certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("making a certificate for %s: %w", host, err)
	}
	// The chain the client gets is the leaf alone: it trusts the CA itself.
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
	ca.leaves[host] = c
	return c, nil
}
