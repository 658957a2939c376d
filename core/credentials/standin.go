package credentials

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/openworker/openworker/core/hosts"
)

// A stand-in login's copy holds, in place of each secret, a stand-in of the same shape: the
// same prefix (gho_, npm_) and length, the same kind of characters, so a client's format check
// passes; random for each session and worthless anywhere. The real secret is read here, outside
// the sandbox, when the session starts, and goes back to the caller alone (Result.StandIns),
// for OpenWorker's proxy to put on requests to the login's own hosts.

// StandIn is one secret of a stand-in login: the stand-in the sandbox holds, the real secret
// it stands for, and the hosts the real one may go to.
type StandIn struct {
	Login   string
	Hosts   []hosts.Entry // host:port, never a wildcard
	StandIn string
	Real    string
	// Verify says, by host:port, how a host that is not verified as the system verifies
	// it must be (a cluster's own authority); nil for none.
	Verify map[string]Verify
	// AccessKeyID, for an AWS login, is the access key whose secret Real is: requests it
	// signs are signed again with Real (proxy.SigV4); Token and StandInToken are its
	// session token, if any, and the token's stand-in.
	AccessKeyID, Token, StandInToken string
	// EKSClusters, for an AWS key bound to an EKS cluster's server, are the cluster names
	// the tokens its kubeconfig users make are for (see eksStandIns).
	EKSClusters []string
	// ClientCert and ClientKey (PEM), for a login that signs in with a client certificate,
	// are the real ones, and StandInCert (DER) the certificate the sandbox holds in their
	// place; such a stand-in has no StandIn or Real.
	ClientCert, ClientKey, StandInCert []byte
}

// Verify is how the real host's certificate is verified: with Roots (PEM) alone, if given,
// and for ServerName, if given, instead of the host's name.
type Verify struct {
	Roots      []byte
	ServerName string
}

// maxStandIns bounds the secrets one login's files may hold.
const maxStandIns = 64

// makeStandIns is what each login's stand-in mode does to its copy.
func (c *copier) makeStandIns(e Entry, src, dst string, res *Result) ([]hosts.Entry, error) {
	switch e.Name {
	case "kubectl":
		return c.kubeStandIns(src, dst, res)
	case "gh":
		return c.ghStandIns(dst, res)
	case "npm":
		return c.npmStandIns(dst, res)
	case "docker":
		return c.dockerStandIns(dst, res)
	case "aws-credentials":
		return c.awsStandIns(dst, res)
	case "terraform":
		return c.terraformStandIns(dst, res)
	}
	return nil, fmt.Errorf("%s cannot be a stand-in; share it by copying it (secrets = \"copy\")", e.Key)
}

// ghStandIns replaces every token of the copy's hosts.yml (filled in from the keychain
// already) with a stand-in. github.com's token is bound to api.github.com (gh's API) and
// github.com (git over https, through gh's credential helper); an Enterprise host's to the
// host itself, which serves its API under /api/v3. gh's own requests go to the session's
// socket of plain HTTP for https sites (Options.HTTPSocket, named by http_unix_socket in
// the copy's config.yml), where OpenWorker speaks TLS to the host: gh, a Go program, reads
// no SSL_CERT_FILE on a Mac and would not trust OpenWorker's certificate authority there.
// git, which gh's credential helper gives the stand-in, reads GIT_SSL_CAINFO.
func (c *copier) ghStandIns(dir string, res *Result) ([]hosts.Entry, error) {
	path := filepath.Join(dir, "hosts.yml")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// The copy could hold a token that cannot be found: it must not stay.
		return nil, c.dropCopy(dir, "hosts.yml is not valid YAML ("+err.Error()+"), so its tokens cannot be replaced by stand-ins; nothing of ~/.config/gh was given to the session")
	}
	root := yamlRoot(&doc)
	var added []hosts.Entry
	n := 0
	if root.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(root.Content); i += 2 {
			host := strings.ToLower(root.Content[i].Value)
			bound := []string{host + ":443"}
			if host == "github.com" {
				bound = []string{"api.github.com:443", "github.com:443"}
			}
			var targets []hosts.Entry
			for _, b := range bound {
				h, err := hosts.Parse(b)
				if err != nil || h.Wildcard {
					c.cur.Notes = append(c.cur.Notes, "hosts.yml names "+strconv.Quote(host)+", which is not a host; its token was left out")
					targets = nil
					break
				}
				targets = append(targets, h)
			}
			// A host's own http_unix_socket would send gh past the session's socket.
			dropKey(root.Content[i+1], "http_unix_socket")
			for _, tok := range yamlValues(root.Content[i+1], "oauth_token") {
				if tok.Value == "" || strings.HasPrefix(tok.Value, "$") {
					continue
				}
				if targets == nil {
					tok.Value = ""
					continue
				}
				if n++; n > maxStandIns {
					return nil, c.dropCopy(dir, "hosts.yml holds more than "+strconv.Itoa(maxStandIns)+" tokens")
				}
				s, err := c.newStandIn("gh", tok.Value, targets, res)
				if err != nil {
					return nil, err
				}
				tok.Value, tok.Style = s, 0
				for _, t := range targets {
					if !slices.Contains(added, t) {
						added = append(added, t)
					}
				}
			}
		}
	}
	out, err := ghYAML(&doc)
	if err != nil {
		return nil, err
	}
	if err := writeCopy(path, out); err != nil {
		return nil, err
	}
	if len(added) > 0 && c.o.HTTPSocket != "" {
		if err := ghSocket(filepath.Join(dir, "config.yml"), c.o.HTTPSocket); err != nil {
			return nil, c.dropCopy(dir, "gh's config.yml could not be pointed at the session's socket ("+err.Error()+"), so gh inside could not use its stand-ins; nothing of ~/.config/gh was given to the session")
		}
		res.HTTPSocket = c.o.HTTPSocket
	}
	return added, c.noRealSecret(dir, res)
}

// ghSocket sets http_unix_socket in the copy's config.yml (made if there is none) to socket.
func ghSocket(path, socket string) error {
	var doc yaml.Node
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("it is not valid YAML: %w", err)
		}
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return errors.New("it is not a mapping of settings")
	}
	dropKey(root, "http_unix_socket")
	root.Content = append(root.Content,
		&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "http_unix_socket"},
		&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: socket})
	out, err := ghYAML(&doc)
	if err != nil {
		return err
	}
	return writeCopy(path, out)
}

// yamlRoot is the top node of a parsed YAML file: its document's content.
func yamlRoot(doc *yaml.Node) *yaml.Node {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		return doc.Content[0]
	}
	return doc
}

// dropKey removes key from the mapping n, wherever it is said.
func dropKey(n *yaml.Node, key string) {
	if n.Kind != yaml.MappingNode {
		return
	}
	kept := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != key {
			kept = append(kept, n.Content[i], n.Content[i+1])
		}
	}
	n.Content = kept
}

// yamlValues are the scalar values of key anywhere under n (a host's oauth_token, and each
// user's under users: in newer hosts.yml files).
func yamlValues(n *yaml.Node, key string) []*yaml.Node {
	var out []*yaml.Node
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == key && v.Kind == yaml.ScalarNode {
				out = append(out, v)
				continue
			}
			out = append(out, yamlValues(v, key)...)
		}
	}
	if n.Kind == yaml.SequenceNode {
		for _, c := range n.Content {
			out = append(out, yamlValues(c, key)...)
		}
	}
	return out
}

// npmStandIns replaces each registry's _authToken in the copy of .npmrc with a stand-in bound
// to that registry's host. A secret that cannot be a stand-in (_auth, _password: a user's
// password, which npm sends in Basic; certificates' keys) is taken out of the copy, and said.
func (c *copier) npmStandIns(path string, res *Result) ([]hosts.Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(data), "\n")
	registry := "https://registry.npmjs.org/"
	for _, l := range lines {
		if k, v, ok := npmSetting(l); ok && k == "registry" {
			registry = v
		}
	}
	var added []hosts.Entry
	n := 0
	for i, l := range lines {
		k, v, ok := npmSetting(l)
		if !ok {
			continue
		}
		scope, name := "", k
		if j := strings.LastIndex(k, ":"); j >= 0 && strings.HasPrefix(k, "//") {
			scope, name = k[:j], k[j+1:]
		}
		switch name {
		case "_authToken":
		case "_auth", "_password", "keyfile", "key":
			lines[i] = ""
			c.cur.Notes = append(c.cur.Notes, "the .npmrc setting "+k+" was left out of the copy: only an _authToken can be a stand-in (share npm by copying it to use this one)")
			continue
		default:
			continue
		}
		if strings.Contains(v, "${") {
			continue // a variable of the person's environment, which the sandbox's has not
		}
		where := registry
		if scope != "" {
			where = "https:" + scope + "/"
		}
		target, why := npmTarget(where, lines)
		if why != "" {
			lines[i] = ""
			c.cur.Notes = append(c.cur.Notes, "the .npmrc token for "+scope+" was left out of the copy: "+why)
			continue
		}
		if n++; n > maxStandIns {
			return nil, c.dropCopy(path, ".npmrc holds more than "+strconv.Itoa(maxStandIns)+" tokens")
		}
		s, err := c.newStandIn("npm", v, []hosts.Entry{target}, res)
		if err != nil {
			return nil, err
		}
		lines[i] = strings.Replace(l, v, s, 1)
		if !slices.Contains(added, target) {
			added = append(added, target)
		}
	}
	if err := writeCopy(path, []byte(strings.Join(lines, ""))); err != nil {
		return nil, err
	}
	return added, c.noRealSecret(path, res)
}

// npmSetting reads one .npmrc line as key = value ("" for comments and sections).
func npmSetting(line string) (string, string, bool) {
	l := strings.TrimSpace(line)
	if l == "" || l[0] == '#' || l[0] == ';' || l[0] == '[' {
		return "", "", false
	}
	k, v, ok := strings.Cut(l, "=")
	if !ok {
		return "", "", false
	}
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		v = v[1 : len(v)-1]
	}
	return strings.TrimSpace(k), v, true
}

// npmTarget is the host:port an npm token for registry URL where goes to, or why a stand-in
// cannot stand for it there: a registry npm reaches over plain http would get the stand-in
// unreplaced.
func npmTarget(where string, lines []string) (hosts.Entry, string) {
	u, err := url.Parse(where)
	if err != nil || u.Host == "" {
		return hosts.Entry{}, strconv.Quote(where) + " is not a registry's address"
	}
	for _, l := range lines {
		if k, v, ok := npmSetting(l); ok && (k == "registry" || strings.HasSuffix(k, ":registry")) {
			if r, err := url.Parse(v); err == nil && r.Host == u.Host && r.Scheme == "http" {
				return hosts.Entry{}, "npm reaches " + u.Host + " over http://, where a stand-in would travel as it is"
			}
		}
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	e, err := hosts.Parse(net.JoinHostPort(u.Hostname(), port))
	if err != nil || e.Wildcard {
		return hosts.Entry{}, u.Host + " is not a host"
	}
	return e, ""
}

// newStandIn makes a stand-in for real, bound to targets, and records it.
func (c *copier) newStandIn(login, real string, targets []hosts.Entry, res *Result) (string, error) {
	for _, s := range res.StandIns {
		if s.Real == real && s.Login == login {
			// The same token for another host: one stand-in, bound to both.
			for _, t := range targets {
				if !slices.Contains(s.Hosts, t) {
					s.Hosts = append(s.Hosts, t)
				}
			}
			res.setStandIn(s)
			return s.StandIn, nil
		}
	}
	s, err := MakeStandIn(real)
	if err != nil {
		return "", err
	}
	res.StandIns = append(res.StandIns, StandIn{Login: login, Hosts: slices.Clone(targets), StandIn: s, Real: real})
	return s, nil
}

func (r *Result) setStandIn(s StandIn) {
	for i := range r.StandIns {
		if r.StandIns[i].StandIn == s.StandIn {
			r.StandIns[i] = s
		}
	}
}

// noRealSecret looks through every file of the copy at root for a real secret, which must not
// be there in any form the copy could hold it: if one is, the copy is taken away.
func (c *copier) noRealSecret(root string, res *Result) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range res.StandIns {
			if s.Real != "" && bytes.Contains(b, []byte(s.Real)) || s.Token != "" && bytes.Contains(b, []byte(s.Token)) || len(s.ClientKey) > 0 && (bytes.Contains(b, s.ClientKey) || bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString(s.ClientKey)))) {
				return c.dropCopy(root, c.show(p)+" still holds a secret of the "+s.Login+" login after its stand-ins were written")
			}
		}
		return nil
	})
}

// dropCopy removes a copy that could hold a real secret, and says why: a stand-in login
// gives the session its files with stand-ins, or nothing.
func (c *copier) dropCopy(path, why string) error {
	if err := os.RemoveAll(path); err != nil {
		return err
	}
	return errStandIn{why}
}

type errStandIn struct{ why string }

func (e errStandIn) Error() string { return e.why }

// Alphabets a stand-in's characters are drawn from, by what the real secret's are.
const (
	digits    = "0123456789"
	hexLower  = digits + "abcdef"
	hexUpper  = digits + "ABCDEF"
	alnum     = digits + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	maxPrefix = 12 // gho_, ghp_, github_pat_, npm_, glpat-
)

// MakeStandIn returns a random stand-in of real's shape: its prefix (lowercase letters and
// '_' or '-', up to 12 bytes: gho_, github_pat_, npm_) kept, each other letter or digit
// replaced by a random one of the same alphabet (hex stays hex), every other byte (-, _, .)
// kept where it is.
func MakeStandIn(real string) (string, error) {
	if real == "" {
		return "", errors.New("no secret to make a stand-in for")
	}
	// Terraform Cloud's tokens are ID.atlasv1.SECRET: the middle names the kind, and stays.
	if l, r, ok := strings.Cut(real, ".atlasv1."); ok && l != "" && r != "" {
		a, err := MakeStandIn(l)
		if err != nil {
			return "", err
		}
		b, err := MakeStandIn(r)
		return a + ".atlasv1." + b, err
	}
	prefix := 0
	for i := 0; i < len(real) && i < maxPrefix; i++ {
		ch := real[i]
		if ch == '_' || ch == '-' {
			prefix = i + 1
			continue
		}
		if ch < 'a' || ch > 'z' {
			break
		}
	}
	body := real[prefix:]
	alphabet := alnum
	switch {
	case onlyOf(body, hexLower):
		alphabet = hexLower
	case onlyOf(body, hexUpper):
		alphabet = hexUpper
	}
	for range 8 {
		b := []byte(real)
		for i := prefix; i < len(b); i++ {
			if strings.IndexByte(alnum, b[i]) < 0 {
				continue // separators keep their places
			}
			n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
			if err != nil {
				return "", err
			}
			b[i] = alphabet[n.Int64()]
		}
		if s := string(b); s != real && !strings.Contains(real, s) && !strings.Contains(s, real) {
			return s, nil
		}
	}
	return "", errors.New("the secret is too short for a stand-in that differs from it")
}

// onlyOf says whether every letter or digit of s is in alphabet (and s has some).
func onlyOf(s, alphabet string) bool {
	seen := false
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(alnum, s[i]) < 0 {
			continue
		}
		if strings.IndexByte(alphabet, s[i]) < 0 {
			return false
		}
		seen = true
	}
	return seen
}
