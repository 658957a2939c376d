package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/apiclient"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/credentials/connect"
	"github.com/openworker/openworker/core/termtext"
)

var credentialsCommand = command{
	name:     "credentials",
	synopsis: "credentials list|add|add-path|enable|disable|remove|ssh-keys|secrets …",
	about: `The logins shared with the sandbox on purpose (` + credentialsWhere + `).
By default a session has none of your logins. An entry added and switched on is copied,
owner-only, into the private home of every session started afterwards, with the variable its
tool reads pointed at the copy and its hosts on the session's allow list; the copy goes with
the session. A running session keeps what it started with.

  credentials list                 the entries with their switches and hosts (for SSH keys
                                   kept outside, the files of ~/.ssh a session leaves out,
                                   and why), and the CLI logins this machine has (found or
                                   not found)
  credentials add NAME             share a CLI's login: ssh, gh, aws-config, aws-credentials,
                                   kubectl, npm, docker, gcloud, terraform
  credentials add gh|npm|docker|kubectl|aws-credentials|terraform --stand-in|--copy
                                   --stand-in (the default where the login can be one): the
                                   sandbox gets the login's files with a stand-in for each
                                   secret, worthless anywhere; OpenWorker keeps the real one
                                   outside and puts it on requests to the login's own hosts
                                   (GitHub's API and git over https; the registries in
                                   .npmrc; the registries in config.json, including logins
                                   its credential helpers keep; the clusters in the
                                   kubeconfig; AWS, whose requests it signs again with the
                                   real secret; Terraform Cloud and Enterprise hosts) and
                                   nowhere else. --copy: the real secrets are copied into the
                                   sandbox, and any command there can read them and send them
                                   to any site it may reach. The other logins are always
                                   copied (credentials list says why)
  credentials secrets NAME stand-in|copy
                                   switch how an added login shares its secrets
  credentials add ssh --agent|--copy
                                   --agent (the default): your SSH keys stay outside; ssh and
                                   git inside use OpenWorker's agent, which asks you on a card
                                   before it signs in to each host with a key. --copy: the
                                   keys are copied into the sandbox, and any command there
                                   can read them
  credentials ssh-keys agent|copy  switch how the added ssh login shares its keys
  credentials add-path PATH --label credential|configuration [--host H]… [--var NAME]
                                   share a file or folder under the home folder
  credentials enable NAME          switch an entry on (NAME: a login's name or ~/path)
  credentials disable NAME         switch it off
  credentials remove NAME          take it out of the settings`,
	example: "openworker credentials add ssh\nopenworker credentials add-path ~/.config/tool --label credential --host api.tool.example:443 --var TOOL_CONFIG",
	minArgs: 1, maxArgs: -1,
	needs: "list, add, add-path, enable, disable, remove, ssh-keys or secrets",
}

var credentialsAddPathCommand = command{
	name:     "credentials add-path",
	synopsis: "credentials add-path PATH --label credential|configuration [--host HOST[:PORT]]… [--var NAME] [--off]",
	about: `Shares a file or folder under the home folder with the sessions started afterwards: copied
owner-only into their private home at the same place, labelled credential (a secret inside) or
configuration (host names, profiles, options), with the hosts its tool needs and, with --var,
a variable pointed at the copy. PATH is ~/… or a path (relative to the current folder) that
lies under the home folder.`,
	example: "openworker credentials add-path ~/.config/tool --label credential --host api.tool.example:443 --var TOOL_CONFIG",
	minArgs: 1, maxArgs: 1,
	needs: "a file or folder under the home folder",
}

func cmdCredentials(args []string) error {
	if len(args) > 0 && args[0] == "add-path" {
		return cmdCredentialsAddPath(args[1:])
	}
	fs := newFlags(credentialsCommand)
	off := fs.Bool("off", false, "with add: add the entry switched off")
	agentKeys := fs.Bool("agent", false, "with add ssh: the keys stay outside, used through OpenWorker's agent (the default)")
	copyKeys := fs.Bool("copy", false, "with add: the keys or tokens are copied into the sandbox")
	standIn := fs.Bool("stand-in", false, "with add gh, npm, docker, kubectl, aws-credentials or terraform: the tokens stay outside, and the sandbox gets stand-ins (the default)")
	pos, _, err := parse(fs, credentialsCommand, args)
	if err != nil {
		return err
	}
	switch pos[0] {
	case "list":
		if len(pos) != 1 {
			return usagef("credentials", "credentials list takes nothing more")
		}
		return credentialsList()
	case "add", "enable", "disable", "remove":
		if len(pos) != 2 {
			return usagef("credentials", "credentials %s needs one NAME: a CLI's login (openworker credentials list shows them) or the ~/path of an entry", pos[0])
		}
		req := api.CredentialsRequest{Action: pos[0], Name: pos[1], Off: *off}
		ssh := pos[1] == "ssh"
		switch {
		case (*agentKeys || *copyKeys || *standIn) && pos[0] != "add":
			return usagef("credentials", "--agent, --stand-in and --copy are for credentials add; to switch an added login use credentials ssh-keys agent|copy or credentials secrets NAME stand-in|copy")
		case *agentKeys && *copyKeys:
			return usagef("credentials", "--agent and --copy are two ways to share the SSH keys; give one")
		case *standIn && *copyKeys:
			return usagef("credentials", "--stand-in and --copy are two ways to share a login's tokens; give one")
		case *agentKeys && !ssh:
			return usagef("credentials", "--agent is for credentials add ssh; for %s use --stand-in or --copy", standInNames())
		case *standIn && ssh:
			return usagef("credentials", "the ssh login's keys stay outside with --agent (the default); --stand-in is for %s", standInNames())
		case *agentKeys:
			req.Keys = "agent"
		case *copyKeys && ssh:
			req.Keys = "copy"
		case *copyKeys:
			req.Secrets = "copy"
		case *standIn:
			req.Secrets = "stand-in"
		}
		return credentialsChange(req)
	case "secrets":
		if len(pos) != 3 || (pos[2] != "stand-in" && pos[2] != "copy") {
			return usagef("credentials", "credentials secrets needs a login and stand-in (its tokens stay outside) or copy (they are copied into the sandbox), such as credentials secrets gh stand-in")
		}
		return credentialsChange(api.CredentialsRequest{Action: "secrets", Name: pos[1], Secrets: pos[2]})
	case "ssh-keys":
		if len(pos) != 2 || (pos[1] != "agent" && pos[1] != "copy") {
			return usagef("credentials", "credentials ssh-keys needs agent (the keys stay outside) or copy (they are copied into the sandbox)")
		}
		return credentialsChange(api.CredentialsRequest{Action: "ssh-keys", Keys: pos[1]})
	}
	return usagef("credentials", "unknown credentials command %q; use list, add, add-path, enable, disable, remove, ssh-keys or secrets", pos[0])
}

func cmdCredentialsAddPath(args []string) error {
	fs := newFlags(credentialsAddPathCommand)
	label := fs.String("label", "", "credential (a secret inside) or configuration (host names, profiles, options)")
	var hostFlags multi
	fs.Var(&hostFlags, "host", "a site its tool needs, HOST[:PORT]; may be given more than once")
	variable := fs.String("var", "", "the variable to point at the copy")
	off := fs.Bool("off", false, "add the entry switched off")
	pos, _, err := parse(fs, credentialsAddPathCommand, args)
	if err != nil {
		return err
	}
	if *label == "" {
		return usagef("credentials add-path", "credentials add-path needs --label credential or --label configuration")
	}
	path := pos[0]
	if !strings.HasPrefix(path, "~") && !filepath.IsAbs(path) {
		// A relative path is where the person is, as for any command; the daemon takes
		// one under the home folder.
		if path, err = filepath.Abs(path); err != nil {
			return err
		}
	}
	return credentialsChange(api.CredentialsRequest{Action: "add-path", Path: path, Label: *label, Hosts: hostFlags, Var: *variable, Off: *off})
}

func credentialsChange(req api.CredentialsRequest) error {
	c, err := client()
	if err != nil {
		return err
	}
	res, err := c.ChangeCredentials(context.Background(), req)
	if err != nil {
		return err
	}
	if res.Message != "" {
		fmt.Fprintln(os.Stderr, "openworker:", res.Message)
	}
	printCredentials(res.Credentials)
	return nil
}

func credentialsList() error {
	c, err := client()
	if err != nil {
		return err
	}
	list, err := c.Credentials(context.Background())
	if errors.Is(err, apiclient.ErrNotRunning) {
		// The list is the settings file's: without a daemon, it is read from there.
		e, lerr := loadEnv()
		if lerr != nil {
			return lerr
		}
		e.warnSettings()
		fmt.Fprintln(os.Stderr, "openworker: the daemon is not running; this is the settings file's list ("+e.settingsPath+")")
		list, err = backend.CredentialsOf(e.home, e.settings), nil
	}
	if err != nil {
		return err
	}
	printCredentials(list)
	return nil
}

func printCredentials(list backend.Credentials) {
	fmt.Println("Shared with the sandbox")
	if len(list.Entries) == 0 {
		fmt.Println("  nothing (add a CLI's login with openworker credentials add NAME)")
	}
	for _, e := range list.Entries {
		sw := "off"
		if e.Enabled {
			sw = "on "
		}
		line := fmt.Sprintf("  [%s] %-16s %s  (%s; %s)", sw, e.Key, e.From, e.Kind, e.Status)
		if e.Var != "" {
			line += "  " + e.Var
		}
		switch e.Keys {
		case "agent":
			line += "  keys: stay outside (OpenWorker's agent asks per host)"
		case "copy":
			line += "  keys: copied into the sandbox"
		}
		switch e.Secrets {
		case "stand-in":
			line += "  secrets: stand-ins inside (the real ones stay outside)"
		case "copy":
			line += "  secrets: copied into the sandbox"
		}
		fmt.Printf("%s  hosts: %s\n", line, hostList(e.Hosts))
		if e.SecretsNote != "" {
			fmt.Printf("        %s\n", termtext.Escape(e.SecretsNote))
		}
		for _, a := range e.AlwaysAllowed {
			fmt.Printf("        always allowed: %s\n", termtext.Escape(a.String()))
		}
		for _, l := range e.LeftOut {
			fmt.Printf("        left out: %s\n", termtext.Escape(l))
		}
	}
	fmt.Println("A CLI's login")
	for _, r := range list.Catalog {
		added := ""
		if r.Added {
			added = "  (added)"
		}
		mode := ""
		if r.StandIn {
			mode = "  (stand-in)"
		}
		fmt.Printf("  %-16s %-18s %-36s %s%s%s\n", r.Name, r.Title, r.From, r.Status, mode, added)
	}
	for _, p := range list.Pending {
		fmt.Printf("pending write to the settings file: %s\n", p)
	}
	fmt.Println(list.Note)
}

func hostList(hs []string) string {
	if len(hs) == 0 {
		return "none"
	}
	return strings.Join(hs, ", ")
}

// cmdConnect is ssh's ProxyCommand inside a sandbox (see package connect).
func cmdConnect(args []string) error {
	if code := connect.Connect(args, os.Getenv, os.Stdin, os.Stdout, os.Stderr); code != 0 {
		return exitError{code}
	}
	return nil
}

// standInNames names the logins that can be stand-ins on this system: "gh, npm and docker".
func standInNames() string {
	names := config.StandInLogins(runtime.GOOS)
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
