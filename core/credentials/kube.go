package credentials

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"

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
	for _, n := range paths {
		if n.Value == "" {
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
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("rewriting the kubeconfig's copy: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return entries, writeCopy(dst, out.Bytes())
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

// kubeWalk returns the clusters' servers and the value nodes of every key that names a file.
func kubeWalk(doc *yaml.Node) (servers []string, paths []*yaml.Node) {
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
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
					paths = append(paths, v)
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
