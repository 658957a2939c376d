package session

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// writeJVMProxyFiles writes, into the sandbox home home, the files through which Gradle and
// Maven take the session's proxy at proxyURL (its login included) on a Mac, where Java reads
// no proxy variable: Gradle's gradle.properties (systemProp.*, which Gradle sets in its JVM
// and the wrapper's download) and Maven's settings.xml (<proxies>). Unlike JAVA_TOOL_OPTIONS,
// which every JVM prints, neither file is shown. No proxy (open or none network): nothing.
// Other JVM programs are given -Dhttps.proxyHost and its kin by whoever runs them.
func writeJVMProxyFiles(home, proxyURL string, noProxy []string) error {
	if proxyURL == "" {
		return nil
	}
	u, err := url.Parse(proxyURL)
	if err != nil || u.Hostname() == "" || u.Port() == "" {
		return fmt.Errorf("the proxy's address %q names no host and port", proxyURL)
	}
	user, pass := "", ""
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
	}
	hosts := strings.Join(noProxy, "|")

	var props strings.Builder
	props.WriteString("# Written by OpenWorker for this session: Gradle, the JVMs it starts and its wrapper's\n# download reach the network through the session's proxy only.\n")
	prop := func(k, v string) { fmt.Fprintf(&props, "systemProp.%s=%s\n", k, propertyValue(v)) }
	for _, scheme := range []string{"http", "https"} {
		prop(scheme+".proxyHost", u.Hostname())
		prop(scheme+".proxyPort", u.Port())
		if user != "" {
			prop(scheme+".proxyUser", user)
			prop(scheme+".proxyPassword", pass)
		}
	}
	// Java sends a proxy's Basic login on a CONNECT only when Basic is not disabled for
	// tunnels, as it is by default.
	prop("jdk.http.auth.tunneling.disabledSchemes", "")
	prop("http.nonProxyHosts", hosts)

	var m bytes.Buffer
	m.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- Written by OpenWorker for this session: Maven reaches the network through the session's proxy only. -->\n")
	m.WriteString("<settings xmlns=\"http://maven.apache.org/SETTINGS/1.0.0\">\n  <proxies>\n")
	text := func(s string) string {
		var b bytes.Buffer
		_ = xml.EscapeText(&b, []byte(s))
		return b.String()
	}
	for _, scheme := range []string{"http", "https"} {
		fmt.Fprintf(&m, "    <proxy>\n      <id>openworker-%s</id>\n      <active>true</active>\n      <protocol>%s</protocol>\n      <host>%s</host>\n      <port>%s</port>\n",
			scheme, scheme, text(u.Hostname()), text(u.Port()))
		if user != "" {
			fmt.Fprintf(&m, "      <username>%s</username>\n      <password>%s</password>\n", text(user), text(pass))
		}
		fmt.Fprintf(&m, "      <nonProxyHosts>%s</nonProxyHosts>\n    </proxy>\n", text(hosts))
	}
	m.WriteString("  </proxies>\n</settings>\n")

	for name, data := range map[string][]byte{
		filepath.Join(home, ".gradle", "gradle.properties"): []byte(props.String()),
		filepath.Join(home, ".m2", "settings.xml"):          m.Bytes(),
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(name, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// propertyValue escapes v for a Java properties file: a backslash before each character the
// format reads (\ = : # !), and newlines and other controls as \uXXXX.
func propertyValue(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case strings.ContainsRune(`\=:#!`, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
