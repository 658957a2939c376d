// Package credentials is the logins a person shares with the sandbox on purpose: the
// catalog of CLI logins offered by "Add… ▸ A CLI's login" (each found or not found on this
// machine), and the copy of every enabled entry into a session's private home when it starts
// — owner-only, regular files only, bounded in size, with the variable its tool reads pointed
// at the copy, the hosts it needs, a kubeconfig's files and paths, a GitHub CLI token kept in
// the keychain, and ssh wired through the session's proxy: with the copied keys and no agent,
// or, when the keys stay outside, with no private key copied and the session's own agent.
//
// It decides nothing about which entries are enabled (the settings do) and enforces nothing:
// the copy sits in the session's private tmp, which the session removes when it ends and the
// session manager's cleanup removes after a crash. The real files are only ever read.
package credentials

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/internal/regularfile"
)

// Item is one row of "Add… ▸ A CLI's login".
type Item struct {
	Name  string // the catalog name written in the settings ("ssh")
	Title string // what the list shows ("SSH keys")
	// Path is where the login lives, relative to the home folder.
	Path   string
	Folder bool
	Label  string // config.LabelCredential or config.LabelConfiguration
	Lets   string // what sharing it lets the agent do
	// Var is the variable pointed at the copy ("" when the tool finds it under $HOME);
	// VarFolder points it at the copy's folder rather than the file (DOCKER_CONFIG).
	Var       string
	VarFolder bool
	// Hosts join the session's allow list. For kubectl they are read from the kubeconfig.
	Hosts []hosts.Entry
}

func mustHosts(ss ...string) []hosts.Entry {
	var out []hosts.Entry
	for _, s := range ss {
		e, err := hosts.Parse(s)
		if err != nil {
			// The catalog below is fixed and tested; a bad entry is a defect of this file.
			panic(fmt.Sprintf("credentials: catalog host %s: %v", s, err))
		}
		out = append(out, e)
	}
	return out
}

// npmHosts are the npm registry's hosts, as "Choose sites…" knows them.
func npmHosts() []hosts.Entry {
	g, _ := hosts.CatalogGroup("npm")
	return g.Entries
}

// Catalog returns the CLI logins offered, in the order they are shown. Each call returns
// fresh values.
func Catalog() []Item {
	return []Item{
		{Name: "ssh", Title: "SSH keys", Path: ".ssh", Folder: true, Label: config.LabelCredential,
			Lets:  "push and pull over SSH, and log in to servers, as you",
			Hosts: mustHosts("github.com:22", "gitlab.com:22")},
		{Name: "gh", Title: "GitHub CLI", Path: ".config/gh", Folder: true, Label: config.LabelCredential, Var: "GH_CONFIG_DIR",
			Lets:  "pull requests, issues and releases as you",
			Hosts: mustHosts("api.github.com:443", "github.com:443")},
		{Name: "aws-config", Title: "AWS profiles", Path: ".aws/config", Label: config.LabelConfiguration, Var: "AWS_CONFIG_FILE",
			Lets:  "regions and profile names, no keys",
			Hosts: mustHosts("*.amazonaws.com:443")},
		{Name: "aws-credentials", Title: "AWS credentials", Path: ".aws/credentials", Label: config.LabelCredential, Var: "AWS_SHARED_CREDENTIALS_FILE",
			Lets:  "your access keys",
			Hosts: mustHosts("*.amazonaws.com:443")},
		{Name: "kubectl", Title: "kubectl", Path: ".kube/config", Label: config.LabelCredential, Var: "KUBECONFIG",
			Lets: "your clusters"},
		{Name: "npm", Title: "npm", Path: ".npmrc", Label: config.LabelCredential, Var: "NPM_CONFIG_USERCONFIG",
			Lets:  "install and publish private packages",
			Hosts: npmHosts()},
		{Name: "docker", Title: "Docker registries", Path: ".docker/config.json", Label: config.LabelCredential, Var: "DOCKER_CONFIG", VarFolder: true,
			Lets:  "push and pull images with your registry logins (those a credential helper keeps only as stand-ins)",
			Hosts: mustHosts("registry-1.docker.io:443", "auth.docker.io:443", "index.docker.io:443", "production.cloudflare.docker.com:443", "ghcr.io:443")},
		{Name: "gcloud", Title: "gcloud", Path: ".config/gcloud", Folder: true, Label: config.LabelCredential, Var: "CLOUDSDK_CONFIG",
			Lets:  "your Google Cloud accounts and projects",
			Hosts: mustHosts("*.googleapis.com:443", "accounts.google.com:443")},
		{Name: "terraform", Title: "Terraform Cloud", Path: ".terraform.d/credentials.tfrc.json", Label: config.LabelCredential,
			Lets:  "runs and state in Terraform Cloud as you",
			Hosts: mustHosts("app.terraform.io:443", "registry.terraform.io:443", "releases.hashicorp.com:443")},
	}
}

// Lookup returns the catalog item called name.
func Lookup(name string) (Item, bool) {
	for _, it := range Catalog() {
		if it.Name == name {
			return it, true
		}
	}
	return Item{}, false
}

// Row is a catalog item as found on this machine.
type Row struct {
	Item
	Found bool
	// Note adds what the person should know: the token is in the keychain, a credential
	// helper cannot run inside, the file cannot be read.
	Note string
}

// Status is the row's word: "found", "found (token in the keychain)", "not found".
func (r Row) Status() string {
	switch {
	case !r.Found:
		return "not found"
	case r.Note != "":
		return "found (" + r.Note + ")"
	}
	return "found"
}

// Rows returns the catalog as found under home: found means the file or folder exists and
// can be read. Nothing is copied and no token is read.
func Rows(home string) []Row {
	var out []Row
	for _, it := range Catalog() {
		r := Row{Item: it}
		p := filepath.Join(home, it.Path)
		r.Found = readable(p, it.Folder)
		if r.Found {
			switch it.Name {
			case "gh":
				if hs, err := ghHostsWithoutToken(filepath.Join(p, "hosts.yml")); err == nil && len(hs) > 0 {
					r.Note = "token in the keychain"
				}
			case "docker":
				if helpers := dockerHelpers(p); len(helpers) > 0 {
					r.Note = "the credential helper " + helpers[0] + " named in it cannot run inside; only the logins saved in the file work"
				}
			}
		} else if _, err := os.Lstat(p); err == nil {
			r.Note = "cannot be read"
		}
		out = append(out, r)
	}
	return out
}

func readable(p string, folder bool) bool {
	st, err := os.Stat(p)
	if err != nil || st.IsDir() != folder {
		return false
	}
	if folder {
		_, err = os.ReadDir(p)
		return err == nil
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// dockerHelpers returns the credential helpers a Docker config.json names (credsStore, then
// credHelpers), which cannot run inside the sandbox.
func dockerHelpers(path string) []string {
	b, err := regularfile.Read(path, 1<<20)
	if err != nil {
		return nil
	}
	var c struct {
		CredsStore  string            `json:"credsStore"`
		CredHelpers map[string]string `json:"credHelpers"`
	}
	if json.Unmarshal(b, &c) != nil {
		return nil
	}
	var out []string
	if c.CredsStore != "" {
		out = append(out, "docker-credential-"+c.CredsStore+" (credsStore)")
	}
	for _, h := range c.CredHelpers {
		out = append(out, "docker-credential-"+h+" (credHelpers)")
	}
	return out
}

// Found says whether a file or folder of the person's own exists and can be read, and
// whether it is a folder.
func Found(path string) (folder, found bool) {
	st, err := os.Stat(path)
	if err != nil {
		return false, false
	}
	return st.IsDir(), readable(path, st.IsDir())
}
