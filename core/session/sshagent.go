package session

import (
	"context"
	"net"
	"path/filepath"
	"strconv"

	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/sshagent"
)

// SSHAgentHooks are the backend's answers for a session's SSH agent: whether the person
// allowed a signature already (for the session, or always in the settings), and the card
// that asks them. session is the session's ID.
type SSHAgentHooks struct {
	Allowed func(session, kind string, names []string, fp, namespace string) bool
	Ask     func(ctx context.Context, session string, q sshagent.Question) sshagent.Decision
}

// sshAgentSocket is where the session serves its SSH agent: in its private tmp, which is
// owner-only outside and the sandbox's own inside (and which the macOS profile lets Unix
// sockets be reached in).
func (s *Session) sshAgentSocket() string { return filepath.Join(s.tmp, "ssh-agent.sock") }

// startSSHAgent serves the shared ssh login's keys from outside the wall when its copy was
// made for the agent: the private keys stay in the person's ~/.ssh (or their own agent).
func (s *Session) startSSHAgent() error {
	if s.logins == nil || s.logins.SSHAgent == "" {
		return nil
	}
	home := s.m.opts.UserHome
	dir := filepath.Join(home, ".ssh")
	upstream := hostVar(s.m.opts.HostEnv, "SSH_AUTH_SOCK")
	keys, notes := sshagent.LoadKeys(dir, upstream)
	for i := range s.logins.Entries {
		if s.logins.Entries[i].Key == "ssh" {
			s.logins.Entries[i].Notes = append(s.logins.Entries[i].Notes, notes...)
			if len(keys) == 0 {
				s.logins.Entries[i].Notes = append(s.logins.Entries[i].Notes, "no key of ~/.ssh can be used through OpenWorker's agent")
			}
		}
	}
	o := sshagent.Options{
		Keys: keys, Upstream: upstream,
		KnownHosts: []string{filepath.Join(dir, "known_hosts"), filepath.Join(dir, "known_hosts2")},
		Candidates: s.sshCandidates,
		Command:    s.Running,
		Record:     s.recordSSH,
		Said: func(line string) {
			s.fwdMu.Lock()
			s.lateHints = append(s.lateHints, line)
			s.fwdMu.Unlock()
		},
	}
	if h := s.spec.SSHAgent; h != nil {
		o.AllowedAlways = func(kind string, names []string, fp, ns string) bool {
			return h.Allowed != nil && h.Allowed(s.ID, kind, names, fp, ns)
		}
		o.Ask = func(ctx context.Context, q sshagent.Question) sshagent.Decision { return h.Ask(ctx, s.ID, q) }
	}
	a := sshagent.New(o)
	if err := a.Listen(s.logins.SSHAgent); err != nil {
		return err
	}
	s.sshAgent = a
	return nil
}

// sshCandidates are the names a hashed known_hosts entry is tried against: the sites on the
// session's allow list, where its connections may go.
func (s *Session) sshCandidates() []string {
	s.sitesMu.Lock()
	list := allowList(s.spec)
	s.sitesMu.Unlock()
	var out []string
	for _, e := range list {
		if !e.Wildcard && e.Host != "" {
			out = append(out, net.JoinHostPort(e.Host, strconv.Itoa(e.Port)))
		}
	}
	return out
}

// recordSSH puts a signature or refusal of the session's agent in the audit trail.
func (s *Session) recordSSH(r sshagent.Record) {
	e := audit.Event{Type: audit.SSHRefused, Session: s.ID, Enforcement: string(s.Enforcement), Host: r.Host, Key: r.KeyFP, Command: r.Command, Reason: r.Reason, Summary: r.Kind}
	if r.Signed {
		e.Type = audit.SSHSigned
	}
	s.m.audit(e)
}
