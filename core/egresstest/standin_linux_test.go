package egresstest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/credentials"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/localca"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/proxy"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
	"github.com/openworker/openworker/core/tstest"
)

// origin is a stand-in for one of the internet's HTTPS hosts: a loopback server with a
// certificate for its name from the test's public CA, which the sessions' proxies are told
// to trust (and nothing in the sandbox is), recording the Authorization headers it sees.
type origin struct {
	mu   sync.Mutex
	auth []string
}

func (o *origin) saw() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.auth)
}

func (w *world) httpsOrigin(name string, public *localca.CA, h http.Handler) *origin {
	w.t.Helper()
	return w.httpsOriginAs(name, name, public, h)
}

// httpsOriginAs is httpsOrigin with a certificate for certName from ca: a server reached by
// one name whose certificate gives another, from an authority of its own, as a cluster's API
// server often is.
func (w *world) httpsOriginAs(name, certName string, ca *localca.CA, h http.Handler, configure ...func(*tls.Config)) *origin {
	w.t.Helper()
	o := &origin{}
	leaf, err := ca.Leaf(certName)
	if err != nil {
		w.t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.auth = append(o.auth, r.Header.Get("Authorization"))
		o.mu.Unlock()
		h.ServeHTTP(rw, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	for _, f := range configure {
		f(srv.TLS)
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused on purpose
	srv.StartTLS()
	w.t.Cleanup(srv.Close)
	n := w.net
	n.mu.Lock()
	defer n.mu.Unlock()
	a := netip.AddrFrom4([4]byte{203, 0, 113, byte(10 + len(n.names))})
	n.names[name] = []netip.Addr{a}
	n.origin[netip.AddrPortFrom(a, 443)] = srv.Listener.Addr().String()
	return o
}

// basicPassword is the password of a Basic Authorization value.
func basicPassword(h string) string {
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h, "Basic "))
	if err != nil {
		return ""
	}
	_, p, _ := strings.Cut(string(b), ":")
	return p
}

// gitOrigin is github.com for git over https: git http-backend behind the origin, which asks
// for Basic credentials whose password is the real token, as GitHub does.
func gitOrigin(t *testing.T, repos, real string) http.Handler {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("no git here: %v", err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + repos, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=octocat"},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if basicPassword(r.Header.Get("Authorization")) != real {
			w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
			http.Error(w, "Invalid username or token.", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	})
}

// npmRegistry is a private registry serving one package, tiny, to requests that carry the
// real token.
func npmRegistry(t *testing.T, host, real string) http.Handler {
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"package/package.json", `{"name":"tiny","version":"1.0.0","main":"index.js"}`},
		{"package/index.js", "module.exports = 'tiny from the private registry';\n"},
	} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(1e9, 0)})
		io.WriteString(tw, f.body)
	}
	tw.Close()
	gz.Close()
	sum1 := sha1.Sum(tgz.Bytes())
	sum512 := sha512.Sum512(tgz.Bytes())
	packument, _ := json.Marshal(map[string]any{
		"name": "tiny", "dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{
			"name": "tiny", "version": "1.0.0",
			"dist": map[string]string{
				"tarball":   "https://" + host + "/tiny/-/tiny-1.0.0.tgz",
				"shasum":    hex.EncodeToString(sum1[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum512[:]),
			},
		}},
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+real {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, `{"error":"authentication required"}`, http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/tiny":
			w.Header().Set("Content-Type", "application/json")
			w.Write(packument)
		case "/tiny/-/tiny-1.0.0.tgz":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(tgz.Bytes())
		default:
			http.NotFound(w, r)
		}
	})
}

// checkEKSToken checks an EKS bearer token (an STS GetCallerIdentity request presigned for
// cluster) as STS would, with secret.
func checkEKSToken(auth, cluster, secret string) error {
	tok, ok := strings.CutPrefix(auth, "Bearer k8s-aws-v1.")
	if !ok {
		return fmt.Errorf("no EKS token: %q", auth)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(tok, "="))
	if err != nil {
		return err
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		return err
	}
	if u.Query().Get("Action") != "GetCallerIdentity" || !strings.HasPrefix(u.Host, "sts.") {
		return fmt.Errorf("not an STS GetCallerIdentity: %s", u.Redacted())
	}
	return proxy.VerifySigV4(&http.Request{Method: "GET", URL: u, Host: u.Host, RequestURI: u.RequestURI(), Header: http.Header{"X-K8s-Aws-Id": {cluster}}}, secret)
}

// terraformRegistry is Terraform Cloud's private module registry with one module,
// example/tiny/null 1.0.0, whose API answers requests with the real token.
func terraformRegistry(t *testing.T, real string) http.Handler {
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	body := "output \"hello\" { value = \"tiny from the private registry\" }\n"
	tw.WriteHeader(&tar.Header{Name: "main.tf", Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1e9, 0)})
	io.WriteString(tw, body)
	tw.Close()
	gz.Close()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/.well-known/terraform.json":
			io.WriteString(w, `{"modules.v1": "/api/registry/v1/modules/"}`)
		case r.URL.Path == "/archive/tiny.tar.gz":
			w.Write(tgz.Bytes())
		case r.Header.Get("Authorization") != "Bearer "+real:
			http.Error(w, `{"errors":["unauthorized"]}`, http.StatusUnauthorized)
		case r.URL.Path == "/api/registry/v1/modules/example/tiny/null/versions":
			io.WriteString(w, `{"modules": [{"versions": [{"version": "1.0.0"}]}]}`)
		case r.URL.Path == "/api/registry/v1/modules/example/tiny/null/1.0.0/download":
			w.Header().Set("X-Terraform-Get", "https://app.terraform.io/archive/tiny.tar.gz")
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	})
}

// tinyManifest is an image's manifest, as a registry serves it.
const tinyManifest = `{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json","config":{"mediaType":"application/vnd.docker.container.image.v1+json","size":2,"digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},"layers":[]}`

// dockerRegistry is a registry serving the one manifest above, to requests authorized as
// authorized says; unauthorized ones are asked for credentials by challenge (a
// WWW-Authenticate value).
func dockerRegistry(challenge string, authorized func(string) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/v2/" {
			io.WriteString(w, "{}")
			return
		}
		if !strings.HasSuffix(r.URL.Path, "/manifests/latest") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.docker.distribution.manifest.v2+json")
		io.WriteString(w, tinyManifest)
	})
}

// tokenPattern finds what could be a GitHub or npm token of the test's shape, so that a scan
// inside never needs the real secret to look for it.
const tokenPattern = `gho_[A-Za-z0-9]{36}|npm_[A-Za-z0-9]{36}|dckr_pat_[A-Za-z0-9]{27}|kube_[A-Za-z0-9]{40}|awsSECRET[A-Za-z0-9]{31}|[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9]{60}`

// found are the distinct tokens a scan inside printed, one per line.
func found(out string) []string {
	var tokens []string
	for _, m := range regexp.MustCompile(tokenPattern).FindAllString(out, -1) {
		if !slices.Contains(tokens, m) {
			tokens = append(tokens, m)
		}
	}
	return tokens
}

// memScan reads the memory of every process of the sandbox it is allowed to, and prints
// the tokens it finds there, after the stand-in it reads itself (which shows that a token
// in memory is found).
const memScan = `python3 - "$GH_CONFIG_DIR/hosts.yml" <<'EOF'
import os, re, sys
own = open(sys.argv[1]).read()
pat = re.compile(rb'` + tokenPattern + `')
seen, procs, size = set(), 0, 0
for pid in os.listdir('/proc'):
    if not pid.isdigit():
        continue
    try:
        maps = open('/proc/%s/maps' % pid).read().splitlines()
        mem = open('/proc/%s/mem' % pid, 'rb', 0)
    except OSError:
        continue
    procs += 1
    for line in maps:
        addr, perms = line.split()[:2]
        if 'r' not in perms:
            continue
        lo, hi = (int(x, 16) for x in addr.split('-'))
        try:
            mem.seek(lo)
            data = mem.read(hi - lo)
        except (OSError, OverflowError, ValueError):
            continue
        size += len(data)
        seen.update(pat.findall(data))
print('processes %d bytes %d' % (procs, size))
for s in sorted(seen):
    print(s.decode())
EOF`

// TestStandInLogins: gh's, npm's and Docker's logins shared as stand-ins, in a real Linux
// wall, against loopback stand-ins for api.github.com, github.com, a private npm registry,
// Docker Hub (its token service and registry), a registry whose login a credential helper
// keeps, a cluster's API server with an authority of its own, and an AWS endpoint. gh api,
// git clone and push over https, npm install, skopeo, kubectl and the AWS CLI reach their
// hosts with
// the real tokens while the sandbox holds only stand-ins; a stand-in sent to another allowed host reaches it as the
// stand-in, through the proxy and around it; a scan of the sandbox's files, environment and
// readable process memory finds no real token; a client that does not trust the CA is refused
// with the login named and the way out; each substitution is in the audit trail, the secret
// never; the CA's key is out of reach.
func TestStandInLogins(t *testing.T) {
	for _, p := range []string{"gh", "git", "npm", "curl", "python3", "skopeo", "kubectl", "aws", "javac", "terraform"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("no %s here (Debian: apt-get install gh git npm curl python3 skopeo kubernetes-client awscli default-jdk-headless; go install github.com/hashicorp/terraform@v1.5.7)", p)
		}
	}
	publicDir := t.TempDir()
	public, err := localca.Load(filepath.Join(publicDir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(public.Certificate())
	var evMu sync.Mutex
	var events []audit.Event
	w := newWorldWith(t, func(o *session.Options) {
		o.UpstreamRoots = roots
		o.OnEvent = func(e audit.Event) { evMu.Lock(); events = append(events, e); evMu.Unlock() }
		o.GhToken = func(string) (string, error) { return "", fmt.Errorf("the token is in hosts.yml") }
	})
	ghReal, npmReal := tstest.Token(t, "gho_", 36), tstest.Token(t, "npm_", 36)
	hubReal, helperReal := tstest.Token(t, "dckr_pat_", 27), tstest.Token(t, "dckr_pat_", 27)
	kubeReal := tstest.Token(t, "kube_", 40)
	awsReal := tstest.Token(t, "awsSECRET", 31) // a recognisable shape, for the scans
	tfReal := tstest.Token(t, "", 14) + ".atlasv1." + tstest.Token(t, "", 60)
	reals := []string{ghReal, npmReal, hubReal, helperReal, kubeReal, awsReal, tfReal}

	// The internet: GitHub's API and git host, another GitHub host, a private registry.
	api := w.httpsOrigin("api.github.com", public, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "token "+ghReal {
			http.Error(rw, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/echo" && r.Header.Get("Upgrade") == "echo" {
			// A protocol switch, as kubectl exec's and WebSockets are: then an echo.
			conn, brw, err := rw.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
			brw.Flush()
			io.Copy(conn, brw)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"login":"octocat","id":1}`)
	}))
	repos := t.TempDir()
	work := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", work},
		{"-C", work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first"},
		{"clone", "-q", "--bare", work, filepath.Join(repos, "octocat", "hello.git")},
		{"-C", filepath.Join(repos, "octocat", "hello.git"), "config", "http.receivepack", "true"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitHost := w.httpsOrigin("github.com", public, gitOrigin(t, repos, ghReal))
	gist := w.httpsOrigin("gist.github.com", public, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "gist") }))
	registry := w.httpsOrigin("registry.example.test", public, npmRegistry(t, "registry.example.test", npmReal))
	// Docker Hub: the registry sends a client to its token service, which takes the login
	// as Basic and gives a token for the registry.
	const hubToken = "issued-for-library-tiny"
	hubAuth := w.httpsOrigin("auth.docker.io", public, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if basicPassword(r.Header.Get("Authorization")) != hubReal {
			http.Error(rw, `{"details":"incorrect username or password"}`, http.StatusUnauthorized)
			return
		}
		io.WriteString(rw, `{"token":"`+hubToken+`","expires_in":300}`)
	}))
	w.httpsOrigin("registry-1.docker.io", public, dockerRegistry(`Bearer realm="https://auth.docker.io/token",service="registry.docker.io"`,
		func(a string) bool { return a == "Bearer "+hubToken }))
	helped := w.httpsOrigin("docker.example.test", public, dockerRegistry(`Basic realm="docker.example.test"`,
		func(a string) bool { return basicPassword(a) == helperReal }))
	// A cluster's API server, with a certificate from the cluster's own authority for the
	// name its kubeconfig gives as tls-server-name.
	clusterCA, err := localca.Load(filepath.Join(t.TempDir(), "cluster"))
	if err != nil {
		t.Fatal(err)
	}
	// Its users sign in with a token (alice) or a client certificate its own authority for
	// clients signed (carol).
	clientsCA := tstest.ClientCert(t, "cluster clients", nil, true)
	carol := tstest.ClientCert(t, "carol", &clientsCA, false)
	carolCert, carolKey := carol.CertPEM, carol.KeyPEM
	clients := x509.NewCertPool()
	clients.AddCert(clientsCA.Cert)
	var kubeUsers []string
	kube := w.httpsOriginAs("kube.example.test", "kubernetes.default", clusterCA, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		user := ""
		switch {
		case r.Header.Get("Authorization") == "Bearer "+kubeReal:
			user = "alice"
		case len(r.TLS.PeerCertificates) > 0:
			user = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		if user == "" {
			http.Error(rw, `{"kind":"Status","status":"Failure","reason":"Unauthorized","code":401}`, http.StatusUnauthorized)
			return
		}
		evMu.Lock()
		kubeUsers = append(kubeUsers, user)
		evMu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api": // discovery, as kubectl exec does it first
			io.WriteString(rw, `{"kind":"APIVersions","versions":["v1"]}`)
		case "/apis":
			io.WriteString(rw, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`)
		case "/api/v1":
			io.WriteString(rw, `{"kind":"APIResourceList","groupVersion":"v1","resources":[`+
				`{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["get","list"]},`+
				`{"name":"pods/exec","singularName":"","namespaced":true,"kind":"PodExecOptions","verbs":["create","get"]}]}`)
		case "/api/v1/namespaces/default/pods/web-0":
			io.WriteString(rw, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-0","namespace":"default"},`+
				`"spec":{"containers":[{"name":"app","image":"app"}]},"status":{"phase":"Running"}}`)
		case "/api/v1/namespaces/default/pods/web-0/exec":
			kubeExec(rw, r, "from web-0 as "+user+": "+strings.Join(r.URL.Query()["command"], " ")+"\n")
		default:
			io.WriteString(rw, `{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"web-0"}}],"user":"`+user+`"}`)
		}
	}), func(c *tls.Config) { c.ClientAuth, c.ClientCAs = tls.VerifyClientCertIfGiven, clients })
	// AWS: a regional STS endpoint that checks each request's signature with the real secret.
	sts := w.httpsOrigin("sts.us-east-1.amazonaws.com", public, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if err := proxy.VerifySigV4(r, awsReal); err != nil {
			rw.Header().Set("Content-Type", "text/xml")
			rw.WriteHeader(http.StatusForbidden)
			io.WriteString(rw, `<ErrorResponse><Error><Type>Sender</Type><Code>SignatureDoesNotMatch</Code><Message>`+err.Error()+`</Message></Error><RequestId>1</RequestId></ErrorResponse>`)
			return
		}
		rw.Header().Set("Content-Type", "text/xml")
		io.WriteString(rw, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>`+
			`<Arn>arn:aws:iam::123456789012:user/octocat</Arn><UserId>AIDAEXAMPLE</UserId><Account>123456789012</Account>`+
			`</GetCallerIdentityResult><ResponseMetadata><RequestId>01234567-89ab-cdef-0123-456789abcdef</RequestId></ResponseMetadata></GetCallerIdentityResponse>`)
	}))
	// An EKS cluster's API server, with an authority of its own, which takes a bearer token
	// that is an STS request presigned for the cluster's name, and checks it as STS would.
	eksCA, err := localca.Load(filepath.Join(t.TempDir(), "eks"))
	if err != nil {
		t.Fatal(err)
	}
	eks := w.httpsOriginAs("abc123.gr7.us-east-1.eks.amazonaws.com", "abc123.gr7.us-east-1.eks.amazonaws.com", eksCA, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if err := checkEKSToken(r.Header.Get("Authorization"), "demo", awsReal); err != nil {
			http.Error(rw, `{"kind":"Status","status":"Failure","message":"`+err.Error()+`","code":401}`, http.StatusUnauthorized)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"kind":"PodList","apiVersion":"v1","items":[],"user":"eks"}`)
	}))
	s3 := w.httpsOrigin("s3.us-east-1.amazonaws.com", public, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if err := proxy.VerifySigV4(r, awsReal); err != nil {
			http.Error(rw, "<Error><Code>SignatureDoesNotMatch</Code></Error>", http.StatusForbidden)
			return
		}
		io.WriteString(rw, "the report")
	}))
	// Terraform Cloud's private module registry, which serves one module to requests with
	// the real token.
	tfc := w.httpsOrigin("app.terraform.io", public, terraformRegistry(t, tfReal))
	// docker.example.test's login is kept by a credential helper, which runs outside.
	helperBin := t.TempDir()
	if err := os.WriteFile(filepath.Join(helperBin, "docker-credential-owtest"), []byte("#!/bin/sh\n[ \"$1\" = get ] && [ \"$(cat)\" = docker.example.test ] || exit 3\necho '{\"ServerURL\":\"docker.example.test\",\"Username\":\"bob\",\"Secret\":\""+helperReal+"\"}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", helperBin+string(os.PathListSeparator)+os.Getenv("PATH"))

	// The person's logins, with the real tokens in the files, and gh set up as git's
	// credential helper for github.com (as gh auth setup-git writes it).
	files := map[string]string{
		".config/gh/hosts.yml":  "github.com:\n    oauth_token: " + ghReal + "\n    user: octocat\n    git_protocol: https\n",
		".config/gh/config.yml": "git_protocol: https\nprompt: disabled\n",
		".npmrc":                "registry=https://registry.example.test/\n//registry.example.test/:_authToken=" + npmReal + "\n",
		".gitconfig":            "[credential \"https://github.com\"]\n\thelper =\n\thelper = !gh auth git-credential\n[user]\n\tname = Octo Cat\n\temail = octocat@example.com\n",
		".kube/config": "apiVersion: v1\nkind: Config\ncurrent-context: prod\nclusters:\n- name: prod\n  cluster:\n    server: https://kube.example.test\n" +
			"    certificate-authority-data: " + base64.StdEncoding.EncodeToString(clusterCA.CertPEM()) + "\n    tls-server-name: kubernetes.default\n" +
			"- name: demo\n  cluster:\n    server: https://abc123.gr7.us-east-1.eks.amazonaws.com\n    certificate-authority-data: " + base64.StdEncoding.EncodeToString(eksCA.CertPEM()) + "\n" +
			"users:\n- name: alice\n  user:\n    token: " + kubeReal + "\n- name: carol\n  user:\n    client-certificate-data: " + base64.StdEncoding.EncodeToString(carolCert) +
			"\n    client-key-data: " + base64.StdEncoding.EncodeToString(carolKey) + "\n" +
			"- name: demo-user\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n      args: [--region, us-east-1, eks, get-token, --cluster-name, demo]\n" +
			"contexts:\n- name: prod\n  context: {cluster: prod, user: alice}\n- name: admin\n  context: {cluster: prod, user: carol}\n- name: eks\n  context: {cluster: demo, user: demo-user}\n",
		".terraform.d/credentials.tfrc.json": `{"credentials": {"app.terraform.io": {"token": "` + tfReal + `"}}}`,
		".aws/credentials":                   "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = " + awsReal + "\n",
		".docker/config.json": `{"auths": {"https://index.docker.io/v1/": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("alice:"+hubReal)) + `"}},
			"credHelpers": {"docker.example.test": "owtest"}}`,
	}
	for rel, body := range files {
		p := filepath.Join(w.home, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(w.project, "public-ca.pem"), public.CertPEM(), 0o644)
	logins := credentials.Entries([]config.Credential{
		{Name: "gh", Secrets: config.SecretsStandIn, Enabled: true},
		{Name: "npm", Secrets: config.SecretsStandIn, Enabled: true},
		{Name: "docker", Secrets: config.SecretsStandIn, Enabled: true},
		{Name: "kubectl", Secrets: config.SecretsStandIn, Enabled: true},
		{Name: "aws-credentials", Secrets: config.SecretsStandIn, Enabled: true},
		{Name: "terraform", Secrets: config.SecretsStandIn, Enabled: true},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var refusals []proxy.Refusal
	var refMu sync.Mutex
	s, err := w.m.Start(ctx, session.Spec{Provider: sandbox.Linux, Writable: []string{w.project}, Network: policy.Allowlist,
		Hosts: []hosts.Entry{mustEntry(t, "gist.github.com:443")}, Logins: logins,
		OnRefusal: func(r proxy.Refusal) { refMu.Lock(); refusals = append(refusals, r); refMu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.End()
	ca := filepath.Join(w.project, "public-ca.pem")
	var ghStandIn string
	for _, l := range s.Logins() {
		if l.Secrets != "stand-in" {
			t.Errorf("login %s reached the session as %q", l.Key, l.Secrets)
		}
	}

	t.Run("gh_api", func(t *testing.T) {
		out, code, _ := w.run(s, "GH_NO_UPDATE_NOTIFIER=1 gh api user")
		if code != 0 || !strings.Contains(out, `"login":"octocat"`) {
			t.Fatalf("gh api user: exit %d\n%s", code, out)
		}
		saw := api.saw()
		if len(saw) == 0 || saw[len(saw)-1] != "token "+ghReal {
			t.Fatalf("api.github.com saw %q", saw)
		}
		out, _, _ = w.run(s, `sed -n 's/.*oauth_token: //p' "$GH_CONFIG_DIR/hosts.yml"`)
		ghStandIn = strings.TrimSpace(out)
		if len(ghStandIn) != len(ghReal) || !strings.HasPrefix(ghStandIn, "gho_") || ghStandIn == ghReal {
			t.Fatalf("the sandbox's hosts.yml holds %q", ghStandIn)
		}
	})

	// gh on a Mac trusts only the system's certificates, never OpenWorker's authority: gh's
	// own requests go to the session's socket, where OpenWorker speaks TLS to the host. A
	// bundle without OpenWorker's authority stands in for the Mac's trust here.
	t.Run("gh_without_trusting_the_ca", func(t *testing.T) {
		before := len(api.saw())
		out, code, _ := w.run(s, `grep -c http_unix_socket "$GH_CONFIG_DIR/config.yml"; mkdir -p "$TMPDIR/no-certs"
SSL_CERT_FILE=$PWD/public-ca.pem SSL_CERT_DIR=$TMPDIR/no-certs GH_NO_UPDATE_NOTIFIER=1 gh api user`)
		if code != 0 || !strings.HasPrefix(out, "1\n") || !strings.Contains(out, `"login":"octocat"`) {
			t.Fatalf("gh api user, trusting the public CA alone: exit %d\n%s", code, out)
		}
		if saw := api.saw(); len(saw) != before+1 || saw[before] != "token "+ghReal {
			t.Fatalf("api.github.com saw %q", saw[before:])
		}
	})

	t.Run("git_clone_and_push", func(t *testing.T) {
		out, code, _ := w.run(s, `set -e
cd "$TMPDIR" && git clone -q https://github.com/octocat/hello.git && cd hello
echo made inside > inside.txt && git add inside.txt && git commit -q -m "from the sandbox"
git push -q origin main 2>&1 && git log --oneline -1`)
		if code != 0 || !strings.Contains(out, "from the sandbox") {
			t.Fatalf("exit %d\n%s", code, out)
		}
		log, err := exec.Command("git", "-C", filepath.Join(repos, "octocat", "hello.git"), "log", "--format=%s", "-1").Output()
		if err != nil || strings.TrimSpace(string(log)) != "from the sandbox" {
			t.Fatalf("the push did not reach the origin: %v %q", err, log)
		}
		for _, a := range gitHost.saw() {
			if a != "" && basicPassword(a) != ghReal {
				t.Errorf("github.com saw credentials other than the real token: %q", a)
			}
		}
		if !slices.ContainsFunc(gitHost.saw(), func(a string) bool { return basicPassword(a) == ghReal }) {
			t.Errorf("github.com never saw the real token: %q", gitHost.saw())
		}
	})

	t.Run("npm_install", func(t *testing.T) {
		out, code, _ := w.run(s, `set -e; mkdir -p app && cd app && npm install --no-audit --no-fund --no-update-notifier --loglevel=error tiny >/dev/null && node -e "console.log(require('tiny'))"`)
		if code != 0 || !strings.Contains(out, "tiny from the private registry") {
			t.Fatalf("exit %d\n%s", code, out)
		}
		for _, a := range registry.saw() {
			if a != "Bearer "+npmReal {
				t.Errorf("the registry saw %q", a)
			}
		}
		out, _, _ = w.run(s, `cat "$NPM_CONFIG_USERCONFIG"`)
		if !strings.Contains(out, "_authToken=npm_") || strings.Contains(out, npmReal) {
			t.Errorf("the sandbox's .npmrc:\n%s", out)
		}
	})

	// skopeo, a registry client that reads Docker's config.json, through Docker Hub's token
	// exchange (two hosts) and a registry that takes Basic itself.
	t.Run("skopeo_inspect", func(t *testing.T) {
		for _, ref := range []string{"docker.io/library/tiny:latest", "docker.example.test/team/app:latest"} {
			out, code, _ := w.run(s, `skopeo --command-timeout 30s inspect --raw docker://`+ref)
			if code != 0 || out != tinyManifest {
				t.Fatalf("skopeo inspect %s: exit %d\n%s", ref, code, out)
			}
		}
		if saw := hubAuth.saw(); len(saw) == 0 || basicPassword(saw[len(saw)-1]) != hubReal {
			t.Errorf("auth.docker.io saw %q", saw)
		}
		if saw := helped.saw(); !slices.ContainsFunc(saw, func(a string) bool { return basicPassword(a) == helperReal }) {
			t.Errorf("docker.example.test saw %q", saw)
		}
		out, _, _ := w.run(s, `cat "$DOCKER_CONFIG/config.json"`)
		if !strings.Contains(out, "docker.example.test") || strings.Contains(out, "credHelpers") || strings.Contains(out, hubReal) || strings.Contains(out, helperReal) {
			t.Errorf("the sandbox's config.json:\n%s", out)
		}
	})

	// kubectl trusts only the authority its kubeconfig names: the copy names OpenWorker's,
	// and the proxy verifies the API server with the cluster's own, for its tls-server-name.
	t.Run("kubectl", func(t *testing.T) {
		out, code, _ := w.run(s, `kubectl get --raw /api/v1/namespaces/default/pods`)
		if code != 0 || !strings.Contains(out, `"name":"web-0"`) || !strings.Contains(out, `"user":"alice"`) {
			t.Fatalf("kubectl get: exit %d\n%s", code, out)
		}
		// carol's client certificate: the sandbox shows its stand-in, the server gets hers.
		out, code, _ = w.run(s, `kubectl --context admin get --raw /api/v1/namespaces/default/pods`)
		if code != 0 || !strings.Contains(out, `"user":"carol"`) {
			t.Fatalf("kubectl --context admin get: exit %d\n%s", code, out)
		}
		keyLine := strings.Split(string(carolKey), "\n")[1]
		out, _, _ = w.run(s, `grep -rlF --devices=skip --exclude-dir=usr --exclude-dir=opt --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev '`+keyLine+`' / 2>/dev/null; grep -c "$(printf %s '`+keyLine+`' | head -c 20)" /proc/self/environ`)
		if strings.TrimSpace(out) != "0" {
			t.Errorf("carol's key inside:\n%s", out)
		}
		if saw := kube.saw(); !slices.Contains(saw, "Bearer "+kubeReal) || slices.ContainsFunc(saw, func(a string) bool { return a != "" && a != "Bearer "+kubeReal }) {
			t.Errorf("the API server saw %q", saw)
		}
		evMu.Lock()
		users := slices.Clone(kubeUsers)
		evMu.Unlock()
		slices.Sort(users)
		if users = slices.Compact(users); !slices.Equal(users, []string{"alice", "carol"}) {
			t.Errorf("the API server served %q", users)
		}
		out, _, _ = w.run(s, `cat "$KUBECONFIG"`)
		if strings.Contains(out, kubeReal) || strings.Contains(out, "tls-server-name") || !strings.Contains(out, "token: kube_") {
			t.Errorf("the sandbox's kubeconfig:\n%s", out)
		}
	})

	// kubectl exec switches its connection to a WebSocket (kubectl 1.30 and later; earlier
	// ones speak SPDY, which this API server does not): the API server gets the real token
	// (it answers as alice), and the command's output comes back through the switch.
	t.Run("kubectl_exec", func(t *testing.T) {
		if !kubectlSpeaksWebSockets(t) {
			t.Skip("this kubectl runs exec over SPDY only")
		}
		out, code, _ := w.run(s, `kubectl exec web-0 -- echo hi there`)
		if code != 0 || out != "from web-0 as alice: echo hi there\n" {
			t.Fatalf("kubectl exec: exit %d\n%s", code, out)
		}
	})

	// The AWS CLI signs with the stand-in secret; OpenWorker checks that signature and signs
	// the request again with the real one, which the endpoint checks.
	t.Run("aws_cli", func(t *testing.T) {
		out, code, _ := w.run(s, `aws sts get-caller-identity --region us-east-1 --endpoint-url https://sts.us-east-1.amazonaws.com --output text`)
		if code != 0 || !strings.Contains(out, "123456789012\tarn:aws:iam::123456789012:user/octocat\tAIDAEXAMPLE") {
			t.Fatalf("aws sts get-caller-identity: exit %d\n%s", code, out)
		}
		if saw := sts.saw(); len(saw) == 0 || !strings.Contains(saw[len(saw)-1], "Credential=AKIAIOSFODNN7EXAMPLE/") {
			t.Errorf("sts saw %q", saw)
		}
		out, _, _ = w.run(s, `cat "$AWS_SHARED_CREDENTIALS_FILE"`)
		if strings.Contains(out, awsReal) || !strings.Contains(out, "aws_access_key_id = AKIAIOSFODNN7EXAMPLE") {
			t.Errorf("the sandbox's credentials:\n%s", out)
		}
		// An EKS cluster: kubectl runs aws eks get-token inside, which presigns its token
		// with the stand-in; OpenWorker signs it again on its way to the cluster.
		out, code, _ = w.run(s, `kubectl --context eks get --raw /api/v1/namespaces/default/pods`)
		if code != 0 || !strings.Contains(out, `"user":"eks"`) {
			t.Fatalf("kubectl to EKS: exit %d\n%s", code, out)
		}
		if saw := eks.saw(); len(saw) == 0 || !strings.HasPrefix(saw[len(saw)-1], "Bearer k8s-aws-v1.") {
			t.Errorf("the EKS server saw %q", saw)
		}
		// A presigned URL made inside, with the stand-in: its signature is made again too.
		out, code, _ = w.run(s, `curl -sS "$(aws s3 presign s3://my-bucket/report.csv --region us-east-1 --endpoint-url https://s3.us-east-1.amazonaws.com)"`)
		if code != 0 || out != "the report" {
			t.Fatalf("a presigned URL: exit %d\n%s", code, out)
		}
		// One changed after it was signed is refused with why and the way out, and S3
		// sees nothing.
		before := len(s3.saw())
		out, code, res := w.run(s, `curl -sS "$(aws s3 presign s3://my-bucket/report.csv --region us-east-1 --endpoint-url https://s3.us-east-1.amazonaws.com | sed 's/report.csv/payroll.csv/')"`)
		if code != 0 || !strings.Contains(out, "did not check out") {
			t.Fatalf("a changed presigned URL: exit %d\n%s", code, out)
		}
		var reason string
		for _, b := range res.Blocked {
			if b.String() == "s3.us-east-1.amazonaws.com:443" {
				reason = b.Reason
			}
		}
		if !strings.Contains(reason, "did not check out") || !strings.Contains(reason, "the aws-credentials login can be shared by copying it instead") {
			t.Errorf("the refusal %q (blocked %v)", reason, res.Blocked)
		}
		if saw := s3.saw(); len(saw) != before {
			t.Errorf("S3 got the changed request: %q", saw[before:])
		}
	})

	// terraform init fetches a module from Terraform Cloud's private registry with the
	// stand-in token, which OpenWorker replaces on the way.
	t.Run("terraform", func(t *testing.T) {
		out, code, _ := w.run(s, `set -e; mkdir -p "$TMPDIR/tf" && cd "$TMPDIR/tf"
cat > main.tf <<'EOF'
module "tiny" {
  source  = "app.terraform.io/example/tiny/null"
  version = "1.0.0"
}
output "hello" { value = module.tiny.hello }
EOF
export CHECKPOINT_DISABLE=1
terraform init -input=false -no-color >/dev/null
terraform apply -auto-approve -input=false -no-color | tail -1`)
		if code != 0 || !strings.Contains(out, `hello = "tiny from the private registry"`) {
			t.Fatalf("terraform: exit %d\n%s", code, out)
		}
		if saw := tfc.saw(); !slices.Contains(saw, "Bearer "+tfReal) || slices.ContainsFunc(saw, func(a string) bool { return a != "" && a != "Bearer "+tfReal }) {
			t.Errorf("app.terraform.io saw %q", saw)
		}
	})

	// A protocol switch (kubectl exec, a WebSocket) asked for with the stand-in, by a program
	// that ignores the proxy variables (the relay's way): the host gets the real token, and
	// the new protocol is carried both ways.
	t.Run("protocol_switch", func(t *testing.T) {
		out, code, _ := w.run(s, `python3 - "$(sed -n 's/.*oauth_token: //p' "$GH_CONFIG_DIR/hosts.yml")" <<'EOF'
import socket, ssl, sys
s = ssl.create_default_context().wrap_socket(socket.create_connection(("api.github.com", 443)), server_hostname="api.github.com")
s.sendall(("GET /echo HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: token %s\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n" % sys.argv[1]).encode())
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
print(head.split(b"\r\n")[0].decode())
s.sendall(b"ping through the switch")
got = b""
while len(got) < 23:
    got += s.recv(100)
print(got.decode())
EOF`)
		if code != 0 || out != "HTTP/1.1 101 Switching Protocols\nping through the switch\n" {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if saw := api.saw(); saw[len(saw)-1] != "token "+ghReal {
			t.Errorf("api.github.com saw %q", saw)
		}
	})

	t.Run("stand_in_to_another_host", func(t *testing.T) {
		if ghStandIn == "" {
			t.Skip("gh_api did not find the stand-in")
		}
		tok := `"$(sed -n 's/.*oauth_token: //p' "$GH_CONFIG_DIR/hosts.yml")"`
		before := len(gist.saw())
		// Through the proxy, and around it (the relay), to a host the login is not bound to.
		for _, c := range []string{
			`curl -sS --cacert ` + ca + ` -H "Authorization: token ` + tok + `" https://gist.github.com/`,
			`curl -sS --noproxy '*' --cacert ` + ca + ` -u "octocat:` + tok + `" https://gist.github.com/`,
		} {
			if out, code, _ := w.run(s, c); code != 0 || out != "gist" {
				t.Fatalf("%s: exit %d\n%s", c, code, out)
			}
		}
		saw := gist.saw()[before:]
		if len(saw) != 2 || saw[0] != "token "+ghStandIn || basicPassword(saw[1]) != ghStandIn {
			t.Fatalf("gist.github.com saw %q, want the stand-in %q", saw, ghStandIn)
		}
		// Around the proxy to the login's own host: the relay puts the real token on it.
		out, code, _ := w.run(s, `curl -sS --noproxy '*' -H "Authorization: token `+tok+`" https://api.github.com/user`)
		if code != 0 || !strings.Contains(out, "octocat") {
			t.Fatalf("through the relay: exit %d\n%s", code, out)
		}
	})

	t.Run("nothing_inside_holds_a_real_token", func(t *testing.T) {
		if ghStandIn == "" {
			t.Skip("gh_api did not find the stand-in")
		}
		files, _, _ := w.run(s, `grep -rhoaE --devices=skip --exclude-dir=usr --exclude-dir=opt --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev '`+tokenPattern+`' / 2>/dev/null | sort -u`)
		env, _, _ := w.run(s, `env; cat /proc/*/environ 2>/dev/null | tr '\0' '\n'`)
		mem, code, _ := w.run(s, memScan)
		if code != 0 || !strings.HasPrefix(mem, "processes ") {
			t.Fatalf("the memory scan failed: exit %d\n%s", code, mem)
		}
		t.Logf("memory scanned: %s", strings.SplitN(mem, "\n", 2)[0])
		if !slices.Contains(found(files), ghStandIn) || !slices.Contains(found(mem), ghStandIn) {
			t.Fatalf("the scans did not find even the stand-in (files %q, memory %q)", found(files), found(mem))
		}
		for what, out := range map[string]string{"files": files, "environment": env, "memory": mem} {
			for _, real := range reals {
				if strings.Contains(out, real) {
					t.Errorf("the sandbox's %s hold the real token %s…", what, real[:8])
				}
			}
		}
		// The CA's key, and the state folder it is in, are out of reach.
		out, code, _ := w.run(s, "cat "+filepath.Join(w.state, session.CADir, localca.KeyFile)+"; ls "+w.state)
		if code == 0 || strings.Contains(out, "PRIVATE KEY") {
			t.Fatalf("the CA's key was reachable: exit %d\n%s", code, out)
		}
	})

	t.Run("system_bundle", func(t *testing.T) {
		// A program that names no bundle reads the system's, where the wall shows the
		// session's, read-only.
		if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err != nil {
			t.Skip("this machine keeps its bundle elsewhere than Debian's /etc/ssl/certs/ca-certificates.crt")
		}
		out, code, _ := w.run(s, `env -u SSL_CERT_FILE -u CURL_CA_BUNDLE curl -sS -H "Authorization: token $(sed -n 's/.*oauth_token: //p' "$GH_CONFIG_DIR/hosts.yml")" https://api.github.com/user`)
		if code != 0 || !strings.Contains(out, "octocat") {
			t.Fatalf("curl with the system's bundle: exit %d\n%s", code, out)
		}
		out, code, _ = w.run(s, `echo x >> /etc/ssl/certs/ca-certificates.crt`)
		if code == 0 {
			t.Fatalf("the system's bundle was writable inside:\n%s", out)
		}
	})

	// Java reads its roots from its own key store, where the wall shows the session's roots
	// and OpenWorker's authority as one; Java also ignores the proxy variables (the relay's
	// way).
	t.Run("java", func(t *testing.T) {
		out, code, _ := w.run(s, `cat > "$TMPDIR/Get.java" <<'EOF'
public class Get {
    public static void main(String[] a) throws Exception {
        var c = (java.net.HttpURLConnection) new java.net.URI(a[0]).toURL().openConnection();
        c.setRequestProperty("Authorization", "token " + a[1]);
        System.out.println(c.getResponseCode() + " " + new String(c.getInputStream().readAllBytes()));
    }
}
EOF
java "$TMPDIR/Get.java" https://api.github.com/user "$(sed -n 's/.*oauth_token: //p' "$GH_CONFIG_DIR/hosts.yml")" 2>&1`)
		if code != 0 || !strings.Contains(out, `200 {"login":"octocat"`) {
			t.Fatalf("java: exit %d\n%s", code, out)
		}
		out, code, _ = w.run(s, `echo x >> /etc/ssl/certs/java/cacerts`)
		if code == 0 {
			t.Fatalf("Java's key store was writable inside:\n%s", out)
		}
	})

	t.Run("client_that_does_not_trust_the_ca", func(t *testing.T) {
		before := len(api.saw())
		out, code, res := w.run(s, `curl -sS --cacert `+ca+` https://api.github.com/user`)
		if code == 0 {
			t.Fatalf("a client that trusts only the public CA reached api.github.com:\n%s", out)
		}
		if !strings.Contains(out, "SSL certificate problem") {
			t.Errorf("curl's own words:\n%s", out)
		}
		var reason string
		for _, b := range res.Blocked {
			if b.String() == "api.github.com:443" {
				reason = b.Reason
			}
		}
		for _, want := range []string{"reached with the gh login's stand-in", "did not trust OpenWorker's certificate authority", "SSL_CERT_FILE", "the gh login can be shared by copying it instead"} {
			if !strings.Contains(reason, want) {
				t.Errorf("the refusal %q lacks %q (blocked %v)", reason, want, res.Blocked)
			}
		}
		if len(api.saw()) != before {
			t.Errorf("api.github.com got a request: %q", api.saw()[before:])
		}
	})

	t.Run("audit", func(t *testing.T) {
		evMu.Lock()
		defer evMu.Unlock()
		var subs []string
		for _, e := range events {
			b, _ := json.Marshal(e)
			for _, real := range reals {
				if strings.Contains(string(b), real) {
					t.Fatalf("an audit event holds a real token: %s", b)
				}
			}
			if e.Type == audit.LoginStandIn {
				subs = append(subs, e.Login+"@"+e.Host+" by "+e.Command)
			}
		}
		for _, want := range []string{"gh@api.github.com by GH_NO_UPDATE_NOTIFIER=1 gh api user", "gh@github.com by set -e", "npm@registry.example.test by set -e; mkdir -p app", "docker@auth.docker.io by skopeo", "docker@docker.example.test by skopeo", "kubectl@kube.example.test by kubectl get", "kubectl@kube.example.test by kubectl --context admin", "aws-credentials@sts.us-east-1.amazonaws.com by aws sts", "aws-credentials@abc123.gr7.us-east-1.eks.amazonaws.com by kubectl --context eks", "terraform@app.terraform.io by set -e; mkdir -p \"$TMPDIR/tf\"", "gh@api.github.com by cat > \"$TMPDIR/Get.java\""} {
			if !slices.ContainsFunc(subs, func(s string) bool { return strings.HasPrefix(s, want) }) {
				t.Errorf("no substitution event %q among %q", want, subs)
			}
		}
	})
}

// kubeExec answers kubectl exec's WebSocket (remote command protocol v5 or v4): the command's
// output on the stdout channel, success on the status channel, then the close.
func kubeExec(rw http.ResponseWriter, r *http.Request, output string) {
	protocol := ""
	for _, p := range strings.Split(r.Header.Get("Sec-WebSocket-Protocol"), ",") {
		if p = strings.TrimSpace(p); (p == "v5.channel.k8s.io" || p == "v4.channel.k8s.io") && protocol == "" {
			protocol = p
		}
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || protocol == "" {
		http.Error(rw, `{"kind":"Status","status":"Failure","message":"WebSocket remote command only","code":400}`, http.StatusBadRequest)
		return
	}
	conn, brw, err := rw.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	accept := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(accept[:]) + "\r\nSec-WebSocket-Protocol: " + protocol + "\r\n\r\n")
	frame := func(opcode byte, payload []byte) { // unmasked, under 126 bytes
		brw.Write(append([]byte{0x80 | opcode, byte(len(payload))}, payload...))
	}
	frame(2, append([]byte{1}, output...))
	frame(2, append([]byte{3}, `{"metadata":{},"status":"Success"}`...))
	frame(8, []byte{0x03, 0xe8}) // close: normal
	brw.Flush()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	io.Copy(io.Discard, conn) // until kubectl closes too
}

// kubectlSpeaksWebSockets says whether the kubectl here runs exec over a WebSocket.
func kubectlSpeaksWebSockets(t *testing.T) bool {
	out, err := exec.Command("kubectl", "version", "--client", "-o", "json").Output()
	var v struct{ ClientVersion struct{ Major, Minor string } }
	if err != nil || json.Unmarshal(out, &v) != nil {
		t.Logf("kubectl version: %v\n%s", err, out)
		return false
	}
	var minor int
	fmt.Sscanf(v.ClientVersion.Minor, "%d", &minor)
	return v.ClientVersion.Major == "1" && minor >= 30
}
