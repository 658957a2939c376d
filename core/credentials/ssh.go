package credentials

import (
	"github.com/openworker/openworker/core/credentials/connect"

	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// SSHConfigDir is where, under the sandbox home, the generated ssh config is written: beside
// the copy of ~/.ssh, never in it, so that no file of the person's is replaced.
const SSHConfigDir = ".ssh-openworker"

// wireSSH writes the ssh config that comes first for ssh and git inside: no agent (there is
// none to reach, and none may be), the copied known hosts and keys, and a ProxyCommand that
// reaches every server through the session's proxy — the sandbox has no other way out. The
// person's own config (its copy) is included after it, so a Host block of theirs with
// HostName, Port or User still applies, while what this one sets wins (ssh takes the first
// value it reads).
//
// With agentSock, the keys stay outside: ssh and git use OpenWorker's agent at agentSock
// (SSH_AUTH_SOCK too), which signs only for the hosts the person allows.
func (c *copier) wireSSH(sshDir string, res *Result, agentSock string) error {
	dir := filepath.Join(c.o.SandboxHome, SSHConfigDir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	helper, err := c.helper(dir)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# Written by OpenWorker for this session: ssh and git reach servers only through the\n")
	if agentSock != "" {
		b.WriteString("# session's proxy, with the copied known hosts, and OpenWorker's agent for the keys.\n")
		b.WriteString("Host *\n")
		b.WriteString("  IdentityAgent " + sshQuote(agentSock) + "\n  ForwardAgent no\n  ControlMaster no\n  ControlPath none\n")
	} else {
		b.WriteString("# session's proxy, with the copied keys and known hosts, and no agent.\n")
		b.WriteString("Host *\n")
		b.WriteString("  IdentityAgent none\n  ForwardAgent no\n  ControlMaster no\n  ControlPath none\n")
	}
	// No terminal inside to answer a prompt on: fail at once instead of waiting.
	b.WriteString("  BatchMode yes\n  UpdateHostKeys no\n")
	b.WriteString("  UserKnownHostsFile " + sshQuote(filepath.Join(sshDir, "known_hosts")) + "\n")
	if agentSock == "" {
		for _, k := range privateKeys(sshDir) {
			b.WriteString("  IdentityFile " + sshQuote(k) + "\n")
		}
	}
	b.WriteString("  ProxyCommand " + strings.ReplaceAll(shellQuote(helper), "%", "%%") + " " + ConnectArg + " %h %p\n")
	if st, err := os.Stat(filepath.Join(sshDir, "config")); err == nil && st.Mode().IsRegular() {
		b.WriteString("Include " + sshQuote(filepath.Join(sshDir, "config")) + "\n")
	}
	path := filepath.Join(dir, "config")
	if err := writeCopy(path, []byte(b.String())); err != nil {
		return err
	}
	// ssh reads ~/.ssh/config from the account's home folder, not $HOME: inside, that is the
	// real one, out of reach. git is told with GIT_SSH_COMMAND, and a plain ssh finds a
	// wrapper first on PATH that gives it the config.
	ssh := "ssh"
	if p, err := exec.LookPath("ssh"); err == nil && filepath.IsAbs(p) {
		ssh = p
	}
	command := shellQuote(ssh) + " -F " + shellQuote(path)
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		return err
	}
	how := "the copied keys, through the proxy, no agent"
	if agentSock != "" {
		how = "through the proxy, with OpenWorker's agent for the keys"
	}
	wrapper := "#!/bin/sh\n# Written by OpenWorker: ssh with this session's config (" + how + ").\nexec " + command + " \"$@\"\n"
	if err := writeCopy(filepath.Join(bin, "ssh"), []byte(wrapper)); err != nil {
		return err
	}
	if err := os.Chmod(filepath.Join(bin, "ssh"), 0o700); err != nil {
		return err
	}
	res.PathFirst = append(res.PathFirst, bin)
	res.Vars["GIT_SSH_COMMAND"] = command
	if agentSock != "" {
		res.Vars["SSH_AUTH_SOCK"] = agentSock
		res.SSHAgent = agentSock
		c.cur.Notes = append(c.cur.Notes, "ssh and git inside use "+path+" (ssh -F), through the session's proxy, with OpenWorker's agent: each host asks you on a card before a key signs")
		return nil
	}
	c.cur.Notes = append(c.cur.Notes, "ssh and git inside use "+path+" (ssh -F), through the session's proxy with no agent")
	return nil
}

// privateKeys lists the copied files that hold a private key, by their first line.
func privateKeys(dir string) []string {
	des, _ := os.ReadDir(dir)
	var out []string
	for _, de := range des {
		if !de.Type().IsRegular() || strings.HasSuffix(de.Name(), ".pub") {
			continue
		}
		p := filepath.Join(dir, de.Name())
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		head := make([]byte, 64)
		n, _ := f.Read(head)
		f.Close()
		if bytes.HasPrefix(head[:n], []byte("-----BEGIN ")) && bytes.Contains(head[:n], []byte("PRIVATE KEY-----")) {
			out = append(out, p)
		}
	}
	return out
}

// sshQuote quotes a path for ssh_config, which expands % in file names.
func sshQuote(p string) string {
	return `"` + strings.ReplaceAll(p, "%", "%%") + `"`
}

// shellQuote quotes a word for the shell ssh runs a ProxyCommand with.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ConnectArg is the hidden argument that runs a helper as ssh's ProxyCommand (package
// connect).
const ConnectArg = connect.Arg
