package credentials

import (
	"bytes"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/hosts"
	yaml "go.yaml.in/yaml/v3"
)

// original is what a file of the person's looked like before the copy.
type original struct {
	data  []byte
	mode  fs.FileMode
	mtime time.Time
}

// snapshot records every file under root, by its path, without following symlinks.
func snapshot(t *testing.T, root string) map[string]original {
	t.Helper()
	out := map[string]original{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		o := original{mode: st.Mode(), mtime: st.ModTime()}
		if st.Mode().IsRegular() {
			o.data, _ = os.ReadFile(p)
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			o.data = []byte(l)
		}
		out[p] = o
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func write(t *testing.T, path, text string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func noGh(t *testing.T) func(string) (string, error) {
	return func(host string) (string, error) {
		t.Errorf("gh auth token was run for %s, where the file has the token", host)
		return "", os.ErrNotExist
	}
}

func entries(t *testing.T, cs ...config.Credential) []Entry {
	t.Helper()
	for i := range cs {
		cs[i].Enabled = true
	}
	return Entries(cs)
}

func TestCopyIsOwnerOnlyAndLeavesOriginalsUntouched(t *testing.T) {
	home, sandbox := t.TempDir(), filepath.Join(t.TempDir(), "home")
	os.Mkdir(sandbox, 0o700)
	outside := t.TempDir()
	write(t, filepath.Join(outside, "elsewhere"), "not shared", 0o600)
	write(t, filepath.Join(home, "secret-elsewhere"), "in the home, outside the entry", 0o600)
	ssh := filepath.Join(home, ".ssh")
	write(t, filepath.Join(ssh, "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\nkey\n", 0o600)
	write(t, filepath.Join(ssh, "id_ed25519.pub"), "ssh-ed25519 AAAA me\n", 0o644)
	write(t, filepath.Join(ssh, "known_hosts"), "[127.0.0.1]:2222 ssh-ed25519 AAAA\n", 0o644)
	write(t, filepath.Join(ssh, "config"), "Host box\n  HostName 127.0.0.1\n", 0o644)
	write(t, filepath.Join(ssh, "conf.d", "work"), "Host work\n", 0o640)
	os.Symlink("conf.d/work", filepath.Join(ssh, "work-link"))                      // inside: followed
	os.Symlink(filepath.Join(home, "secret-elsewhere"), filepath.Join(ssh, "leak")) // out of the entry
	os.Symlink(filepath.Join(outside, "elsewhere"), filepath.Join(ssh, "leak2"))    // out of the home
	os.Symlink(".", filepath.Join(ssh, "loop"))                                     // back to the entry
	if err := syscall.Mkfifo(filepath.Join(ssh, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(ssh, "agent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	write(t, filepath.Join(home, ".aws", "credentials"), "[default]\naws_secret_access_key = x\n", 0o644)
	// Old modification times, so that a write would show.
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.Type()&(fs.ModeSymlink|fs.ModeSocket) == 0 {
			os.Chtimes(p, old, old)
		}
		return nil
	})
	before := snapshot(t, home)

	helper := filepath.Join(t.TempDir(), "openworker")
	write(t, helper, "#!/bin/sh\n", 0o755)
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox, Helper: helper, GhToken: noGh(t)},
		entries(t, config.Credential{Name: "ssh"}, config.Credential{Name: "aws-credentials"}, config.Credential{Name: "npm"}))
	if err != nil {
		t.Fatal(err)
	}

	if after := snapshot(t, home); len(after) != len(before) {
		t.Fatalf("the home folder changed: %d entries before, %d after", len(before), len(after))
	} else {
		for p, b := range before {
			a := after[p]
			if !bytes.Equal(a.data, b.data) || a.mode != b.mode || !a.mtime.Equal(b.mtime) {
				t.Errorf("original %s changed: %v %v %v → %v %v %v", p, b.mode, b.mtime, len(b.data), a.mode, a.mtime, len(a.data))
			}
		}
	}

	// Every copy is owner-only and holds the original's bytes.
	want := map[string]string{
		".ssh/id_ed25519":     "-----BEGIN OPENSSH PRIVATE KEY-----\nkey\n",
		".ssh/id_ed25519.pub": "ssh-ed25519 AAAA me\n",
		".ssh/known_hosts":    "[127.0.0.1]:2222 ssh-ed25519 AAAA\n",
		".ssh/config":         "Host box\n  HostName 127.0.0.1\n",
		".ssh/conf.d/work":    "Host work\n",
		".ssh/work-link":      "Host work\n",
		".aws/credentials":    "[default]\naws_secret_access_key = x\n",
	}
	var got []string
	filepath.WalkDir(sandbox, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.Lstat(p)
		rel, _ := filepath.Rel(sandbox, p)
		switch {
		case st.IsDir():
			if st.Mode().Perm() != 0o700 {
				t.Errorf("folder %s is %v, not 0700", rel, st.Mode().Perm())
			}
		case st.Mode().IsRegular():
			if rel == filepath.Join(SSHConfigDir, "openworker") || rel == filepath.Join(SSHConfigDir, "bin", "ssh") {
				// the ProxyCommand's program (a copy on Linux) and the ssh wrapper: owner-only, and they run
				if st.Mode().Perm() != 0o700 {
					t.Errorf("the helper %s is %v, not 0700", rel, st.Mode().Perm())
				}
				return nil
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("file %s is %v, not 0600", rel, st.Mode().Perm())
			}
			if !strings.HasPrefix(rel, SSHConfigDir) {
				got = append(got, rel)
				if b, _ := os.ReadFile(p); string(b) != want[rel] {
					t.Errorf("copy %s holds %q, want %q", rel, b, want[rel])
				}
			}
		default:
			t.Errorf("%s in the copy is %v, not a regular file or folder", rel, st.Mode())
		}
		return nil
	})
	slices.Sort(got)
	var wantNames []string
	for k := range want {
		wantNames = append(wantNames, k)
	}
	slices.Sort(wantNames)
	if !slices.Equal(got, wantNames) {
		t.Errorf("copied %v, want %v", got, wantNames)
	}

	leftOut := strings.Join(res.Entries[0].LeftOut, "\n")
	for _, w := range []string{"~/.ssh/leak is a symlink to", "~/.ssh/leak2 is a symlink to", "~/.ssh/fifo is a FIFO", "~/.ssh/agent.sock is a socket", "~/.ssh/loop is a symlink to a folder already copied"} {
		if !strings.Contains(leftOut, w) {
			t.Errorf("left out does not say %q:\n%s", w, leftOut)
		}
	}
	if res.Vars["AWS_SHARED_CREDENTIALS_FILE"] != filepath.Join(sandbox, ".aws", "credentials") {
		t.Errorf("AWS_SHARED_CREDENTIALS_FILE = %q", res.Vars["AWS_SHARED_CREDENTIALS_FILE"])
	}
	if !strings.Contains(res.Vars["GIT_SSH_COMMAND"], filepath.Join(sandbox, SSHConfigDir, "config")) {
		t.Errorf("GIT_SSH_COMMAND = %q", res.Vars["GIT_SSH_COMMAND"])
	}
	if len(res.PathFirst) != 1 || res.PathFirst[0] != filepath.Join(sandbox, SSHConfigDir, "bin") {
		t.Errorf("PATH first: %v", res.PathFirst)
	}
	if _, ok := res.Vars["NPM_CONFIG_USERCONFIG"]; ok || res.Entries[2].Found {
		t.Errorf("npm, which is not on this machine, was wired: %+v", res.Entries[2])
	}
	var hs []string
	for _, h := range res.Hosts {
		hs = append(hs, h.String())
	}
	if strings.Join(hs, " ") != "github.com:22 gitlab.com:22 *.amazonaws.com:443" {
		t.Errorf("hosts %v", hs)
	}
}

func TestSSHConfigComesFirstWithNoAgent(t *testing.T) {
	home, sandbox := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\n", 0o600)
	write(t, filepath.Join(home, ".ssh", "work_rsa"), "-----BEGIN RSA PRIVATE KEY-----\n", 0o600)
	write(t, filepath.Join(home, ".ssh", "id_ed25519.pub"), "ssh-ed25519 AAAA\n", 0o644)
	write(t, filepath.Join(home, ".ssh", "config"), "Host box\n", 0o600)
	helper := filepath.Join(t.TempDir(), "Open Worker's", "openworker")
	write(t, helper, "#!/bin/sh\necho helper\n", 0o755)
	if _, err := Copy(Options{UserHome: home, SandboxHome: sandbox, Helper: helper}, entries(t, config.Credential{Name: "ssh"})); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(sandbox, SSHConfigDir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	s := filepath.Join(sandbox, ".ssh")
	want := []string{
		"Host *",
		"  IdentityAgent none",
		`  UserKnownHostsFile "` + s + `/known_hosts"`,
		`  IdentityFile "` + s + `/id_ed25519"`,
		`  IdentityFile "` + s + `/work_rsa"`,
		`Include "` + s + `/config"`,
	}
	text := string(b)
	last := -1
	for _, w := range want {
		i := strings.Index(text, w+"\n")
		if i < 0 || i < last {
			t.Fatalf("the ssh config lacks %q (or has it out of order):\n%s", w, text)
		}
		last = i
	}
	// The ProxyCommand runs the helper, quoted for the shell, as the sandbox sees it.
	var cmd string
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "  ProxyCommand "); ok {
			cmd = rest
		}
	}
	out, err := exec.Command("sh", "-c", strings.TrimSuffix(cmd, " __connect %h %p")).Output()
	if !strings.HasSuffix(cmd, " __connect %h %p") || err != nil || string(out) != "helper\n" {
		t.Errorf("ProxyCommand %q ran: %q %v", cmd, out, err)
	}
	if strings.Contains(text, ".pub") {
		t.Errorf("a public key is named as an identity:\n%s", text)
	}
}

func TestCopyIsBounded(t *testing.T) {
	home, sandbox := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".config", "gcloud", "a-credentials.db"), "small", 0o600)
	write(t, filepath.Join(home, ".config", "gcloud", "logs", "big.log"), strings.Repeat("x", 4096), 0o600)
	write(t, filepath.Join(home, ".config", "gcloud", "z"), "z", 0o600)
	write(t, filepath.Join(home, ".config", "gcloud", "zz"), "zz", 0o600)
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox, MaxBytes: 1000, MaxFiles: 2}, entries(t, config.Credential{Name: "gcloud"}))
	if err != nil {
		t.Fatal(err)
	}
	c := res.Entries[0]
	if c.Files != 2 || c.Bytes != 6 {
		t.Errorf("copied %d files, %d bytes; want the two small files", c.Files, c.Bytes)
	}
	lo := strings.Join(c.LeftOut, "\n")
	if !strings.Contains(lo, "~/.config/gcloud/logs/big.log was not copied: it is 4096 bytes") || !strings.Contains(lo, "~/.config/gcloud/zz was not copied: the copies are limited to 2 files") {
		t.Errorf("left out:\n%s", lo)
	}
	if _, err := os.Stat(filepath.Join(sandbox, ".config", "gcloud", "logs", "big.log")); err == nil {
		t.Error("the file over the limit was copied")
	}
	if res.Vars["CLOUDSDK_CONFIG"] != filepath.Join(sandbox, ".config", "gcloud") {
		t.Errorf("CLOUDSDK_CONFIG = %q", res.Vars["CLOUDSDK_CONFIG"])
	}
}

func TestCopyFollowsAnEntryLinkOnlyInsideTheHome(t *testing.T) {
	home, sandbox, outside := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, "dotfiles", "npmrc"), "//registry/:_authToken=x\n", 0o600)
	os.Symlink(filepath.Join(home, "dotfiles", "npmrc"), filepath.Join(home, ".npmrc"))
	write(t, filepath.Join(outside, "tfrc"), "{}", 0o600)
	os.MkdirAll(filepath.Join(home, ".terraform.d"), 0o700)
	os.Symlink(filepath.Join(outside, "tfrc"), filepath.Join(home, ".terraform.d", "credentials.tfrc.json"))
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox}, entries(t, config.Credential{Name: "npm"}, config.Credential{Name: "terraform"}))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(sandbox, ".npmrc")); string(b) != "//registry/:_authToken=x\n" {
		t.Errorf("a dotfiles link in the home was not followed: %q", b)
	}
	if res.Vars["NPM_CONFIG_USERCONFIG"] != filepath.Join(sandbox, ".npmrc") {
		t.Errorf("NPM_CONFIG_USERCONFIG = %q", res.Vars["NPM_CONFIG_USERCONFIG"])
	}
	if _, err := os.Lstat(filepath.Join(sandbox, ".terraform.d", "credentials.tfrc.json")); err == nil {
		t.Error("a login linked to outside the home folder was copied")
	}
	if lo := strings.Join(res.Entries[1].LeftOut, "\n"); !strings.Contains(lo, "leads out of the home folder") {
		t.Errorf("left out: %q", lo)
	}
}

const kubeconfig = `apiVersion: v1
kind: Config
current-context: a
clusters:
- name: a
  cluster:
    server: https://k8s-a.example.com:6443
    certificate-authority: ca-a.crt
- name: b
  cluster:
    server: https://10.0.0.1
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJJTkxJTkUKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=
contexts:
- name: a
  context: {cluster: a, user: alice}
- name: b
  context: {cluster: b, user: bob}
users:
- name: alice
  user:
    client-certificate: HOME/.minikube/alice.crt
    client-key: OUTSIDE/alice.key
- name: bob
  user:
    client-certificate-data: Qk9CIENFUlQ=
    client-key-data: Qk9CIEtFWQ==
`

func TestKubeconfigFilesCopiedAndPathsRewritten(t *testing.T) {
	home, sandbox, outside := t.TempDir(), t.TempDir(), t.TempDir()
	text := strings.NewReplacer("HOME", home, "OUTSIDE", outside).Replace(kubeconfig)
	write(t, filepath.Join(home, ".kube", "config"), text, 0o600)
	write(t, filepath.Join(home, ".kube", "ca-a.crt"), "CA A", 0o644)
	write(t, filepath.Join(home, ".minikube", "alice.crt"), "ALICE CERT", 0o644)
	write(t, filepath.Join(outside, "alice.key"), "ALICE KEY", 0o600)

	servers, err := KubeServers(filepath.Join(home, ".kube", "config"))
	if err != nil || len(servers) != 2 || servers[0].String() != "k8s-a.example.com:6443" || servers[1].String() != "10.0.0.1:443" {
		t.Fatalf("servers %v %v", servers, err)
	}
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox}, entries(t, config.Credential{Name: "kubectl"}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Hosts, servers) {
		t.Errorf("hosts %v, want the servers %v", res.Hosts, servers)
	}
	if res.Vars["KUBECONFIG"] != filepath.Join(sandbox, ".kube", "config") {
		t.Errorf("KUBECONFIG = %q", res.Vars["KUBECONFIG"])
	}
	b, err := os.ReadFile(filepath.Join(sandbox, ".kube", "config"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Clusters []struct {
			Cluster map[string]string
		}
		Users []struct {
			User map[string]string
		}
	}
	if err := yaml.Unmarshal(b, &k); err != nil || len(k.Clusters) != 2 || len(k.Users) != 2 {
		t.Fatalf("the copy does not parse: %v\n%s", err, b)
	}
	if got := k.Clusters[0].Cluster["certificate-authority"]; got != filepath.Join(sandbox, ".kube", "ca-a.crt") {
		t.Errorf("certificate-authority rewritten to %q", got)
	}
	if got := k.Users[0].User["client-certificate"]; got != filepath.Join(sandbox, ".minikube", "alice.crt") {
		t.Errorf("client-certificate rewritten to %q", got)
	}
	if got := k.Users[0].User["client-key"]; got != filepath.Join(outside, "alice.key") {
		t.Errorf("a key outside the home folder: path %q, want it as it was", got)
	}
	for p, want := range map[string]string{".kube/ca-a.crt": "CA A", ".minikube/alice.crt": "ALICE CERT"} {
		st, err := os.Stat(filepath.Join(sandbox, p))
		if b, _ := os.ReadFile(filepath.Join(sandbox, p)); err != nil || string(b) != want || st.Mode().Perm() != 0o600 {
			t.Errorf("copy of %s: %q %v", p, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(sandbox, "alice.key")); err == nil {
		t.Error("a file outside the home folder was copied")
	}
	if lo := strings.Join(res.Entries[0].LeftOut, "\n"); !strings.Contains(lo, "alice.key (named in the kubeconfig) is outside the home folder") {
		t.Errorf("left out: %q", lo)
	}
	// Inline data is untouched.
	if k.Clusters[1].Cluster["certificate-authority-data"] != "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJJTkxJTkUKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=" ||
		k.Users[1].User["client-certificate-data"] != "Qk9CIENFUlQ=" || k.Users[1].User["client-key-data"] != "Qk9CIEtFWQ==" {
		t.Errorf("inline data changed:\n%s", b)
	}
}

// hostsKeychain is hosts.yml as gh writes it when the token is in the keychain.
const hostsKeychain = `github.com:
    users:
        octocat:
    git_protocol: ssh
    user: octocat
`

// hostsWithToken is hosts.yml as gh writes it with insecure storage.
const hostsWithToken = `github.com:
    users:
        octocat:
            oauth_token: gho_inthefile0123456789
    git_protocol: https
    oauth_token: gho_inthefile0123456789
    user: octocat
`

func TestGhTokenFromTheKeychain(t *testing.T) {
	home, sandbox := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".config", "gh", "hosts.yml"), hostsKeychain, 0o600)
	write(t, filepath.Join(home, ".config", "gh", "config.yml"), "git_protocol: ssh\n", 0o600)
	// A stand-in gh on PATH, run outside the sandbox, as the default lookup runs it.
	bin := t.TempDir()
	write(t, filepath.Join(bin, "gh"), "#!/bin/sh\n[ \"$1 $2 $3 $4\" = \"auth token --hostname github.com\" ] || exit 3\necho gho_fromthekeychain42\n", 0o755)
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	if rows := Rows(home); rows[1].Status() != "found (token in the keychain)" {
		t.Errorf("gh row: %q", rows[1].Status())
	}
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox}, entries(t, config.Credential{Name: "gh"}))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(sandbox, ".config", "gh", "hosts.yml"))
	var h map[string]map[string]any
	if err := yaml.Unmarshal(b, &h); err != nil || h["github.com"]["oauth_token"] != "gho_fromthekeychain42" || h["github.com"]["user"] != "octocat" {
		t.Fatalf("the copy's hosts.yml: %v\n%s", err, b)
	}
	if orig, _ := os.ReadFile(filepath.Join(home, ".config", "gh", "hosts.yml")); string(orig) != hostsKeychain {
		t.Errorf("the original hosts.yml changed:\n%s", orig)
	}
	if res.Vars["GH_CONFIG_DIR"] != filepath.Join(sandbox, ".config", "gh") {
		t.Errorf("GH_CONFIG_DIR = %q", res.Vars["GH_CONFIG_DIR"])
	}
	var hs []string
	for _, e := range res.Hosts {
		hs = append(hs, e.String())
	}
	if strings.Join(hs, " ") != "api.github.com:443 github.com:443" {
		t.Errorf("hosts %v", hs)
	}

	// A stand-in that prints more than a token writes nothing.
	write(t, filepath.Join(bin, "gh"), "#!/bin/sh\necho 'gho_x\nrm -rf /'\n", 0o755)
	sandbox2 := t.TempDir()
	res, err = Copy(Options{UserHome: home, SandboxHome: sandbox2}, entries(t, config.Credential{Name: "gh"}))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(sandbox2, ".config", "gh", "hosts.yml")); string(b) != hostsKeychain {
		t.Errorf("a bad answer from gh was written:\n%s", b)
	}
	if n := strings.Join(res.Entries[0].Notes, "\n"); !strings.Contains(n, "no token for github.com") {
		t.Errorf("notes: %s", n)
	}
}

func TestGhTokenInTheFileIsCopiedAsItIs(t *testing.T) {
	home, sandbox := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".config", "gh", "hosts.yml"), hostsWithToken, 0o600)
	if rows := Rows(home); rows[1].Status() != "found" {
		t.Errorf("gh row: %q", rows[1].Status())
	}
	if _, err := Copy(Options{UserHome: home, SandboxHome: sandbox, GhToken: noGh(t)}, entries(t, config.Credential{Name: "gh"})); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(sandbox, ".config", "gh", "hosts.yml")); string(b) != hostsWithToken {
		t.Errorf("the copy is not the file as it is:\n%s", b)
	}
}

func TestRows(t *testing.T) {
	home := t.TempDir()
	write(t, filepath.Join(home, ".docker", "config.json"), `{"auths":{"ghcr.io":{"auth":"eDp5"}},"credsStore":"desktop"}`, 0o600)
	write(t, filepath.Join(home, ".aws", "config"), "[default]\n", 0o000)
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	got := map[string]string{}
	for _, r := range Rows(home) {
		got[r.Name] = r.Status()
	}
	if got["ssh"] != "found" || got["npm"] != "not found" || got["kubectl"] != "not found" {
		t.Errorf("rows %v", got)
	}
	if !strings.Contains(got["docker"], "found (the credential helper docker-credential-desktop (credsStore) named in it cannot run inside") {
		t.Errorf("docker row %q", got["docker"])
	}
	if os.Geteuid() != 0 && got["aws-config"] != "not found" {
		t.Errorf("an unreadable file is %q", got["aws-config"])
	}
	var names []string
	for _, it := range Catalog() {
		names = append(names, it.Name)
	}
	if !slices.Equal(names, config.CatalogNames()) {
		t.Errorf("the catalog is %v, the settings know %v", names, config.CatalogNames())
	}
}

func TestDockerHelpersTakenOutOfTheCopy(t *testing.T) {
	home, sandbox := t.TempDir(), t.TempDir()
	orig := `{"auths":{"ghcr.io":{"auth":"eDp5"}},"credsStore":"desktop","credHelpers":{"gcr.io":"gcloud"}}`
	write(t, filepath.Join(home, ".docker", "config.json"), orig, 0o600)
	os.MkdirAll(filepath.Join(home, ".docker", "run"), 0o700)
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox}, entries(t, config.Credential{Name: "docker"}))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(sandbox, ".docker", "config.json"))
	if strings.Contains(string(b), "credsStore") || strings.Contains(string(b), "credHelpers") || !strings.Contains(string(b), `"auth": "eDp5"`) {
		t.Errorf("the copy:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(sandbox, ".docker", "run")); err == nil {
		t.Error("more than config.json was copied")
	}
	if res.Vars["DOCKER_CONFIG"] != filepath.Join(sandbox, ".docker") {
		t.Errorf("DOCKER_CONFIG = %q", res.Vars["DOCKER_CONFIG"])
	}
}

func TestPathEntry(t *testing.T) {
	home, sandbox := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".config", "tool", "tool.toml"), "token = 1\n", 0o644)
	h, _ := hosts.Parse("api.tool.example:443")
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox},
		entries(t, config.Credential{Path: ".config/tool", Label: config.LabelCredential, Hosts: []hosts.Entry{h}, Var: "TOOL_HOME"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Vars["TOOL_HOME"] != filepath.Join(sandbox, ".config", "tool") || len(res.Hosts) != 1 || res.Hosts[0] != h {
		t.Errorf("vars %v hosts %v", res.Vars, res.Hosts)
	}
	if st, err := os.Stat(filepath.Join(sandbox, ".config", "tool", "tool.toml")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("copy: %v %v", st, err)
	}
}

// BenchmarkCopySSH is the cost an ssh login adds to a session's start: a ~/.ssh of a few
// keys and, on Linux, the copy of a 14 MB helper binary.
func BenchmarkCopySSH(b *testing.B) {
	home := b.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	for _, n := range []string{"id_ed25519", "id_rsa", "known_hosts", "config"} {
		os.WriteFile(filepath.Join(home, ".ssh", n), bytes.Repeat([]byte("k"), 4096), 0o600)
	}
	helper := filepath.Join(b.TempDir(), "openworker")
	os.WriteFile(helper, bytes.Repeat([]byte{0x7f}, 14<<20), 0o755)
	es := Entries([]config.Credential{{Name: "ssh", Enabled: true}})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sandbox := filepath.Join(b.TempDir(), "home")
		os.Mkdir(sandbox, 0o700)
		if _, err := Copy(Options{UserHome: home, SandboxHome: sandbox, Helper: helper}, es); err != nil {
			b.Fatal(err)
		}
	}
}

// Nothing in a folder a session has had writable is copied: a command there could have
// planted a link to a login the person did not share, or swap one in while the copy runs.
func TestCopySkipsFoldersASessionHadWritable(t *testing.T) {
	home, sandbox := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".aws", "credentials"), "[default]\nsecret\n", 0o600)
	proj := filepath.Join(home, "code", "proj")
	os.MkdirAll(proj, 0o755)
	os.Symlink(filepath.Join(home, ".aws"), filepath.Join(proj, ".tool")) // planted by a command
	write(t, filepath.Join(home, "code", "notes", "n.txt"), "notes", 0o600)
	os.Symlink(filepath.Join(proj, ".tool"), filepath.Join(home, "code", "link")) // into the untrusted folder
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox, Untrusted: []string{proj}}, entries(t,
		config.Credential{Path: "code/proj/.tool", Label: config.LabelCredential},
		config.Credential{Path: "code", Label: config.LabelConfiguration}))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	filepath.WalkDir(sandbox, func(p string, d fs.DirEntry, err error) error {
		if d != nil && !d.IsDir() {
			rel, _ := filepath.Rel(sandbox, p)
			found = append(found, rel)
		}
		return nil
	})
	if !slices.Equal(found, []string{"code/notes/n.txt"}) {
		t.Errorf("copied %v; want only the notes, nothing from the folder a session had writable", found)
	}
	lo := strings.Join(append(res.Entries[0].LeftOut, res.Entries[1].LeftOut...), "\n")
	for _, w := range []string{"~/code/proj/.tool is in a folder a session has had writable", "~/code/proj is in a folder a session has had writable", "~/code/link is a symlink to"} {
		if !strings.Contains(lo, w) {
			t.Errorf("left out does not say %q:\n%s", w, lo)
		}
	}
}

// TestSSHAgentModeCopiesNoPrivateKey: with keys = "agent", every private key file stays
// outside, in whatever format and folder, while the config, known hosts and public keys are
// copied, and ssh and git are pointed at the session's agent with no identity file.
func TestSSHAgentModeCopiesNoPrivateKey(t *testing.T) {
	home, sandbox := t.TempDir(), t.TempDir()
	ssh := filepath.Join(home, ".ssh")
	private := map[string]string{
		"id_ed25519":      "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
		"work_rsa":        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\n",
		"keys/deploy":     "-----BEGIN PRIVATE KEY-----\nMC4CAQ\n-----END PRIVATE KEY-----\n",
		"old.ppk":         "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n",
		"commercial_key":  "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nP2/56w\n",
		"no_newline_head": strings.Repeat(" ", 10) + "-----BEGIN EC PRIVATE KEY-----",
	}
	for name, text := range private {
		write(t, filepath.Join(ssh, name), text, 0o600)
	}
	kept := map[string]string{"id_ed25519.pub": "ssh-ed25519 AAAA me\n", "known_hosts": "github.com ssh-ed25519 AAAA\n", "config": "Host box\n"}
	for name, text := range kept {
		write(t, filepath.Join(ssh, name), text, 0o644)
	}
	sock := filepath.Join(t.TempDir(), "ssh-agent.sock")
	res, err := Copy(Options{UserHome: home, SandboxHome: sandbox, Helper: "/bin/true", SSHAgentSocket: sock},
		entries(t, config.Credential{Name: "ssh", Keys: config.SSHKeysAgent}))
	if err != nil {
		t.Fatal(err)
	}
	for name := range private {
		if _, err := os.Lstat(filepath.Join(sandbox, ".ssh", name)); err == nil {
			t.Errorf("the private key %s was copied", name)
		}
	}
	for name, text := range kept {
		if b, err := os.ReadFile(filepath.Join(sandbox, ".ssh", name)); err != nil || string(b) != text {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
	if res.SSHAgent != sock || res.Vars["SSH_AUTH_SOCK"] != sock {
		t.Errorf("the agent's socket: %q, SSH_AUTH_SOCK=%q", res.SSHAgent, res.Vars["SSH_AUTH_SOCK"])
	}
	b, _ := os.ReadFile(filepath.Join(sandbox, SSHConfigDir, "config"))
	if !strings.Contains(string(b), "  IdentityAgent \""+sock+"\"\n") || strings.Contains(string(b), "IdentityFile") {
		t.Errorf("the ssh config:\n%s", b)
	}
	if len(res.Entries) != 1 || !slices.ContainsFunc(res.Entries[0].LeftOut, func(n string) bool {
		return strings.Contains(n, "~/.ssh/id_ed25519 holds a private key; it stays outside")
	}) {
		t.Errorf("left out: %+v", res.Entries)
	}
	// Copy mode, the same folder: the keys are copied, as before.
	sandbox2 := t.TempDir()
	res, err = Copy(Options{UserHome: home, SandboxHome: sandbox2, Helper: "/bin/true", SSHAgentSocket: sock},
		entries(t, config.Credential{Name: "ssh", Keys: config.SSHKeysCopy}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sandbox2, ".ssh", "id_ed25519")); err != nil || res.SSHAgent != "" || res.Vars["SSH_AUTH_SOCK"] != "" {
		t.Errorf("copy mode: %v, agent %q", err, res.SSHAgent)
	}
}
