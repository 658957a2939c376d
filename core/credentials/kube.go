package credentials

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/internal/regularfile"
	yaml "go.yaml.in/yaml/v3"
)

// kubePathKeys are the kubeconfig keys that name a file: kubectl inside can read only the
// copies, so each is copied and its path rewritten. Their *-data twins hold the bytes inline
// and need nothing.
var kubePathKeys = map[string]bool{
	"certificate-authority": true, "client-certificate": true, "client-key": true, "tokenFile": true,
}

// kubeSecretPaths are the path keys whose files hold a secret: never copied for a stand-in
// login.
var kubeSecretPaths = map[string]bool{"client-key": true, "tokenFile": true}

// kubeconfig copies the files the kubeconfig at src names by path, rewrites the paths in
// its copy dst, and returns the clusters' servers as host:port.
func (c *copier) kubeconfig(src, dst string) ([]hosts.Entry, error) {
	data, err := os.ReadFile(dst) // the copy, just written by us
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		c.cur.Notes = append(c.cur.Notes, "the kubeconfig is not valid YAML ("+err.Error()+"); it was copied as it is, and no server was added to the allow list")
		return nil, nil
	}
	servers, paths := kubeWalk(&doc)
	entries := c.kubeServers(servers)
	rewritten := false
	for _, kp := range paths {
		n := kp.n
		if n.Value == "" || c.standIn && kubeSecretPaths[kp.key] {
			// A key or token file stays outside: kubeStandIns reads it there.
			continue
		}
		p := n.Value
		if !filepath.IsAbs(p) {
			// kubectl reads a relative path from the kubeconfig's folder.
			p = filepath.Join(filepath.Dir(src), p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			c.leftOut(p, "(named in the kubeconfig) cannot be found: "+reason(err))
			continue
		}
		if !within(c.realHome, real) {
			c.leftOut(p, "(named in the kubeconfig) is outside the home folder; kubectl inside cannot read it")
			continue
		}
		if c.untrusted(p) || c.untrusted(real) {
			c.leftOut(p, "(named in the kubeconfig) "+untrustedWhy)
			continue
		}
		rel, err := filepath.Rel(c.realHome, real)
		if within(c.o.UserHome, p) {
			rel, err = filepath.Rel(c.o.UserHome, p)
		}
		if err != nil {
			return nil, err
		}
		q := filepath.Join(c.o.SandboxHome, rel)
		if err := os.MkdirAll(filepath.Dir(q), 0o700); err != nil {
			return nil, err
		}
		if err := c.file(real, q, p); err != nil {
			return nil, err
		}
		if _, err := os.Lstat(q); err == nil {
			n.Value, n.Style = q, 0
			rewritten = true
		}
	}
	if !rewritten {
		return entries, nil
	}
	return entries, writeKubeconfig(dst, &doc)
}

// writeKubeconfig writes doc as the kubeconfig's copy at dst.
func writeKubeconfig(dst string, doc *yaml.Node) error {
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("rewriting the kubeconfig's copy: %w", err)
	}
	if err := enc.Close(); err != nil {
		return err
	}
	return writeCopy(dst, out.Bytes())
}

// KubeServers returns the servers of the kubeconfig at path as host:port, for listing the
// kubectl entry's hosts; the file is only read.
func KubeServers(path string) ([]hosts.Entry, error) {
	data, err := regularfile.Read(path, 4<<20)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the kubeconfig %s is not valid YAML: %w", path, err)
	}
	servers, _ := kubeWalk(&doc)
	var out []hosts.Entry
	for _, s := range servers {
		if e, err := serverEntry(s); err == nil {
			out = append(out, e)
		}
	}
	return out, nil
}

func (c *copier) kubeServers(servers []string) []hosts.Entry {
	var out []hosts.Entry
	for _, s := range servers {
		e, err := serverEntry(s)
		if err != nil {
			c.cur.Notes = append(c.cur.Notes, "the kubeconfig's server "+s+" was not added to the allow list: "+err.Error())
			continue
		}
		out = append(out, e)
	}
	return out
}

// serverEntry is a cluster's server URL as an allow-list entry; https is on 443 unless the
// URL says otherwise.
func serverEntry(s string) (hosts.Entry, error) {
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" {
		return hosts.Entry{}, fmt.Errorf("%q is not a URL with a host", s)
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return hosts.Parse(net.JoinHostPort(u.Hostname(), port))
}

// kubePath is the value node n of the key that names a file.
type kubePath struct {
	key string
	n   *yaml.Node
}

// kubeWalk returns the clusters' servers and the value nodes of every key that names a file.
func kubeWalk(doc *yaml.Node) (servers []string, paths []kubePath) {
	root := yamlRoot(doc)
	for _, section := range []struct{ list, item string }{{"clusters", "cluster"}, {"users", "user"}} {
		seq := mapValue(root, section.list)
		if seq == nil || seq.Kind != yaml.SequenceNode {
			continue
		}
		for _, el := range seq.Content {
			m := mapValue(el, section.item)
			if m == nil || m.Kind != yaml.MappingNode {
				continue
			}
			for i := 0; i+1 < len(m.Content); i += 2 {
				k, v := m.Content[i], m.Content[i+1]
				if v.Kind != yaml.ScalarNode {
					continue
				}
				switch {
				case k.Value == "server" && section.item == "cluster":
					servers = append(servers, v.Value)
				case kubePathKeys[k.Value]:
					paths = append(paths, kubePath{k.Value, v})
				}
			}
		}
	}
	return servers, paths
}

// mapValue is the value of key in mapping node m, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// kubeStandIns replaces the secrets of the kubeconfig's copy at dst (src is the person's)
// with stand-ins: each user's token (inline, or read outside from its tokenFile), basic
// password and client certificate (a pair made for the session in place of the real one,
// whose key is read outside), bound to the servers of the clusters its contexts pair it
// with. kubectl trusts only the authority a cluster names, so each such cluster's copy names
// OpenWorker's, and the proxy verifies the server with the cluster's own authority and
// tls-server-name (StandIn.Verify). A secret for a cluster reached over http, without
// verifying its certificate or through a proxy of its own is left out, and said. exec and
// auth-provider users, and the clusters only they use, are left as they are.
func (c *copier) kubeStandIns(src, dst string, res *Result) ([]hosts.Entry, error) {
	data, err := os.ReadFile(dst)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, c.dropCopy(dst, "the kubeconfig is not valid YAML ("+err.Error()+"), so its tokens cannot be replaced by stand-ins")
	}
	root := yamlRoot(&doc)
	clusters, users := kubeNamed(root, "clusters", "cluster"), kubeNamed(root, "users", "user")
	pairs := map[string][]string{} // user -> the clusters its contexts pair it with
	for _, ctx := range kubeNamed(root, "contexts", "context") {
		u, cl := scalar(ctx, "user"), scalar(ctx, "cluster")
		if u != "" && cl != "" && !slices.Contains(pairs[u], cl) {
			pairs[u] = append(pairs[u], cl)
		}
	}
	var caPEM []byte
	trusted := map[string]bool{} // host:port the copy's clusters reach through OpenWorker
	var added []hosts.Entry
	names := make([]string, 0, len(users))
	for n := range users {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		u := users[name]
		cert, certWhy := c.kubeClientCert(src, u)
		secret, field := scalar(u, "token"), "token"
		if f := scalar(u, "tokenFile"); f != "" && secret == "" {
			tok, why := c.kubeSecretFile(src, f, "tokenFile")
			dropKey(u, "tokenFile")
			if err := checkToken(string(tok)); why == "" && err != nil {
				why = "its tokenFile does not hold a token: " + err.Error()
			}
			if why != "" {
				c.cur.Notes = append(c.cur.Notes, "the token of the kubeconfig user "+name+" was left out of the copy: "+why)
			} else {
				secret = strings.TrimSpace(string(tok))
				setScalar(u, "token", secret)
			}
		}
		if p := scalar(u, "password"); secret == "" && p != "" {
			secret, field = p, "password"
		}
		if certWhy != "" {
			// The certificate cannot be used, whatever the clusters; a token beside it can.
			dropClientCert(u)
			c.cur.Notes = append(c.cur.Notes, "the client certificate of the kubeconfig user "+name+" was left out of the copy: "+certWhy)
		}
		if secret == "" && cert == nil {
			continue
		}
		var targets []hosts.Entry
		verify := map[string]Verify{}
		why := ""
		for _, cl := range pairs[name] {
			t, v, w := c.kubeCluster(cl, clusters[cl])
			if w != "" {
				why = w
				continue
			}
			targets = append(targets, t)
			verify[t.String()] = v
		}
		if len(targets) == 0 && why == "" {
			why = "no context pairs it with a cluster"
		}
		if len(targets) == 0 {
			if secret != "" {
				dropKey(u, field)
				c.cur.Notes = append(c.cur.Notes, "the "+field+" of the kubeconfig user "+name+" was left out of the copy: "+why)
			}
			if cert != nil {
				dropClientCert(u)
				c.cur.Notes = append(c.cur.Notes, "the client certificate of the kubeconfig user "+name+" was left out of the copy: "+why)
			}
			continue
		}
		if caPEM == nil {
			if c.o.StandInCA == nil {
				return nil, c.dropCopy(dst, "OpenWorker's certificate authority, which kubectl inside must be told to trust, is not at hand")
			}
			if caPEM, err = c.o.StandInCA(); err != nil {
				return nil, c.dropCopy(dst, "OpenWorker's certificate authority, which kubectl inside must be told to trust, could not be read ("+err.Error()+")")
			}
		}
		if secret != "" {
			s, err := c.newStandIn("kubectl", secret, targets, res)
			if err != nil {
				return nil, err
			}
			for i := range res.StandIns {
				if res.StandIns[i].StandIn == s {
					if res.StandIns[i].Verify == nil {
						res.StandIns[i].Verify = map[string]Verify{}
					}
					maps.Copy(res.StandIns[i].Verify, verify)
				}
			}
			setScalar(u, field, s)
		}
		if cert != nil {
			for _, k := range []string{"client-key", "client-certificate"} {
				dropKey(u, k)
			}
			setScalar(u, "client-certificate-data", base64.StdEncoding.EncodeToString(cert.standInCert))
			setScalar(u, "client-key-data", base64.StdEncoding.EncodeToString(cert.standInKey))
			res.StandIns = append(res.StandIns, StandIn{Login: "kubectl", Hosts: slices.Clone(targets), Verify: verify,
				ClientCert: cert.cert, ClientKey: cert.key, StandInCert: cert.standInDER})
		}
		for _, t := range targets {
			trusted[t.String()] = true
			if !slices.Contains(added, t) {
				added = append(added, t)
			}
		}
	}
	// Every cluster reached at a server OpenWorker ends TLS for trusts its authority alone.
	for _, m := range clusters {
		if t, err := serverEntry(scalar(m, "server")); err == nil && trusted[t.String()] {
			trustOnly(m, caPEM)
		}
	}
	if err := writeKubeconfig(dst, &doc); err != nil {
		return nil, err
	}
	return added, c.noRealSecret(dst, res)
}

// dropClientCert takes a kubeconfig user's client certificate and key out.
func dropClientCert(u *yaml.Node) {
	for _, k := range []string{"client-key-data", "client-key", "client-certificate-data", "client-certificate"} {
		dropKey(u, k)
	}
}

// kubeCluster is where a secret for the cluster name (its mapping m) goes, and how the
// proxy verifies it there, or why no stand-in can stand for it.
func (c *copier) kubeCluster(name string, m *yaml.Node) (hosts.Entry, Verify, string) {
	if m == nil {
		return hosts.Entry{}, Verify{}, "its context names the cluster " + name + ", which the kubeconfig does not have"
	}
	server := scalar(m, "server")
	if strings.HasPrefix(server, "http://") {
		return hosts.Entry{}, Verify{}, name + " is reached over http://, where a stand-in would travel as it is"
	}
	if scalar(m, "insecure-skip-tls-verify") == "true" {
		return hosts.Entry{}, Verify{}, name + " is reached without verifying its certificate (insecure-skip-tls-verify), so the real secret could go wherever the connection leads"
	}
	if scalar(m, "proxy-url") != "" {
		return hosts.Entry{}, Verify{}, name + " is reached through a proxy of its own (proxy-url)"
	}
	t, err := serverEntry(server)
	if err != nil || t.Wildcard {
		return hosts.Entry{}, Verify{}, name + "'s server " + strconv.Quote(server) + " is not a host"
	}
	v := Verify{ServerName: scalar(m, "tls-server-name")}
	if d := scalar(m, "certificate-authority-data"); d != "" {
		pem, err := base64.StdEncoding.DecodeString(d)
		if err != nil {
			return hosts.Entry{}, Verify{}, name + "'s certificate-authority-data is not base64"
		}
		v.Roots = pem
	} else if p := scalar(m, "certificate-authority"); p != "" {
		// The copy names its own copy of the file (kubeconfig rewrote the path).
		pem, err := regularfile.Read(p, 1<<20)
		if err != nil {
			return hosts.Entry{}, Verify{}, name + "'s certificate authority " + p + " could not be read (" + reason(err) + ")"
		}
		v.Roots = pem
	}
	return t, v, ""
}

// kubeSecretFile reads a file a user names by key (tokenFile, client-key) outside, relative
// to the kubeconfig's folder, or says why it cannot be.
func (c *copier) kubeSecretFile(src, f, key string) ([]byte, string) {
	if !filepath.IsAbs(f) {
		f = filepath.Join(filepath.Dir(src), f)
	}
	real, err := filepath.EvalSymlinks(f)
	switch {
	case err != nil:
		return nil, "its " + key + " " + f + " cannot be found (" + reason(err) + ")"
	case !within(c.realHome, real):
		return nil, "its " + key + " " + f + " is outside the home folder"
	case c.untrusted(f) || c.untrusted(real):
		return nil, "its " + key + " " + f + " " + untrustedWhy
	}
	b, err := regularfile.Read(real, 64<<10)
	if err != nil {
		return nil, "its " + key + " " + f + " could not be read (" + reason(err) + ")"
	}
	return b, ""
}

// kubeCert is a user's client certificate and key (PEM), and the stand-ins made for them.
type kubeCert struct {
	cert, key                           []byte
	standInCert, standInKey, standInDER []byte
}

// kubeClientCert reads user u's client certificate and key (inline, or from their files:
// the certificate's copy, the key outside) and makes a stand-in pair of its own, or says why
// it cannot. nil, "": the user has none.
func (c *copier) kubeClientCert(src string, u *yaml.Node) (*kubeCert, string) {
	certData, keyData := scalar(u, "client-certificate-data"), scalar(u, "client-key-data")
	certFile, keyFile := scalar(u, "client-certificate"), scalar(u, "client-key")
	if certData == "" && keyData == "" && certFile == "" && keyFile == "" {
		return nil, ""
	}
	var kc kubeCert
	var err error
	switch {
	case certData != "":
		if kc.cert, err = base64.StdEncoding.DecodeString(certData); err != nil {
			return nil, "its client-certificate-data is not base64"
		}
	case certFile != "":
		// The copy names its own copy of the file (kubeconfig rewrote the path).
		if kc.cert, err = regularfile.Read(certFile, 1<<20); err != nil {
			return nil, "its client-certificate " + certFile + " could not be read (" + reason(err) + ")"
		}
	}
	switch {
	case keyData != "":
		if kc.key, err = base64.StdEncoding.DecodeString(keyData); err != nil {
			return nil, "its client-key-data is not base64"
		}
	case keyFile != "":
		var why string
		if kc.key, why = c.kubeSecretFile(src, keyFile, "client-key"); why != "" {
			return nil, why
		}
	}
	pair, err := tls.X509KeyPair(kc.cert, kc.key)
	if err != nil {
		return nil, "its certificate and key do not make a pair (" + err.Error() + ")"
	}
	if kc.standInCert, kc.standInKey, kc.standInDER, err = standInCertificate(pair.Leaf); err != nil {
		return nil, err.Error()
	}
	return &kc, ""
}

// standInCertificate makes a stand-in for the client certificate real: a new key, and a
// certificate for it with real's subject and lifetime, signed by itself, worth nothing to
// any server; returned in PEM, and the certificate in DER.
func standInCertificate(real *x509.Certificate) ([]byte, []byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      real.Subject,
		NotBefore:    real.NotBefore,
		NotAfter:     real.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("making a stand-in certificate: %w", err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), der, nil
}

// trustOnly makes the cluster m trust the authority caPEM alone, by the name of its server.
func trustOnly(m *yaml.Node, caPEM []byte) {
	dropKey(m, "certificate-authority")
	dropKey(m, "tls-server-name")
	setScalar(m, "certificate-authority-data", base64.StdEncoding.EncodeToString(caPEM))
}

// scalar is the scalar value of key in mapping m, "" for none.
func scalar(m *yaml.Node, key string) string {
	if v := mapValue(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// setScalar sets key in mapping m to the string value.
func setScalar(m *yaml.Node, key, value string) {
	if v := mapValue(m, key); v != nil {
		*v = yaml.Node{Kind: yaml.ScalarNode, Value: value}
		return
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Value: value})
}
