package credentials

import (
	"os"
	"path"
	"slices"
	"strings"

	"github.com/openworker/openworker/core/hosts"
	yaml "go.yaml.in/yaml/v3"
)

// An EKS cluster's kubeconfig user runs `aws eks get-token` (or aws-iam-authenticator),
// which presigns an STS request with the AWS secret and hands it to kubectl as a bearer
// token; the cluster checks it with STS itself. With the AWS login a stand-in, that token is
// signed with the stand-in secret, so OpenWorker ends TLS for the cluster's server too, and
// signs the token again with the real secret on the way (proxy.SigV4.EKSClusters: the
// signature covers the cluster's name, which only the kubeconfig says). kubectl trusts only
// the cluster's authority, so the copy names OpenWorker's for those clusters, and the proxy
// verifies the server with the cluster's own.

// eksStandIns binds the AWS stand-ins of res to the EKS clusters of the kubeconfig's copy
// at kubeconfig whose users get their tokens from AWS, and makes those clusters' copies
// trust OpenWorker's authority.
func (c *copier) eksStandIns(kubeconfig string, res *Result) error {
	var keys []StandIn
	for _, s := range res.StandIns {
		if s.AccessKeyID != "" && !slices.ContainsFunc(keys, func(k StandIn) bool { return k.AccessKeyID == s.AccessKeyID }) {
			keys = append(keys, s)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		return nil // no copy of it: nothing to bind
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil {
		return nil
	}
	root := yamlRoot(&doc)
	clusters, users := kubeNamed(root, "clusters", "cluster"), kubeNamed(root, "users", "user")
	names := map[string][]string{} // cluster -> the EKS names its users' tokens are for
	for _, ctx := range kubeNamed(root, "contexts", "context") {
		cl, u := scalar(ctx, "cluster"), users[scalar(ctx, "user")]
		if n := eksClusterName(u); n != "" && clusters[cl] != nil && !slices.Contains(names[cl], n) {
			names[cl] = append(names[cl], n)
		}
	}
	changed := false
	for cl, ns := range names {
		m := clusters[cl]
		t, v, why := c.kubeCluster(cl, m)
		rewritten := false
		for _, s := range res.StandIns {
			if kv, ok := s.Verify[t.String()]; ok && s.Login == "kubectl" && why == "" {
				// A kubectl stand-in made this cluster's copy trust OpenWorker already:
				// its server is verified as that stand-in says.
				v, rewritten = kv, true
			}
		}
		if why != "" || !strings.HasSuffix(t.Host, ".amazonaws.com") {
			if why != "" {
				c.cur.Notes = append(c.cur.Notes, "the EKS cluster "+cl+" will refuse the tokens its users make inside (they are signed with the AWS login's stand-in, and OpenWorker cannot sign them again: "+why+"); share aws-credentials by copying it to use it")
			}
			continue
		}
		if c.o.StandInCA == nil {
			return nil
		}
		caPEM, err := c.o.StandInCA()
		if err != nil {
			c.cur.Notes = append(c.cur.Notes, "the EKS cluster "+cl+" will refuse the tokens its users make inside: OpenWorker's certificate authority could not be read ("+err.Error()+")")
			continue
		}
		for _, k := range keys {
			s := k
			s.Hosts = []hosts.Entry{t}
			s.Verify = map[string]Verify{t.String(): v}
			s.EKSClusters = slices.Clone(ns)
			res.StandIns = append(res.StandIns, s)
		}
		if !slices.Contains(res.Hosts, t) {
			res.Hosts = append(res.Hosts, t)
		}
		if !rewritten {
			trustOnly(m, caPEM)
			changed = true
		}
		c.cur.Notes = append(c.cur.Notes, "the EKS cluster "+cl+"'s tokens, made inside with the AWS login's stand-in, are signed again with the real secret on their way to "+t.String())
	}
	if !changed {
		return nil
	}
	return writeKubeconfig(kubeconfig, &doc)
}

// eksClusterName is the EKS cluster whose token the kubeconfig user u gets from AWS
// (`aws eks get-token --cluster-name NAME`, `aws-iam-authenticator token -i NAME`), or "".
func eksClusterName(u *yaml.Node) string {
	exec := mapValue(u, "exec")
	if exec == nil {
		return ""
	}
	var args []string
	if a := mapValue(exec, "args"); a != nil && a.Kind == yaml.SequenceNode {
		for _, n := range a.Content {
			args = append(args, n.Value)
		}
	}
	flag := func(names ...string) string {
		for i, a := range args {
			for _, n := range names {
				if a == n && i+1 < len(args) {
					return args[i+1]
				}
				if v, ok := strings.CutPrefix(a, n+"="); ok {
					return v
				}
			}
		}
		return ""
	}
	switch path.Base(scalar(exec, "command")) {
	case "aws":
		if slices.Contains(args, "eks") && slices.Contains(args, "get-token") {
			return flag("--cluster-name", "--cluster-id")
		}
	case "aws-iam-authenticator":
		if slices.Contains(args, "token") {
			return flag("-i", "--cluster-id")
		}
	}
	return ""
}

// kubeNamed are the mappings under item of each element of the list named list, by name.
func kubeNamed(root *yaml.Node, list, item string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if seq := mapValue(root, list); seq != nil && seq.Kind == yaml.SequenceNode {
		for _, el := range seq.Content {
			if name := mapValue(el, "name"); name != nil {
				if m := mapValue(el, item); m != nil && m.Kind == yaml.MappingNode {
					out[name.Value] = m
				}
			}
		}
	}
	return out
}
