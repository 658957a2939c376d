package session

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/xml"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
)

// mavenSettings is what the test reads back of settings.xml.
type mavenSettings struct {
	Proxies []struct {
		ID            string `xml:"id"`
		Active        bool   `xml:"active"`
		Protocol      string `xml:"protocol"`
		Host          string `xml:"host"`
		Port          string `xml:"port"`
		Username      string `xml:"username"`
		Password      string `xml:"password"`
		NonProxyHosts string `xml:"nonProxyHosts"`
	} `xml:"proxies>proxy"`
}

// Gradle and Maven get the session's proxy, its login included, through their own files in
// the sandbox home, which print nothing; the login's odd characters are escaped for each.
func TestJVMProxyFiles(t *testing.T) {
	home := t.TempDir()
	if err := writeJVMProxyFiles(home, "http://openworker:t%3Ck%26n%22%3D@127.0.0.1:53127", []string{"internal.example", "*.corp.example"}); err != nil {
		t.Fatal(err)
	}
	props, err := os.ReadFile(filepath.Join(home, ".gradle", "gradle.properties"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"systemProp.http.proxyHost=127.0.0.1", "systemProp.http.proxyPort=53127",
		"systemProp.https.proxyHost=127.0.0.1", "systemProp.https.proxyPort=53127",
		"systemProp.http.proxyUser=openworker", `systemProp.http.proxyPassword=t<k&n"\=`,
		"systemProp.https.proxyUser=openworker", `systemProp.https.proxyPassword=t<k&n"\=`,
		"systemProp.jdk.http.auth.tunneling.disabledSchemes=",
		"systemProp.http.nonProxyHosts=internal.example|*.corp.example",
	} {
		if !strings.Contains("\n"+string(props)+"\n", "\n"+want+"\n") {
			t.Errorf("gradle.properties lacks %s:\n%s", want, props)
		}
	}
	b, err := os.ReadFile(filepath.Join(home, ".m2", "settings.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var s mavenSettings
	if err := xml.Unmarshal(b, &s); err != nil {
		t.Fatalf("settings.xml: %v\n%s", err, b)
	}
	if len(s.Proxies) != 2 {
		t.Fatalf("settings.xml has %d proxies, want http and https:\n%s", len(s.Proxies), b)
	}
	for i, p := range s.Proxies {
		if p.Protocol != []string{"http", "https"}[i] || !p.Active || p.Host != "127.0.0.1" || p.Port != "53127" ||
			p.Username != "openworker" || p.Password != `t<k&n"=` || p.NonProxyHosts != "internal.example|*.corp.example" {
			t.Errorf("proxy %d: %+v", i, p)
		}
	}
	for _, f := range []string{".gradle/gradle.properties", ".m2/settings.xml"} {
		if fi, err := os.Stat(filepath.Join(home, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want owner-only", f, fi.Mode(), err)
		}
	}
	// No proxy (open or none): no files.
	empty := t.TempDir()
	if err := writeJVMProxyFiles(empty, "", nil); err != nil {
		t.Fatal(err)
	}
	if des, _ := os.ReadDir(empty); len(des) != 0 {
		t.Errorf("files without a proxy: %v", des)
	}
}

// Maven, with user.home the sandbox home as JAVA_TOOL_OPTIONS gives it, sends its requests
// through the session's proxy with the proxy's login: a stand-in proxy on loopback sees
// the CONNECT for a parent POM from a repository that is never reached (a loopback port
// where nothing listens, so that nothing leaves this machine even were the proxy not used).
func TestMavenTakesTheProxyFromItsSettings(t *testing.T) {
	if _, err := exec.LookPath("mvn"); err != nil {
		t.Skip("mvn is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var seen []string
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				r, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				auth := r.Header.Get("Proxy-Authorization")
				mu.Lock()
				seen = append(seen, r.Method+" "+r.Host+" "+auth)
				mu.Unlock()
				if auth == "" {
					c.Write([]byte("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"openworker\"\r\nContent-Length: 0\r\n\r\n"))
					return
				}
				c.Write([]byte("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"))
			}()
		}
	}()
	root := t.TempDir()
	home, project := filepath.Join(root, "home"), filepath.Join(root, "project")
	os.MkdirAll(home, 0o700)
	os.MkdirAll(project, 0o700)
	port := ln.Addr().(*net.TCPAddr).Port
	if err := writeJVMProxyFiles(home, "http://openworker:tok3n@127.0.0.1:"+strconv.Itoa(port), nil); err != nil {
		t.Fatal(err)
	}
	pom := `<project><modelVersion>4.0.0</modelVersion>
<parent><groupId>org.example.openworker</groupId><artifactId>parent</artifactId><version>1</version></parent>
<artifactId>child</artifactId><packaging>pom</packaging>
<repositories><repository><id>nowhere</id><url>https://127.0.0.1:9/maven</url></repository></repositories>
</project>`
	os.WriteFile(filepath.Join(project, "pom.xml"), []byte(pom), 0o600)
	cmd := exec.Command("mvn", "-B", "validate")
	cmd.Dir = project
	cmd.Env = append(os.Environ(), "JAVA_TOOL_OPTIONS="+javaToolOptions(home), "MAVEN_OPTS=")
	out, _ := cmd.CombinedOutput()
	mu.Lock()
	defer mu.Unlock()
	want := "CONNECT 127.0.0.1:9 Basic " + base64.StdEncoding.EncodeToString([]byte("openworker:tok3n"))
	for _, s := range seen {
		if s == want {
			return
		}
	}
	t.Fatalf("the proxy saw %q, not %q; Maven said:\n%s", seen, want, out)
}

// A Mac session with a proxy writes the files into its sandbox home, its JVMs see the home as
// user.home, and its git reads the session's system settings.
func TestMacSessionWritesJVMProxyFiles(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	exe, _ := os.Executable()
	m, err := NewManager(Options{Providers: map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}}, UserHome: f.home,
		StateDir: filepath.Join(f.home, "state-mac"), TmpRoot: f.tmpRoot, GOOS: "darwin", RunnerPath: exe,
		HostEnv: []string{"PATH=" + os.Getenv("PATH")}, DeveloperTools: func() DeveloperTools { return DeveloperTools{} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.EndAll)
	s, err := m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.Allowlist})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Exec(runner.ExecArgs{Command: `cat "$HOME/.m2/settings.xml" "$HOME/.gradle/gradle.properties" "$GIT_CONFIG_SYSTEM"; echo "$JAVA_TOOL_OPTIONS"`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout)
	for _, want := range []string{"<protocol>https</protocol>", "systemProp.https.proxyPassword=", "[credential]\n\thelper =\n", "-Duser.home=" + s.home} {
		if !strings.Contains(out, want) {
			t.Errorf("the session's home and JVM options lack %q:\n%s%s", want, out, res.Stderr)
		}
	}
}
