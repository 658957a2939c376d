package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openworker/openworker/core/apitype"
	"github.com/openworker/openworker/core/approvals"
	"github.com/openworker/openworker/core/audit"
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
	always := alwaysSSH(s)
	return &session.SSHAgentHooks{
		Allowed: func(_ string, kind string, names []string, fp, ns string) bool {
			return sshCovered(always, kind, names, fp, ns)
		},
		Ask: func(context.Context, string, sshagent.Question) sshagent.Decision {
			return sshagent.Decision{Why: "no card can be shown for this command (openworker run); only hosts always allowed for the key are signed for"}
		},
	}
}

// alwaysSSH are the Always allow answers of the ssh login in s.
func alwaysSSH(s *config.Settings) []apitype.SSHAnswer {
	var out []apitype.SSHAnswer
	for _, c := range s.Credentials {
		if c.Name == "ssh" {
			out = append(out, alwaysOf(c)...)
		}
	}
	return out
}

// alwaysOf are an ssh entry's Always allow answers, each with its kind: agent_logins are
// logins, agent_signing signatures, though their text ("NAME SHA256:…") is alike.
func alwaysOf(c config.Credential) []apitype.SSHAnswer {
	var out []apitype.SSHAnswer
	for _, l := range []struct {
		kind   string
		values []string
	}{{apitype.SSHLogin, c.AgentLogins}, {apitype.SSHSigning, c.AgentSigning}} {
		for _, v := range l.values {
			i := strings.LastIndexByte(v, ' ')
			if i < 0 {
				continue
			}
			out = append(out, apitype.SSHAnswer{Kind: l.kind, Name: v[:i], Key: v[i+1:], Source: FromSettings})
		}
	}
	return out
}

// sshCovered says whether an answer in answers allows a signature of kind (sshagent.Login
// for one of the server's names, sshagent.Signing for namespace ns) with the key fp. An
// answer holds for its own kind only: a signature for a namespace named like a server never
// stands for a login to it, nor the other way round.
func sshCovered(answers []apitype.SSHAnswer, kind string, names []string, fp, ns string) bool {
	want, k := names, apitype.SSHLogin
	if kind == sshagent.Signing {
		want, k = []string{ns}, apitype.SSHSigning
	} else if kind != sshagent.Login {
		return false
	}
	return slices.ContainsFunc(answers, func(a apitype.SSHAnswer) bool {
		return a.Kind == k && a.Key == fp && slices.Contains(want, a.Name)
	})
}

// sshAnswerTo is what an answer to an SSH card allows: its kind, name and key.
func sshAnswerTo(a approvals.Ask) apitype.SSHAnswer {
	kind := apitype.SSHLogin
	if a.Kind == approvals.SSHSigning {
		kind = apitype.SSHSigning
	}
	return apitype.SSHAnswer{Kind: kind, Name: a.Host, Key: a.Key}
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
	st.mu.Lock()
	answers := slices.Clone(st.ssh)
	st.mu.Unlock()
	return sshCovered(append(answers, alwaysSSH(b.store.InForce().Settings)...), kind, names, fp, ns)
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
// signatures of the card's kind for that name and key from now on; Always keeps it with the
// ssh entry in the settings, in the list of its kind. A denial the broker remembers itself.
// The audit trail and the session's Access list say which.
func (b *Backend) answerSSH(e approvals.Effect) error {
	a := e.Card.Ask
	ans := sshAnswerTo(a)
	what := "denied for the session"
	switch {
	case e.AddToSettings:
		what = "always allowed"
	case e.OpenForSession:
		what = "allowed for the session"
	}
	b.record(audit.Event{Type: audit.SSHAnswered, Session: a.Session, Summary: ans.Kind, Host: ans.Name, Key: ans.Key, Outcome: what, By: ByCard})
	defer b.publishAccess(a.Session)
	if e.OpenForSession {
		if st, err := b.sites(a.Session); err == nil {
			st.mu.Lock()
			ans.Source = SessionOnly
			if !slices.Contains(st.ssh, ans) {
				st.ssh = append(st.ssh, ans)
			}
			st.mu.Unlock()
		}
	}
	if !e.AddToSettings {
		return nil
	}
	list := "agent_logins"
	if ans.Kind == apitype.SSHSigning {
		list = "agent_signing"
	}
	if strings.ContainsAny(a.Host, " \t") {
		return nil // no name the settings could keep; the session's answer holds
	}
	return b.store.Apply(AddSSHAllowance(list, a.Host+" "+a.Key))
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
