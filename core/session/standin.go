package session

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/internal/regularfile"
	"github.com/openworker/openworker/core/localca"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/proxy"
	"github.com/openworker/openworker/core/sandbox"
)

// CADir is the folder of the state folder that keeps the machine's certificate authority for
// stand-in logins (see package localca). No sandbox reaches the state folder.
const CADir = "ca"

// TrustVars are the variables a session with stand-in logins points at its CA bundle (the
// system's roots and OpenWorker's CA): each names the file its stack reads instead of the
// system's. NodeTrustVar adds OpenWorker's CA alone to Node's own roots.
var TrustVars = []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT", "AWS_CA_BUNDLE"}

const NodeTrustVar = "NODE_EXTRA_CA_CERTS"

// machineCA is the machine's CA, loaded (made the first time) when a session first has a
// stand-in login; a failure is tried again at the next such session.
func (m *Manager) machineCA() (*localca.CA, error) {
	m.caMu.Lock()
	defer m.caMu.Unlock()
	if m.ca != nil {
		return m.ca, nil
	}
	ca, err := localca.Load(filepath.Join(m.opts.StateDir, CADir))
	if err != nil {
		return nil, err
	}
	m.ca = ca
	return ca, nil
}

// prepareStandIns readies the session's stand-in logins, once their copies hold stand-ins:
// the CA, the bundle the sandbox's programs trust and the variables that name it, and what
// the proxy needs to put the real secrets on requests. A stand-in login that cannot work
// refuses the session with why: its copy holds only stand-ins, and copying the real secret
// instead is the person's choice, never made here.
func (s *Session) prepareStandIns() error {
	if s.logins == nil || len(s.logins.StandIns) == 0 {
		return nil
	}
	if s.Network == policy.Open && s.Enforcement == sandbox.Seatbelt {
		// Connections go straight out here: no proxy or relay stands where the real
		// secret would be put on.
		for i := range s.logins.Entries {
			if s.logins.Entries[i].Secrets == config.SecretsStandIn {
				s.logins.Entries[i].Notes = append(s.logins.Entries[i].Notes, "with the network open on a Mac, connections do not pass OpenWorker, so nothing puts the real token in place of the stand-in and the login's hosts refuse it: use the allow list (--network allowlist), or share the login by copying it")
			}
		}
	}
	var names []string
	for _, si := range s.logins.StandIns {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+si.Login+" ") {
			names = append(names, si.Login)
		}
	}
	which := strings.Join(names, " and ")
	refuse := func(err error) error {
		return fmt.Errorf("the shared login %s keeps its secrets outside, with stand-ins inside, which needs OpenWorker's certificate authority: %w; fix that, or share the login by copying it (openworker credentials secrets %s copy)", which, err, names[0])
	}
	ca, err := s.m.machineCA()
	if err != nil {
		return refuse(err)
	}
	bundle, err := s.writeTrust(ca)
	if err != nil {
		return refuse(err)
	}
	s.trustBundle = bundle
	for _, v := range TrustVars {
		s.logins.Vars[v] = bundle
	}
	s.logins.Vars[NodeTrustVar] = filepath.Join(filepath.Dir(bundle), "openworker-ca.pem")
	si := &proxy.StandIns{
		Certificate: ca.Leaf,
		Roots:       s.m.opts.UpstreamRoots,
		Substituted: s.recordStandIn,
		WayOut: func(login string) string {
			return "the " + login + " login can be shared by copying it instead (secrets = \"copy\"), which puts its real secret in the sandbox"
		},
	}
	for _, l := range s.logins.StandIns {
		for _, h := range l.Hosts {
			p := proxy.StandIn{Login: l.Login, Host: h.Host, Port: h.Port, StandIn: l.StandIn, Real: l.Real}
			if h.Wildcard {
				p.Host = "*." + h.Host
			}
			if l.AccessKeyID != "" {
				// The secret signs; it is never sent: the proxy signs again (proxy.SigV4).
				p.StandIn, p.Real = "", ""
				p.SigV4 = &proxy.SigV4{AccessKeyID: l.AccessKeyID, StandInSecret: l.StandIn, Secret: l.Real, StandInToken: l.StandInToken, Token: l.Token, EKSClusters: l.EKSClusters}
			}
			if len(l.ClientKey) > 0 {
				pair, err := tls.X509KeyPair(l.ClientCert, l.ClientKey)
				if err != nil {
					return refuse(fmt.Errorf("the client certificate of the %s login for %s: %w", l.Login, h, err))
				}
				p.ClientCert, p.StandInCert = &pair, l.StandInCert
			}
			if v, ok := l.Verify[h.String()]; ok {
				p.ServerName = v.ServerName
				if len(v.Roots) > 0 {
					p.Roots = x509.NewCertPool()
					if !p.Roots.AppendCertsFromPEM(v.Roots) {
						return refuse(fmt.Errorf("the certificate authority the %s login names for %s holds no certificate", l.Login, h))
					}
				}
			}
			si.Logins = append(si.Logins, p)
		}
	}
	s.standIns = si
	return nil
}

// writeTrust writes the session's CA bundle into its private tmp: the system's roots, then
// OpenWorker's CA; and the CA alone beside it (for Node, which adds it to its own roots).
// It is the sandbox's own: a command that changes it changes what the sandbox trusts, and
// nothing outside reads it.
func (s *Session) writeTrust(ca *localca.CA) (string, error) {
	var system []byte
	var looked []string
	for _, p := range policy.SystemCABundles(s.m.opts.GOOS) {
		looked = append(looked, p)
		b, err := regularfile.Read(p, 16<<20)
		if err == nil && bytes.Contains(b, []byte("-----BEGIN CERTIFICATE-----")) {
			system = b
			break
		}
		if real, rerr := filepath.EvalSymlinks(p); rerr == nil && real != p {
			if b, err := regularfile.Read(real, 16<<20); err == nil && bytes.Contains(b, []byte("-----BEGIN CERTIFICATE-----")) {
				system = b
				break
			}
		}
	}
	if system == nil {
		// Without the system's roots, every other site would stop being trusted inside.
		return "", errors.New("this machine's bundle of trusted roots was not found (looked at " + strings.Join(looked, ", ") + ")")
	}
	dir := filepath.Join(s.tmp, "trust")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	if !bytes.HasSuffix(system, []byte("\n")) {
		system = append(system, '\n')
	}
	own := ca.CertPEM()
	bundle := filepath.Join(dir, "ca-bundle.pem")
	roots := append(append(bytes.Clone(system), "# OpenWorker's certificate authority, for the session's stand-in logins\n"...), own...)
	for _, f := range []struct {
		path string
		data []byte
	}{{bundle, roots}, {filepath.Join(dir, "openworker-ca.pem"), own}} {
		if err := os.WriteFile(f.path, f.data, 0o444); err != nil {
			return "", err
		}
	}
	if s.m.opts.GOOS == "linux" {
		// Java reads its roots from a key store: the same roots, as one, for the wall to
		// place at Java's own (policy.Options.JavaTrustStore; only a Linux wall places
		// files).
		store, err := localca.JavaTrustStore(roots, time.Now())
		if err != nil {
			return "", err
		}
		s.javaTrustStore = filepath.Join(dir, "cacerts")
		if err := os.WriteFile(s.javaTrustStore, store, 0o444); err != nil {
			return "", err
		}
	}
	return bundle, nil
}

// recordStandIn puts a substitution of a stand-in login's secret in the audit trail.
func (s *Session) recordStandIn(login, host string) {
	s.m.audit(audit.Event{Type: audit.LoginStandIn, Session: s.ID, Enforcement: string(s.Enforcement), Login: login, Host: host, Command: s.Running()})
}

// httpSocket is where the session serves plain HTTP for https sites (see
// proxy.ServeSocket), for a stand-in gh login's copy to send gh's requests to: in its
// private tmp, which is owner-only outside and the sandbox's own inside, and where the macOS
// profile lets Unix sockets be reached.
func (s *Session) httpSocket() string { return filepath.Join(s.tmp, "https.sock") }

// serveHTTPSocket serves the socket through px (the proxy, or the open mode's relay decider,
// whose list and refusals it shares) when a copy sends requests there. The proxy's end ends
// it.
func (s *Session) serveHTTPSocket(px *proxy.Proxy) error {
	if s.logins == nil || s.logins.HTTPSocket == "" || s.httpSocketServed {
		return nil
	}
	l, err := net.Listen("unix", s.logins.HTTPSocket)
	if err != nil {
		return fmt.Errorf("serving the socket gh's stand-in login sends its requests to: %w", err)
	}
	s.httpSocketServed = true
	go px.ServeSocket(l)
	return nil
}
