package credentials

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/tstest"
	yaml "go.yaml.in/yaml/v3"
)

func TestMakeStandInKeepsTheShape(t *testing.T) {
	cases := []struct{ name, real, prefix, alphabet string }{
		{"gh_oauth", "gho_16C7e42F292c6912E7710c838347Ae178B4a", "gho_", alnum},
		{"gh_classic_pat", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "ghp_", alnum},
		{"gh_fine_grained", "github_pat_11ABCDEFG0abcdefghijkl_MNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyzABCDE", "github_pat_", alnum},
		{"npm", "npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_", alnum},
		{"gh_legacy_hex", "0123456789abcdef0123456789abcdef01234567", "", hexLower},
		{"npm_legacy_uuid", "0a1b2c3d-4e5f-6789-abcd-ef0123456789", "", hexLower},
		{"upper_hex", "DEADBEEF0123456789ABCDEF", "", hexUpper},
		{"gitlab", "glpat-xXxXxXxXxXxXxXxXxXxX", "glpat-", alnum},
		{"terraform", "AbCdEfGhIjKlMn.atlasv1.OpQrStUvWxYz0123456789abcdefghijklmnopqrstuvwxyz", "", alnum},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := MakeStandIn(c.real)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := MakeStandIn(c.real)
			if strings.Contains(c.real, ".atlasv1.") && !strings.Contains(s, ".atlasv1.") {
				t.Fatalf("stand-in %q lost the kind of token %q says it is", s, c.real)
			}
			if s == c.real || s == again || len(s) != len(c.real) || !strings.HasPrefix(s, c.prefix) {
				t.Fatalf("stand-in %q (again %q) for %q, want the same length and prefix %q, and random", s, again, c.real, c.prefix)
			}
			for i := len(c.prefix); i < len(s); i++ {
				r, g := c.real[i], s[i]
				if strings.IndexByte(alnum, r) < 0 {
					if g != r {
						t.Fatalf("byte %d: %q became %q; a separator keeps its place", i, r, g)
					}
					continue
				}
				if strings.IndexByte(c.alphabet, g) < 0 {
					t.Fatalf("byte %d: %q is not of the secret's alphabet %q", i, g, c.alphabet)
				}
			}
		})
	}
	if _, err := MakeStandIn(""); err == nil {
		t.Error("a stand-in was made for no secret")
	}
}

// scanFor fails if any file under root holds secret.
func scanFor(t *testing.T, root, secret string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the real secret %q", p, secret)
			}
		}
		return nil
	})
}

// wantNotes fails unless the first entry's notes say each of want.
func wantNotes(t *testing.T, res *Result, want ...string) {
	t.Helper()
	notes := strings.Join(res.Entries[0].Notes, "\n")
	for _, n := range want {
		if !strings.Contains(notes, n) {
			t.Errorf("notes lack %q:\n%s", n, notes)
		}
	}
}

// wantHosts fails unless the session's hosts hold each of want.
func wantHosts(t *testing.T, res *Result, want ...string) {
	t.Helper()
	for _, h := range want {
		if !slices.ContainsFunc(res.Hosts, func(e hosts.Entry) bool { return e.String() == h }) {
			t.Errorf("the session's hosts %v lack %s", hostList(res.Hosts), h)
		}
	}
}

func hostList(es []hosts.Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.String())
	}
	return strings.Join(out, " ")
}

func TestGhStandIns(t *testing.T) {
	const real = "gho_inthefile0123456789"
	cases := []struct {
		name, hostsYml, keychain string
		bound                    map[string]string // real -> hosts
	}{
		{"token_in_the_file", hostsWithToken, "", map[string]string{real: "api.github.com:443 github.com:443"}},
		{"token_in_the_keychain", hostsKeychain, "gho_fromthekeychain42", map[string]string{"gho_fromthekeychain42": "api.github.com:443 github.com:443"}},
		{"enterprise", hostsWithToken + "ghe.example.com:\n    oauth_token: ghp_enterprise0123456789AB\n    user: me\n", "",
			map[string]string{real: "api.github.com:443 github.com:443", "ghp_enterprise0123456789AB": "ghe.example.com:443"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home, sandbox := t.TempDir(), t.TempDir()
			write(t, filepath.Join(home, ".config", "gh", "hosts.yml"), c.hostsYml, 0o600)
			write(t, filepath.Join(home, ".config", "gh", "config.yml"), "git_protocol: https\n", 0o600)
			gh := noGh(t)
			if c.keychain != "" {
				gh = func(host string) (string, error) { return c.keychain + "\n", nil }
			}
			res, err := Copy(Options{UserHome: home, SandboxHome: sandbox, GhToken: gh}, entries(t, config.Credential{Name: "gh", Secrets: config.SecretsStandIn}))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.StandIns) != len(c.bound) {
				t.Fatalf("stand-ins %+v, want %d", res.StandIns, len(c.bound))
			}
			copied, _ := os.ReadFile(filepath.Join(sandbox, ".config", "gh", "hosts.yml"))
			for _, s := range res.StandIns {
				if want, ok := c.bound[s.Real]; !ok || hostList(s.Hosts) != want || s.Login != "gh" {
					t.Errorf("stand-in for %q bound to %q, want %q", s.Real, hostList(s.Hosts), want)
				}
				if len(s.StandIn) != len(s.Real) || s.StandIn[:4] != s.Real[:4] || !bytes.Contains(copied, []byte("oauth_token: "+s.StandIn)) {
					t.Errorf("the copy does not hold %q's stand-in %q:\n%s", s.Real, s.StandIn, copied)
				}
				scanFor(t, sandbox, s.Real)
			}
			if res.Entries[0].Secrets != "stand-in" || !strings.Contains(strings.Join(res.Entries[0].Notes, "\n"), "the secrets stay outside") {
				t.Errorf("entry %+v", res.Entries[0])
			}
			if !strings.Contains(string(copied), "user: octocat") || !strings.Contains(string(copied), "users:") {
				t.Errorf("the rest of hosts.yml was not kept:\n%s", copied)
			}
			if orig, _ := os.ReadFile(filepath.Join(home, ".config", "gh", "hosts.yml")); string(orig) != c.hostsYml {
				t.Errorf("the original changed:\n%s", orig)
			}
		})
	}
}

// gh's own requests are sent to the session's socket of plain HTTP for https sites: the
// copy's config.yml names it, keeping the person's other settings, and a host's own socket
// in hosts.yml is left out. Without a socket to name, config.yml is as it was.
func TestGhStandInSendsGhToTheSessionsSocket(t *testing.T) {
	for _, c := range []struct {
		name, config, socket string
		want                 []string
	}{
		{"config_kept", "git_protocol: https\nhttp_unix_socket: /run/theirs.sock\n", "/tmp/s/https.sock", []string{"git_protocol: https", "http_unix_socket: /tmp/s/https.sock"}},
		{"no_config", "", "/tmp/s/https.sock", []string{"http_unix_socket: /tmp/s/https.sock"}},
		{"no_socket", "git_protocol: ssh\n", "", []string{"git_protocol: ssh"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			home, sandbox := t.TempDir(), t.TempDir()
			write(t, filepath.Join(home, ".config", "gh", "hosts.yml"), hostsWithToken+"ghe.example.com:\n    oauth_token: ghp_enterprise0123456789AB\n    http_unix_socket: /run/ghe.sock\n", 0o600)
			if c.config != "" {
				write(t, filepath.Join(home, ".config", "gh", "config.yml"), c.config, 0o600)
			}
			res, err := Copy(Options{UserHome: home, SandboxHome: sandbox, GhToken: noGh(t), HTTPSocket: c.socket},
				entries(t, config.Credential{Name: "gh", Secrets: config.SecretsStandIn}))
			if err != nil {
				t.Fatal(err)
			}
			cfg, _ := os.ReadFile(filepath.Join(sandbox, ".config", "gh", "config.yml"))
			hostsYml, _ := os.ReadFile(filepath.Join(sandbox, ".config", "gh", "hosts.yml"))
			if res.HTTPSocket != c.socket {
				t.Errorf("the socket to serve: %q, want %q", res.HTTPSocket, c.socket)
			}
			for _, w := range c.want {
				if !strings.Contains(string(cfg), w) {
					t.Errorf("config.yml lacks %q:\n%s", w, cfg)
				}
			}
			if c.socket != "" && strings.Count(string(cfg), "http_unix_socket") != 1 || strings.Contains(string(hostsYml), "http_unix_socket") {
				t.Errorf("config.yml:\n%s\nhosts.yml:\n%s", cfg, hostsYml)
			}
		})
	}
}

// Copy mode is what it was: the token is in the copy.
func TestGhCopyModeCopiesTheToken(t *testing.T) {
	home, sandbox := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".config", "gh", "hosts.yml"), hostsWithToken, 0o600)
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox, GhToken: noGh(t)}, entries(t, config.Credential{Name: "gh", Secrets: config.SecretsCopy}))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(sandbox, ".config", "gh", "hosts.yml")); string(b) != hostsWithToken || len(res.StandIns) != 0 || res.Entries[0].Secrets != "copy" {
		t.Fatalf("copy mode: %+v\n%s", res.Entries[0], b)
	}
}

// A hosts.yml whose tokens cannot be found is not given to the session at all.
func TestGhStandInOfAnUnreadableFileGivesNothing(t *testing.T) {
	home, sandbox := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".config", "gh", "hosts.yml"), "github.com: [oauth_token: gho_broken0123456789\n", 0o600)
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox, GhToken: noGh(t)}, entries(t, config.Credential{Name: "gh", Secrets: config.SecretsStandIn}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(sandbox, ".config", "gh")); err == nil {
		t.Fatal("the copy is still there")
	}
	cp := res.Entries[0]
	if cp.Copy != "" || len(res.StandIns) != 0 || res.Vars["GH_CONFIG_DIR"] != "" || len(res.Hosts) != 0 ||
		!strings.Contains(strings.Join(cp.LeftOut, "\n"), "~/.config/gh was not given to the session: hosts.yml is not valid YAML") {
		t.Fatalf("%+v vars %v hosts %v", cp, res.Vars, res.Hosts)
	}
}

func TestNpmStandIns(t *testing.T) {
	const (
		private = "npm_PRIVATEprivate0123456789abcdefghij"
		public  = "npm_PUBLICpublic0123456789abcdefghijkl"
		plain   = "npm_PLAINplain0123456789abcdefghijklmn"
	)
	npmrc := strings.Join([]string{
		"; my registries",
		"registry=https://registry.example.test/",
		"@corp:registry=https://npm.corp.example:8443/api/",
		"//registry.example.test/:_authToken=" + private,
		"//npm.corp.example:8443/api/:_authToken=\"" + public + "\"",
		"//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
		"@old:registry=http://old.example/",
		"//old.example/:_authToken=" + plain,
		"//registry.example.test/:_password=c2VjcmV0",
		"always-auth=true",
		"",
	}, "\n")
	home, sandbox := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".npmrc"), npmrc, 0o600)
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox}, entries(t, config.Credential{Name: "npm", Secrets: config.SecretsStandIn}))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(sandbox, ".npmrc"))
	copied := string(b)
	want := map[string]string{private: "registry.example.test:443", public: "npm.corp.example:8443"}
	if len(res.StandIns) != 2 {
		t.Fatalf("stand-ins %+v", res.StandIns)
	}
	for _, s := range res.StandIns {
		if hostList(s.Hosts) != want[s.Real] || s.Login != "npm" || !strings.HasPrefix(s.StandIn, "npm_") || len(s.StandIn) != len(s.Real) || !strings.Contains(copied, s.StandIn) {
			t.Errorf("stand-in %+v", s)
		}
	}
	for _, secret := range []string{private, public, plain, "c2VjcmV0"} {
		scanFor(t, sandbox, secret)
	}
	for _, kept := range []string{"registry=https://registry.example.test/", "${NPM_TOKEN}", "always-auth=true", "; my registries"} {
		if !strings.Contains(copied, kept) {
			t.Errorf("the copy lost %q:\n%s", kept, copied)
		}
	}
	wantNotes(t, res, "_password was left out", "the .npmrc token for //old.example/ was left out of the copy: npm reaches old.example over http://")
	wantHosts(t, res, "registry.example.test:443", "npm.corp.example:8443", "registry.npmjs.org:443")
}

func TestDockerStandIns(t *testing.T) {
	const (
		hub      = "dckr_pat_HUBhub0123456789abcdefghijk"
		ghcr     = "ghp_GHCRghcr0123456789abcdefghijklmnop"
		own      = "s3cretOWNregistry0123456789"
		plain    = "PLAINplain0123456789abcdef"
		identity = "IDENTITYidentity0123456789"
		fromHelp = "HELPERhelper0123456789abcdef"
		bearer   = "REGISTRYTOKENregistry0123456789"
	)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	cfg := `{
	"auths": {
		"https://index.docker.io/v1/": {"auth": "` + b64("alice:"+hub) + `"},
		"ghcr.io": {"auth": "` + b64("alice:"+ghcr) + `"},
		"https://registry.example.test:5000": {"auth": "` + b64("bob:"+own) + `", "email": "bob@example.com"},
		"http://plain.example.test": {"auth": "` + b64("carol:"+plain) + `"},
		"quay.io": {"identitytoken": "` + identity + `"},
		"helped.example.test": {},
		"tokened.example.test": {"registrytoken": "` + bearer + `"}
	},
	"credHelpers": {"helped.example.test": "secretservice"},
	"psFormat": "table {{.ID}}"
}`
	home, sandbox := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".docker", "config.json"), cfg, 0o600)
	var asked []string
	helper := func(name, server string) (string, string, error) {
		asked = append(asked, name+" "+server)
		return "dave", fromHelp, nil
	}
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox, DockerCredential: helper}, entries(t, config.Credential{Name: "docker", Secrets: config.SecretsStandIn}))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(asked, ",") != "secretservice helped.example.test" {
		t.Errorf("helpers asked: %q", asked)
	}
	b, _ := os.ReadFile(filepath.Join(sandbox, ".docker", "config.json"))
	var copied struct {
		Auths       map[string]map[string]string `json:"auths"`
		CredHelpers map[string]string            `json:"credHelpers"`
		PsFormat    string                       `json:"psFormat"`
	}
	if err := json.Unmarshal(b, &copied); err != nil {
		t.Fatalf("the copy is not JSON: %v\n%s", err, b)
	}
	if copied.CredHelpers != nil || copied.PsFormat != "table {{.ID}}" {
		t.Errorf("the copy's settings: %s", b)
	}
	want := map[string]struct{ user, hosts, key string }{
		hub:      {"alice", "auth.docker.io:443 registry-1.docker.io:443 index.docker.io:443", "https://index.docker.io/v1/"},
		ghcr:     {"alice", "ghcr.io:443", "ghcr.io"},
		own:      {"bob", "registry.example.test:5000", "https://registry.example.test:5000"},
		fromHelp: {"dave", "helped.example.test:443", "helped.example.test"},
		bearer:   {"", "tokened.example.test:443", "tokened.example.test"},
	}
	if len(res.StandIns) != len(want) {
		t.Fatalf("stand-ins %+v", res.StandIns)
	}
	for _, s := range res.StandIns {
		w, ok := want[s.Real]
		if !ok || s.Login != "docker" || hostList(s.Hosts) != w.hosts || len(s.StandIn) != len(s.Real) || s.StandIn == s.Real {
			t.Errorf("stand-in %+v, want hosts %q", s, w.hosts)
			continue
		}
		entry := copied.Auths[w.key]
		if w.user == "" {
			if entry["registrytoken"] != s.StandIn {
				t.Errorf("%s in the copy: %v, want the registry token's stand-in %s", w.key, entry, s.StandIn)
			}
			continue
		}
		if entry["auth"] != b64(w.user+":"+s.StandIn) {
			t.Errorf("%s in the copy: %v, want %s's login with the stand-in %s", w.key, entry, w.user, s.StandIn)
		}
	}
	if copied.Auths["https://registry.example.test:5000"]["email"] != "bob@example.com" {
		t.Errorf("the copy lost a login's other fields: %s", b)
	}
	for _, gone := range []string{"http://plain.example.test", "quay.io"} {
		if _, ok := copied.Auths[gone]; ok {
			t.Errorf("the copy still has %s: %s", gone, b)
		}
	}
	for _, secret := range []string{hub, ghcr, own, plain, identity, fromHelp, bearer, b64("carol:" + plain)} {
		scanFor(t, sandbox, secret)
	}
	wantNotes(t, res,
		"the login for http://plain.example.test was left out of the copy: it is reached over http://",
		"the login for quay.io was left out of the copy: an identity token")
	wantHosts(t, res, "auth.docker.io:443", "registry.example.test:5000", "helped.example.test:443")
}

// A credential helper that fails, or a config.json that is not JSON, gives the session no
// login it could not stand in for, and says why.
func TestDockerStandInGivesNothingItCannotStandIn(t *testing.T) {
	home := t.TempDir()
	write(t, filepath.Join(home, ".docker", "config.json"), `{"auths": {"ghcr.io": {}}, "credsStore": "desktop"}`, 0o600)
	sandbox := t.TempDir()
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox, DockerCredential: func(name, server string) (string, string, error) {
		return "", "", errors.New("docker-credential-desktop is not on PATH")
	}}, entries(t, config.Credential{Name: "docker", Secrets: config.SecretsStandIn}))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(sandbox, ".docker", "config.json"))
	if strings.Contains(string(b), "credsStore") || strings.Contains(string(b), `"auth"`) {
		t.Errorf("copy: %s", b)
	}
	if notes := strings.Join(res.Entries[0].Notes, "\n"); !strings.Contains(notes, "no login for ghcr.io from docker-credential-desktop (docker-credential-desktop is not on PATH)") {
		t.Errorf("notes: %s", notes)
	}

	write(t, filepath.Join(home, ".docker", "config.json"), `{"auths": {"ghcr.io": {"auth": "`, 0o600)
	sandbox = t.TempDir()
	res, err = Copy(Options{UserHome: home, SandboxHome: sandbox}, entries(t, config.Credential{Name: "docker", Secrets: config.SecretsStandIn}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sandbox, ".docker", "config.json")); err == nil {
		t.Error("a config.json that is not JSON was copied in stand-in mode")
	}
	if why := res.Entries[0].LeftOut; !strings.Contains(strings.Join(why, "\n"), "~/.docker/config.json was not given to the session: config.json is not valid JSON") {
		t.Errorf("left out: %q", why)
	}
}

// A kubeconfig's bearer tokens (inline or in a tokenFile), basic passwords and client
// certificates (inline or in files) become stand-ins bound to the servers of the clusters
// their contexts pair them with; those clusters' copies trust OpenWorker's authority alone,
// while the proxy verifies each server with the cluster's own authority and tls-server-name.
// A certificate without its key, and a token for a cluster reached without verifying it,
// are left out and said; exec users and their clusters stay as they are.
func TestKubeStandIns(t *testing.T) {
	carol, grace := tstest.ClientCert(t, "carol", nil, false), tstest.ClientCert(t, "grace", nil, false)
	carolCertPEM, carolKeyPEM, graceCertPEM, graceKeyPEM := carol.CertPEM, carol.KeyPEM, grace.CertPEM, grace.KeyPEM
	const (
		aliceReal  = "eyJhbGciOiJSUzI1NiJ9.ALICEalice0123456789"
		bobReal    = "sha256~BOBbob0123456789abcdefghijklmnopqrstuv"
		eveReal    = "EVEeve0123456789abcdefghijkl"
		heidiKey   = "HEIDIKEYheidikey0123456789"
		frankPass  = "FRANKfrank0123456789xyz"
		ivanReal   = "IVANivan0123456789abcdefghijkl"
		machinePEM = "-----BEGIN CERTIFICATE-----\nTUFDSElORQ==\n-----END CERTIFICATE-----\n"
		prodPEM    = "-----BEGIN CERTIFICATE-----\nUFJPRA==\n-----END CERTIFICATE-----\n"
		stagingPEM = "-----BEGIN CERTIFICATE-----\nU1RBR0lORw==\n-----END CERTIFICATE-----\n"
	)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	kubeconfig := `apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod
  cluster:
    server: https://kube.example.test:6443
    certificate-authority-data: ` + b64(prodPEM) + `
    tls-server-name: kubernetes.default
- name: staging
  cluster:
    server: https://10.1.2.3
    certificate-authority: ca/staging.crt
- name: legacy
  cluster:
    server: https://legacy.example.test
    insecure-skip-tls-verify: true
- name: cloud
  cluster:
    server: https://cloud.example.test
    certificate-authority-data: ` + b64("CLOUD CA") + `
users:
- name: alice
  user:
    token: ` + aliceReal + `
- name: bob
  user:
    tokenFile: tokens/bob
- name: carol
  user:
    client-certificate-data: CAROLCERT
    client-key-data: CAROLKEY
- name: grace
  user:
    client-certificate: grace.crt
    client-key: keys/grace.key
- name: heidi
  user:
    client-certificate-data: ` + b64("HEIDI CERT") + `
    client-key-data: ` + b64(heidiKey) + `
- name: dave
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: aws
      args: [eks, get-token]
- name: eve
  user:
    token: ` + eveReal + `
- name: frank
  user:
    username: frank
    password: ` + frankPass + `
- name: ivan
  user:
    token: ` + ivanReal + `
    client-certificate-data: ` + b64("IVAN CERT") + `
    client-key-data: ` + b64(heidiKey) + `
contexts:
- name: prod
  context: {cluster: prod, user: alice}
- name: staging
  context: {cluster: staging, user: bob}
- name: prod-admin
  context: {cluster: prod, user: carol}
- name: legacy
  context: {cluster: legacy, user: eve}
- name: cloud
  context: {cluster: cloud, user: dave}
- name: staging-basic
  context: {cluster: staging, user: frank}
- name: staging-grace
  context: {cluster: staging, user: grace}
- name: prod-heidi
  context: {cluster: prod, user: heidi}
- name: prod-ivan
  context: {cluster: prod, user: ivan}
`
	home, sandbox := t.TempDir(), t.TempDir()
	kubeconfig = strings.NewReplacer("CAROLCERT", b64(string(carolCertPEM)), "CAROLKEY", b64(string(carolKeyPEM))).Replace(kubeconfig)
	write(t, filepath.Join(home, ".kube", "config"), kubeconfig, 0o600)
	write(t, filepath.Join(home, ".kube", "ca", "staging.crt"), stagingPEM, 0o644)
	write(t, filepath.Join(home, ".kube", "grace.crt"), string(graceCertPEM), 0o644)
	write(t, filepath.Join(home, ".kube", "keys", "grace.key"), string(graceKeyPEM), 0o600)
	write(t, filepath.Join(home, ".kube", "tokens", "bob"), bobReal+"\n", 0o600)
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox, StandInCA: func() ([]byte, error) { return []byte(machinePEM), nil }},
		entries(t, config.Credential{Name: "kubectl", Secrets: config.SecretsStandIn}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ hosts, roots, name string }{
		aliceReal: {"kube.example.test:6443", prodPEM, "kubernetes.default"},
		bobReal:   {"10.1.2.3:443", stagingPEM, ""},
		frankPass: {"10.1.2.3:443", stagingPEM, ""},
		ivanReal:  {"kube.example.test:6443", prodPEM, "kubernetes.default"},
	}
	certs := map[string]struct{ hosts, roots string }{
		string(carolKeyPEM): {"kube.example.test:6443", prodPEM},
		string(graceKeyPEM): {"10.1.2.3:443", stagingPEM},
	}
	if len(res.StandIns) != len(want)+len(certs) {
		t.Fatalf("stand-ins %+v", res.StandIns)
	}
	stand := map[string]string{}
	standCert := map[string][]byte{}
	for _, s := range res.StandIns {
		if s.ClientKey != nil {
			w, ok := certs[string(s.ClientKey)]
			if !ok || s.Login != "kubectl" || hostList(s.Hosts) != w.hosts || string(s.Verify[w.hosts].Roots) != w.roots || s.StandIn != "" || s.Real != "" {
				t.Errorf("certificate stand-in for %s, want hosts %q", hostList(s.Hosts), w.hosts)
			}
			if _, err := tls.X509KeyPair(s.ClientCert, s.ClientKey); err != nil {
				t.Errorf("the real certificate and key kept: %v", err)
			}
			standCert[string(s.ClientKey)] = s.StandInCert
			continue
		}
		w, ok := want[s.Real]
		if !ok || s.Login != "kubectl" || hostList(s.Hosts) != w.hosts || len(s.StandIn) != len(s.Real) || s.StandIn == s.Real {
			t.Errorf("stand-in %+v, want hosts %q", s, w.hosts)
			continue
		}
		v := s.Verify[w.hosts]
		if string(v.Roots) != w.roots || v.ServerName != w.name {
			t.Errorf("%s is verified with %q as %q, want %q as %q", w.hosts, v.Roots, v.ServerName, w.roots, w.name)
		}
		stand[s.Real] = s.StandIn
	}
	b, _ := os.ReadFile(filepath.Join(sandbox, ".kube", "config"))
	var k struct {
		Clusters []struct {
			Name    string
			Cluster map[string]any
		}
		Users []struct {
			Name string
			User map[string]any
		}
		Contexts []any
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatalf("the copy is not YAML: %v\n%s", err, b)
	}
	if len(k.Contexts) != 9 {
		t.Errorf("the copy lost contexts:\n%s", b)
	}
	for _, c := range k.Clusters {
		switch c.Name {
		case "prod", "staging":
			if c.Cluster["certificate-authority-data"] != b64(machinePEM) || c.Cluster["certificate-authority"] != nil || c.Cluster["tls-server-name"] != nil {
				t.Errorf("cluster %s in the copy: %v, want OpenWorker's authority alone", c.Name, c.Cluster)
			}
		case "cloud":
			if c.Cluster["certificate-authority-data"] != b64("CLOUD CA") {
				t.Errorf("cluster cloud (an exec user's) was changed: %v", c.Cluster)
			}
		}
	}
	for _, u := range k.Users {
		switch u.Name {
		case "alice":
			if u.User["token"] != stand[aliceReal] {
				t.Errorf("alice: %v", u.User)
			}
		case "bob":
			if u.User["token"] != stand[bobReal] || u.User["tokenFile"] != nil {
				t.Errorf("bob: %v", u.User)
			}
		case "frank":
			if u.User["password"] != stand[frankPass] || u.User["username"] != "frank" {
				t.Errorf("frank: %v", u.User)
			}
		case "carol", "grace":
			key := carolKeyPEM
			if u.Name == "grace" {
				key = graceKeyPEM
			}
			certPEM, _ := base64.StdEncoding.DecodeString(fmt.Sprint(u.User["client-certificate-data"]))
			keyPEM, _ := base64.StdEncoding.DecodeString(fmt.Sprint(u.User["client-key-data"]))
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil || !bytes.Equal(pair.Certificate[0], standCert[string(key)]) || u.User["client-certificate"] != nil || u.User["client-key"] != nil {
				t.Errorf("%s in the copy: %v (%v), want the stand-in certificate and key inline", u.Name, u.User, err)
			}
		case "ivan":
			if len(u.User) != 1 || u.User["token"] != stand[ivanReal] {
				t.Errorf("ivan, whose certificate cannot be used, should keep his token as a stand-in alone: %v", u.User)
			}
		case "eve", "heidi":
			if len(u.User) != 0 {
				t.Errorf("%s kept %v", u.Name, u.User)
			}
		case "dave":
			if u.User["exec"] == nil {
				t.Errorf("dave lost his exec: %v", u.User)
			}
		}
	}
	for _, secret := range []string{aliceReal, bobReal, eveReal, heidiKey, b64(heidiKey), frankPass, ivanReal, string(carolKeyPEM), b64(string(carolKeyPEM)), string(graceKeyPEM)} {
		scanFor(t, sandbox, secret)
	}
	wantNotes(t, res,
		"the client certificate of the kubeconfig user heidi was left out of the copy: its certificate and key do not make a pair",
		"the client certificate of the kubeconfig user ivan was left out of the copy: its certificate and key do not make a pair",
		"the token of the kubeconfig user eve was left out of the copy: legacy is reached without verifying its certificate (insecure-skip-tls-verify)")
}

// ~/.aws/credentials: each profile's secret access key and session token become stand-ins
// of their shape, the access key's id stays (it names the key, and signs nothing); the
// proxy signs requests again with the real secret. A secret without its key's id is left
// out, and said.
func TestAWSStandIns(t *testing.T) {
	const (
		defaultSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
		tempSecret    = "TEMPtempTEMPtempTEMPtempTEMPtempTEMP+/12"
		tempToken     = "FwoGZXIvYXdzEBYaDHqa0AP1fRS3w0QeFCKzAVLr+/tokenTOKENtoken=="
		orphan        = "ORPHANorphanORPHANorphanORPHANorphan1234"
	)
	text := strings.Join([]string{
		"# work",
		"[default]",
		"aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
		"aws_secret_access_key = " + defaultSecret,
		"",
		"[temp]",
		"aws_access_key_id=ASIAIOSFODNN7EXAMPLE",
		"aws_secret_access_key=" + tempSecret,
		"aws_session_token = " + tempToken,
		"region = eu-west-1",
		"",
		"[broken]",
		"aws_secret_access_key = " + orphan,
		"",
	}, "\n")
	home, sandbox := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".aws", "credentials"), text, 0o600)
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox}, entries(t, config.Credential{Name: "aws-credentials", Secrets: config.SecretsStandIn}))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(sandbox, ".aws", "credentials"))
	copied := string(b)
	if len(res.StandIns) != 2 {
		t.Fatalf("stand-ins %+v", res.StandIns)
	}
	for _, s := range res.StandIns {
		wantToken := ""
		switch s.AccessKeyID {
		case "AKIAIOSFODNN7EXAMPLE":
			if s.Real != defaultSecret {
				t.Errorf("default's secret %q", s.Real)
			}
		case "ASIAIOSFODNN7EXAMPLE":
			if s.Real != tempSecret {
				t.Errorf("temp's secret %q", s.Real)
			}
			wantToken = tempToken
		default:
			t.Fatalf("stand-in for %q", s.AccessKeyID)
		}
		if s.Login != "aws-credentials" || hostList(s.Hosts) != "*.amazonaws.com:443" || len(s.StandIn) != len(s.Real) || s.StandIn == s.Real ||
			!strings.Contains(copied, "aws_secret_access_key"+map[bool]string{true: " = ", false: "="}[wantToken == ""]+s.StandIn+"\n") {
			t.Errorf("stand-in for %s: %+v\n%s", s.AccessKeyID, s, copied)
		}
		if s.Token != wantToken || wantToken != "" && (len(s.StandInToken) != len(wantToken) || s.StandInToken == wantToken || !strings.Contains(copied, "aws_session_token = "+s.StandInToken+"\n")) {
			t.Errorf("the token of %s: %q for %q", s.AccessKeyID, s.StandInToken, s.Token)
		}
	}
	for _, kept := range []string{"# work", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "aws_access_key_id=ASIAIOSFODNN7EXAMPLE", "region = eu-west-1", "[broken]"} {
		if !strings.Contains(copied, kept) {
			t.Errorf("the copy lost %q:\n%s", kept, copied)
		}
	}
	for _, secret := range []string{defaultSecret, tempSecret, tempToken, orphan} {
		scanFor(t, sandbox, secret)
	}
	wantNotes(t, res, "the secret access key of the profile broken was left out of the copy: the profile names no aws_access_key_id")
	wantHosts(t, res, "*.amazonaws.com:443")
}

// With AWS's login a stand-in, a kubeconfig's EKS clusters, whose users make their tokens
// with it (aws eks get-token, aws-iam-authenticator), are bound to it at their servers: the
// copy trusts OpenWorker's authority for them, and the proxy learns each cluster's name (the
// token's signature covers it) and its own authority. A cluster reached without verifying
// it is left as it is, and said.
func TestEKSStandIns(t *testing.T) {
	const eksPEM = "-----BEGIN CERTIFICATE-----\nRUtT\n-----END CERTIFICATE-----\n"
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	kubeconfig := `apiVersion: v1
kind: Config
clusters:
- name: arn:aws:eks:us-east-1:123456789012:cluster/demo
  cluster:
    server: https://ABC123.gr7.us-east-1.eks.amazonaws.com
    certificate-authority-data: ` + b64(eksPEM) + `
- name: old
  cluster:
    server: https://DEF456.yl4.us-west-2.eks.amazonaws.com
    insecure-skip-tls-verify: true
- name: kind
  cluster:
    server: https://kind.example.test:6443
    certificate-authority-data: ` + b64("KIND CA") + `
users:
- name: demo-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: aws
      args: [--region, us-east-1, eks, get-token, --cluster-name, demo]
- name: old-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: /usr/local/bin/aws-iam-authenticator
      args: [token, -i, old]
- name: kind-user
  user:
    exec:
      command: kind-token
contexts:
- name: demo
  context: {cluster: "arn:aws:eks:us-east-1:123456789012:cluster/demo", user: demo-user}
- name: old
  context: {cluster: old, user: old-user}
- name: kind
  context: {cluster: kind, user: kind-user}
`
	home, sandbox := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".kube", "config"), kubeconfig, 0o600)
	write(t, filepath.Join(home, ".aws", "credentials"), "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = SECRETsecretSECRETsecretSECRETsecret1234\n", 0o600)
	const machinePEM = "-----BEGIN CERTIFICATE-----\nTUFDSElORQ==\n-----END CERTIFICATE-----\n"
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox, StandInCA: func() ([]byte, error) { return []byte(machinePEM), nil }},
		entries(t, config.Credential{Name: "kubectl", Secrets: config.SecretsStandIn}, config.Credential{Name: "aws-credentials", Secrets: config.SecretsStandIn}))
	if err != nil {
		t.Fatal(err)
	}
	var eks []StandIn
	for _, s := range res.StandIns {
		if len(s.EKSClusters) > 0 {
			eks = append(eks, s)
		}
	}
	if len(eks) != 1 {
		t.Fatalf("EKS bindings %+v", eks)
	}
	s := eks[0]
	if s.Login != "aws-credentials" || s.AccessKeyID != "AKIAIOSFODNN7EXAMPLE" || hostList(s.Hosts) != "abc123.gr7.us-east-1.eks.amazonaws.com:443" ||
		!slices.Equal(s.EKSClusters, []string{"demo"}) || string(s.Verify["abc123.gr7.us-east-1.eks.amazonaws.com:443"].Roots) != eksPEM {
		t.Fatalf("the EKS binding: %+v", s)
	}
	b, _ := os.ReadFile(filepath.Join(sandbox, ".kube", "config"))
	copied := string(b)
	if !strings.Contains(copied, "certificate-authority-data: "+b64(machinePEM)) || strings.Contains(copied, b64(eksPEM)) || !strings.Contains(copied, b64("KIND CA")) ||
		!strings.Contains(copied, "insecure-skip-tls-verify: true") {
		t.Errorf("the kubeconfig's copy:\n%s", copied)
	}
	wantNotes(t, res, "the EKS cluster arn:aws:eks:us-east-1:123456789012:cluster/demo's tokens, made inside with the AWS login's stand-in, are signed again",
		"the EKS cluster old will refuse the tokens its users make inside")
	wantHosts(t, res, "abc123.gr7.us-east-1.eks.amazonaws.com:443")
}

// credentials.tfrc.json: each host's token becomes a stand-in of its shape, bound to the host.
func TestTerraformStandIns(t *testing.T) {
	const (
		cloud = "AbCdEfGhIjKlMn.atlasv1.OpQrStUvWxYz0123456789abcdefghijklmnopqrstuvwxyz"
		ent   = "EntEntEntEntEn.atlasv1.ENTentENTentENTent0123456789abcdefghijklmnopqrstu"
	)
	home, sandbox := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".terraform.d", "credentials.tfrc.json"), `{"credentials": {"app.terraform.io": {"token": "`+cloud+`"}, "TFE.Example.test": {"token": "`+ent+`"}, "bad host:1": {"token": "x"}}}`, 0o600)
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox}, entries(t, config.Credential{Name: "terraform", Secrets: config.SecretsStandIn}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{cloud: "app.terraform.io:443", ent: "tfe.example.test:443"}
	if len(res.StandIns) != 2 {
		t.Fatalf("stand-ins %+v", res.StandIns)
	}
	b, _ := os.ReadFile(filepath.Join(sandbox, ".terraform.d", "credentials.tfrc.json"))
	for _, s := range res.StandIns {
		if hostList(s.Hosts) != want[s.Real] || s.Login != "terraform" || !strings.Contains(string(b), `"token": "`+s.StandIn+`"`) || !strings.Contains(s.StandIn, ".atlasv1.") {
			t.Errorf("stand-in %+v\n%s", s, b)
		}
	}
	for _, secret := range []string{cloud, ent} {
		scanFor(t, sandbox, secret)
	}
	if strings.Contains(string(b), "bad host") {
		t.Errorf("the copy kept a token for no host:\n%s", b)
	}
	wantNotes(t, res, `the Terraform token for "bad host:1" was left out of the copy: it is not a host`)
	wantHosts(t, res, "app.terraform.io:443", "tfe.example.test:443")
}
