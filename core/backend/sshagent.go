package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openworker/openworker/core/approvals"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/session"
	"github.com/openworker/openworker/core/sshagent"
)

// SSHCardWait is how long a signature waits for its card: ssh waits on the agent meanwhile,
// and a server gives a login about two minutes. The card stays up after it; its answer still
// applies to the session's next attempt.
const SSHCardWait = 60 * time.Second

// SSHUnwatchedWait is the wait in an agent's session when nothing shows cards (no app, no
// openworker cards --watch).
const SSHUnwatchedWait = 2 * time.Second

// sshHooks are the answers for session agents' signatures: the session's own and the
// settings' Always allow, and a card for the rest.
func (b *Backend) sshHooks(st *sessionSites) *session.SSHAgentHooks {
	return &session.SSHAgentHooks{
		Allowed: func(_ string, kind string, names []string, fp, ns string) bool {
			return b.sshAllowed(st, kind, names, fp, ns)
		},
		Ask: func(ctx context.Context, id string, q sshagent.Question) sshagent.Decision {
			return b.askSSH(ctx, id, q)
		},
	}
}

// alwaysOnlySSH are the answers for the SSH agent of a session that no card can be shown
// for (openworker run): the settings' Always allow, and a refusal for the rest. A session
// the backend starts gets its cards instead (sshHooks).
func alwaysOnlySSH(s *config.Settings) *session.SSHAgentHooks {
	var logins, signing []string
	for _, c := range s.Credentials {
		if c.Name == "ssh" {
			logins, signing = slices.Clone(c.AgentLogins), slices.Clone(c.AgentSigning)
		}
	}
	return &session.SSHAgentHooks{
		Allowed: func(_ string, kind string, names []string, fp, ns string) bool {
			list, want := logins, names
			if kind == sshagent.Signing {
				list, want = signing, []string{ns}
			}
			return slices.ContainsFunc(want, func(n string) bool { return slices.Contains(list, n+" "+fp) })
		},
		Ask: func(context.Context, string, sshagent.Question) sshagent.Decision {
			return sshagent.Decision{Why: "no card can be shown for this command (openworker run); only hosts always allowed for the key are signed for"}
		},
	}
}

// sshAsk is what a card about q asks: its kind, and the name it is for (the server's, or
// what a signature is for).
func sshAsk(id string, q sshagent.Question) approvals.Ask {
	a := approvals.Ask{Session: id, Host: q.Host, Kind: approvals.SSHLogin, Key: q.KeyFP, Reason: q.Text()}
	if q.Kind == sshagent.Signing {
		a.Host, a.Kind = q.Namespace, approvals.SSHSigning
	}
	return a
}

// sshAllowed says whether a signature is allowed already: for the session (a card answered
// Allow for this session, maybe after its signature gave up waiting) or always (the ssh
// entry's agent_logins or agent_signing).
func (b *Backend) sshAllowed(st *sessionSites, kind string, names []string, fp, ns string) bool {
	want := names
	list := func(c config.Credential) []string { return c.AgentLogins }
	if kind == sshagent.Signing {
		want = []string{ns}
		list = func(c config.Credential) []string { return c.AgentSigning }
	}
	st.mu.Lock()
	own := slices.Clone(st.ssh)
	st.mu.Unlock()
	for _, c := range b.store.InForce().Settings.Credentials {
		if c.Name == "ssh" {
			own = append(own, list(c)...)
		}
	}
	for _, n := range want {
		if slices.Contains(own, n+" "+fp) {
			return true
		}
	}
	return false
}

// askSSH puts a signature's question on a card and waits for the answer, SSHCardWait at
// most.
func (b *Backend) askSSH(ctx context.Context, id string, q sshagent.Question) sshagent.Decision {
	// The card names the command that asked: no site was blocked.
	out, w := b.broker.Decide(approvals.Request{Ask: sshAsk(id, q), Mode: approvals.Mode(b.store.InForce().Settings.Approvals), BlockedCommand: q.Command})
	switch out {
	case approvals.Denied:
		return sshagent.Decision{Why: "denied for this session on its card"}
	case approvals.RefusedFull:
		return sshagent.Decision{Why: "there are no cards in this mode (full access): only what the person allowed always is signed"}
	case approvals.Allowed:
		return sshagent.Decision{Allowed: true}
	}
	wait := b.opts.SSHCardWait
	if wait <= 0 {
		wait = SSHCardWait
	}
	if st, err := b.sites(id); err == nil && st.agent && b.CardWatchers() == 0 {
		// Nobody shows cards: an agent's MCP server puts the card to its client once the
		// command has ended, and a person's later answer still holds, so the command is
		// not kept waiting for a card nobody sees.
		wait = min(wait, SSHUnwatchedWait)
	}
	switch o := w.WaitFor(ctx, wait); {
	case o.Allows():
		return sshagent.Decision{Allowed: true}
	case o == approvals.NoAnswerYet:
		return sshagent.Decision{Why: "card " + w.Card.ID + " was not answered within " + wait.String() + "; once it is answered, run the command again"}
	case o == approvals.Ended:
		return sshagent.Decision{Why: "the session ended before the card was answered"}
	default:
		return sshagent.Decision{Why: "denied on its card"}
	}
}

// answerSSH carries out an SSH card's answer: for this session, the session's agents sign
// for that name and key from now on; Always keeps it with the ssh entry in the settings. A
// denial the broker remembers itself.
func (b *Backend) answerSSH(e approvals.Effect) error {
	a := e.Card.Ask
	value := a.Host + " " + a.Key
	if e.OpenForSession {
		if st, err := b.sites(a.Session); err == nil {
			st.mu.Lock()
			if !slices.Contains(st.ssh, value) {
				st.ssh = append(st.ssh, value)
			}
			st.mu.Unlock()
		}
	}
	if !e.AddToSettings {
		return nil
	}
	list := "agent_logins"
	if a.Kind == approvals.SSHSigning {
		list = "agent_signing"
	}
	if strings.ContainsAny(a.Host, " \t") {
		return nil // no name the settings could keep; the session's answer holds
	}
	return b.store.Apply(AddSSHAllowance(list, value))
}

// SetSSHKeys chooses how the ssh login's keys reach sessions started afterwards.
func (b *Backend) SetSSHKeys(mode string) (CredentialInfo, error) {
	if _, ok := b.credential("ssh"); !ok {
		return CredentialInfo{}, errNoSSH
	}
	if err := config.TryChange(b.opts.GOOS, func(ed *config.Editor) error {
		if err := ed.AddCredential(config.Credential{Name: "ssh", Enabled: true}); err != nil {
			return err
		}
		return ed.SetSSHKeys(mode)
	}); err != nil {
		return CredentialInfo{}, err
	}
	err := b.store.Apply(SetSSHKeys(mode))
	return b.publishCredential(CredentialChanged, "ssh", err)
}

var errNoSSH = errors.New("the ssh login is not added; add it with openworker credentials add ssh (--agent or --copy)")

// AddSSH adds the ssh login with its keys shared as keys says (config.SSHKeysAgent or
// config.SSHKeysCopy; "" is the default for a new entry, the agent).
func (b *Backend) AddSSH(keys string, enabled bool) (CredentialInfo, error) {
	if keys != "" && keys != config.SSHKeysAgent && keys != config.SSHKeysCopy {
		return CredentialInfo{}, fmt.Errorf("%q is not a way to share SSH keys; use %q (they stay outside) or %q", keys, config.SSHKeysAgent, config.SSHKeysCopy)
	}
	if keys == "" {
		keys = config.SSHKeysAgent
	}
	return b.addCredential(config.Credential{Name: "ssh", Keys: keys, Enabled: enabled})
}
