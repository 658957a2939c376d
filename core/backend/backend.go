package backend

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openworker/openworker/core/apitype"

	"github.com/openworker/openworker/core/approvals"
	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/credentials"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/proxy"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
	"github.com/openworker/openworker/core/tcc"
)

// Options configure a Backend.
type Options struct {
	// Session configures the session manager; its OnEvent is the backend's.
	Session session.Options
	// Settings is the machine's settings store.
	Settings *Store
	// Native is this OS's sandbox, or "" when it has none.
	Native sandbox.Enforcement
	GOOS   string
	// OpenOwnNetwork: see Machine.
	OpenOwnNetwork bool
	// HowToAllow says how a person allows a site where the backend's sessions run (the app,
	// or the settings file for the daemon); nil: the settings file's ways, by the session's state.
	HowToAllow func(target string) string
	// ProbeFolder opens a session folder that the OS guards with a permission of its own, as
	// the app, when the session starts (tcc.OpenForListing; nil: on macOS that, elsewhere no
	// probe). Home is the person's home folder ("": the user's).
	ProbeFolder func(path string) error
	Home        string
	// SSHCardWait is how long a signature of a session's SSH agent waits for its card
	// (0: SSHCardWait).
	SSHCardWait time.Duration
}

// Backend owns the daemon's (or the app's) state: the sessions with their allow lists in
// layers, the settings store, the cards, and the event bus. The local API, the MCP server,
// the menu-bar presenter and the CLI are its clients.
type Backend struct {
	opts   Options
	m      *session.Manager
	store  *Store
	broker *approvals.Broker
	bus    bus

	mu       sync.Mutex
	sessions map[string]*sessionSites
	// scans keeps what the credentials list's look through ~/.ssh came to, file by file.
	scans credentials.ScanMemo
}

// sessionSites is one session's allow list in layers, with its own lock, separate from the
// session's one tool call at a time: an answer or a reload is in force while a command runs.
type sessionSites struct {
	s *session.Session

	mu  sync.Mutex
	own []hosts.Entry // allowed for this session only (Session only)
	// once are fetch cards answered Once, each for the one web fetch that takes it.
	once    []hosts.Entry
	logins  []hosts.Entry // the shared logins' hosts
	denied  []hosts.Entry // denied by the person; they win
	blocked map[string]Refusal
	// folders are the session's folders macOS refused the app.
	folders []tcc.Refusal
	// agent: a model reads this session's answers (see Request.Agent); hint says how a
	// refused site is opened, in words for whoever reads the session's refusals; ways is
	// the same for what OpenWorker enforces whatever the wall (asks, web fetch), where a
	// direct session's hint says its commands are held to nothing.
	agent bool
	hint  func(target string) string
	ways  func(target string) string
	// ssh are the SSH cards answered Allow for this session, each for its kind.
	ssh []apitype.SSHAnswer
}

// deniedFor says whether the person denied target (host:port) for st's session.
func (b *Backend) deniedFor(st *sessionSites, target string) bool {
	e, err := hosts.Parse(target)
	if err != nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return hosts.Decide(hosts.NewList(nil), hosts.NewList(st.denied), e.Host, e.Port).Why == hosts.Denied
}

// fullAccess says whether the settings in force turn cards off.
func (b *Backend) fullAccess() bool {
	return approvals.Mode(b.store.InForce().Settings.Approvals) == approvals.ModeFullAccess
}

// New returns a backend and its session manager (which removes dead sessions' leftovers).
func New(opts Options) (*Backend, error) {
	b := &Backend{opts: opts, store: opts.Settings, sessions: map[string]*sessionSites{}}
	b.broker = approvals.NewBroker(nil,
		func(c approvals.Card) {
			info := cardInfo(c)
			b.bus.publish(Event{Type: CardPending, Session: c.Ask.Session, Card: &info})
		},
		func(c approvals.Card, o approvals.Outcome) {
			info := cardInfo(c)
			typ := CardAnswered
			if o == approvals.Ended {
				typ = CardExpired
			}
			// In the audit trail before anyone waiting on the card goes on (the broker
			// wakes them after this), so that a signature the answer allowed comes after it.
			if l := b.opts.Session.Audit; l != nil {
				_ = l.Write(audit.Event{Type: typ, Session: c.Ask.Session, Summary: info.Site + ": " + info.Reason, Outcome: string(o)})
			}
			b.bus.publish(Event{Type: typ, Session: c.Ask.Session, Card: &info, Outcome: string(o)})
		})
	so := opts.Session
	next := so.OnEvent
	so.OnEvent = func(e audit.Event) {
		if next != nil {
			next(e)
		}
		b.bus.publish(Event{Time: e.Time, Type: e.Type, Session: e.Session, Audit: &e})
		if e.Type == audit.SessionEnded {
			b.forget(e.Session) // however it ended: its cards and session-only sites go with it
		}
	}
	if so.ProxyConnsTotal == 0 {
		so.ProxyConnsTotal = opts.Settings.InForce().Settings.Limits.MaxProxyConnectionsTotal
	}
	m, err := session.NewManager(so)
	if err != nil {
		return nil, err
	}
	b.m = m
	b.store.mu.Lock()
	b.store.onSet = b.settingsChanged
	b.store.mu.Unlock()
	return b, nil
}

// Manager is the session manager, for what the backend does not wrap yet.
func (b *Backend) Manager() *session.Manager { return b.m }

// Settings returns the settings in force.
func (b *Backend) Settings() *config.InForce { return b.store.InForce() }

// Store is the settings store.
func (b *Backend) Store() *Store { return b.store }

// Machine is what SpecFor knows of this machine now.
func (b *Backend) Machine() Machine {
	return Machine{Settings: b.store.InForce(), Native: b.opts.Native, GOOS: b.opts.GOOS, OpenOwnNetwork: b.opts.OpenOwnNetwork}
}

// Start starts a session for r with the settings in force.
func (b *Backend) Start(ctx context.Context, r Request) (*session.Session, error) {
	// The refusal names the session, whose ID is known once it started.
	var id atomic.Value
	id.Store("")
	st := &sessionSites{blocked: map[string]Refusal{}, agent: r.Agent}
	switch {
	case r.Agent:
		// A model reads this session's refusals: whatever the caller's words, they say
		// only that it may ask.
		r.HowToAllow = func(target string) string { return agentHowToAllow(b.deniedFor(st, target), b.fullAccess()) }
	case r.HowToAllow == nil && b.opts.HowToAllow != nil:
		r.HowToAllow = b.opts.HowToAllow
	case r.HowToAllow == nil:
		r.HowToAllow = func(target string) string {
			return howToAllow(b.store.path, id.Load().(string), target, b.deniedFor(st, target), b.fullAccess())
		}
	}
	spec, err := SpecFor(b.Machine(), r)
	if err != nil {
		return nil, err
	}
	st.ways = spec.HowToAllow
	if spec.Provider == sandbox.Direct {
		// Nothing holds a direct session's commands to the list: a way to open a site
		// would protect nothing, and the reader is told so instead.
		spec.HowToAllow = func(string) string { return directHowToAllow }
	}
	st.hint = spec.HowToAllow
	if spec.Programs, err = clientPrograms(r.Programs); err != nil {
		return nil, err
	}
	st.own = slices.Clone(spec.SessionHosts)
	spec.OnRefusal = func(ref proxy.Refusal) { b.refused(st, ref) }
	spec.SSHAgent = b.sshHooks(st)
	s, err := b.m.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	id.Store(s.ID)
	st.mu.Lock()
	st.s = s
	// The shared logins' hosts as copied now: switching a login later applies to sessions
	// started afterwards, as the copy cannot be taken back from this one.
	st.logins = s.LoginHosts()
	st.mu.Unlock()
	b.mu.Lock()
	b.sessions[s.ID] = st
	b.mu.Unlock()
	// The settings may have changed while the session started.
	b.swap(st)
	if logins := s.Logins(); len(logins) > 0 {
		b.bus.publish(Event{Type: LoginsCopied, Session: s.ID, Logins: logins, Message: copiedMessage(logins)})
	}
	b.probeFolders(st, s)
	return s, nil
}

// folderProbeWait is how long Start waits for the folder probe: macOS may be asking the
// person, and the session is not held up for the answer; a refusal found later still shows.
const folderProbeWait = 2 * time.Second

// probeFolders opens the session's folders that macOS guards, as the app: a folder the
// person has not allowed OpenWorker fails every command there with EPERM and no report of
// the wall's, so the session's Access list and a notice say so, with where to allow it.
// The first probe is also what makes macOS ask the person, up front.
func (b *Backend) probeFolders(st *sessionSites, s *session.Session) {
	probe := b.opts.ProbeFolder
	if probe == nil && b.opts.GOOS == "darwin" {
		probe = tcc.OpenForListing
	}
	if probe == nil {
		return
	}
	home := b.opts.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	w, r := s.Folders()
	done := make(chan struct{})
	go func() {
		defer close(done)
		refused := tcc.Probe(home, append(slices.Clone(w), r...), probe)
		if len(refused) == 0 {
			return
		}
		st.mu.Lock()
		st.folders = refused
		st.mu.Unlock()
		for _, f := range refused {
			b.bus.publish(Event{Type: FolderRefused, Session: s.ID, Message: f.Message})
		}
	}()
	select {
	case <-done:
	case <-time.After(folderProbeWait):
	}
}

// Session returns a running session.
func (b *Backend) Session(id string) (*session.Session, bool) { return b.m.Get(id) }

// Sessions lists the running sessions, oldest first.
func (b *Backend) Sessions() []*session.Session { return b.m.List() }

// End ends a session, its cards and its session-only sites, on request.
func (b *Backend) End(id string) error { return b.EndBecause(id, "ended on request") }

// EndBecause is End with the reason the audit trail's session.ended gives.
func (b *Backend) EndBecause(id, reason string) error {
	s, ok := b.m.Get(id)
	if !ok {
		return fmt.Errorf("no session %q; list them with openworker session ls", id)
	}
	s.EndBecause(reason)
	b.forget(id)
	return nil
}

// FormAnswerRefused records an answer to a card that came through an agent's client for a
// question its server never put to it (a forged or replayed form answer): it answers
// nothing, and the person can see that it was tried.
func (b *Backend) FormAnswerRefused(session, detail string) {
	b.bus.publish(Event{Type: FormRefused, Session: session, Message: detail})
}

func (b *Backend) forget(id string) {
	b.mu.Lock()
	delete(b.sessions, id)
	b.mu.Unlock()
	b.broker.EndSession(id)
}

// EndAll ends every session on request.
func (b *Backend) EndAll() { b.EndAllBecause("ended on request") }

// EndAllBecause ends every session, for the reason the audit trail's session.ended gives.
func (b *Backend) EndAllBecause(reason string) {
	for _, s := range b.m.List() {
		_ = b.EndBecause(s.ID, reason)
	}
	// What is left (nothing, but for a session started meanwhile), and what the walls keep
	// running to report denials.
	b.m.EndAllBecause(reason)
}

func (b *Backend) sites(id string) (*sessionSites, error) {
	b.mu.Lock()
	st, ok := b.sessions[id]
	b.mu.Unlock()
	if !ok {
		if _, running := b.m.Get(id); !running {
			return nil, fmt.Errorf("no session %q; list them with openworker session ls", id)
		}
		return nil, fmt.Errorf("session %q was not started by this backend", id)
	}
	return st, nil
}

// allowList is the session's list now: the settings' sites, the shared logins' hosts and
// the session-only sites. st.mu is held.
func (st *sessionSites) allowList(settings *config.Settings) []hosts.Entry {
	out := slices.Clone(settings.NetworkHosts)
	out = append(out, st.logins...)
	return append(out, st.own...)
}

// swap puts the session's layers into its proxy. It never waits for a tool call.
func (b *Backend) swap(st *sessionSites) {
	settings := b.store.InForce().Settings
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.s != nil {
		st.s.SetSites(st.allowList(settings), st.denied)
	}
}

func (b *Backend) settingsChanged(in *config.InForce) {
	b.mu.Lock()
	all := make([]*sessionSites, 0, len(b.sessions))
	for _, st := range b.sessions {
		all = append(all, st)
	}
	b.mu.Unlock()
	for _, st := range all {
		b.swap(st)
	}
	b.m.SetProxyConnsTotal(in.Settings.Limits.MaxProxyConnectionsTotal)
	if in.Problems != nil {
		b.bus.publish(Event{Type: SettingsFailed, Message: in.Describe(b.store.path)})
	} else {
		b.bus.publish(Event{Type: SettingsReloaded, Message: fmt.Sprintf("%d site(s) allowed", len(in.Settings.NetworkHosts))})
	}
}

// refused is the proxy's hook: the sandbox blocked a site.
func (b *Backend) refused(st *sessionSites, ref proxy.Refusal) {
	st.mu.Lock()
	r := Refusal{Site: ref.Target(), Reason: ref.Reason, Time: ref.Time}
	var id string
	if st.s != nil {
		r.Command, id = st.s.Running(), st.s.ID
	}
	if len(st.blocked) < 1024 || st.blocked[r.Site] != (Refusal{}) {
		st.blocked[r.Site] = r
	}
	st.mu.Unlock()
	b.bus.publish(Event{Type: SiteRefused, Session: id, Refused: &r})
}

// SiteRequest is a coworker's ask for a site.
type SiteRequest struct {
	Session string
	Site    string // HOST[:PORT]
	Reason  string
	Kind    approvals.Kind
	// Wait bounds how long the ask waits for an answer (default 60 s); the card stays up.
	// NoWait does not wait: a card is made and the answer is NoAnswerYet at once.
	Wait   time.Duration
	NoWait bool
	// OnCard, if set, is told the card as soon as it is up, before the wait.
	OnCard func(CardInfo)
}

// SiteAnswer is apitype's, the local API's wire type.
type SiteAnswer = apitype.SiteAnswer

// RequestSite asks for a site for a session: at once when it needs no person (allowed
// already, denied earlier, full access), otherwise on a card, waiting up to r.Wait.
func (b *Backend) RequestSite(ctx context.Context, r SiteRequest) (SiteAnswer, error) {
	e, err := hosts.Parse(r.Site)
	if err != nil {
		return SiteAnswer{}, err
	}
	if e.Wildcard {
		return SiteAnswer{}, fmt.Errorf("ask for one site, not %s: a card opens one host and port", e)
	}
	st, err := b.sites(r.Session)
	if err != nil {
		return SiteAnswer{}, err
	}
	if r.Kind == "" {
		r.Kind = approvals.Command
	}
	host, port := e.Host, e.Port
	target := net.JoinHostPort(host, strconv.Itoa(port))
	in := b.store.InForce()
	st.mu.Lock()
	d := hosts.Decide(hosts.NewList(st.allowList(in.Settings)), hosts.NewList(st.denied), host, port)
	blocked := st.blocked[target]
	st.mu.Unlock()
	ask := approvals.Request{
		Ask:            approvals.Ask{Session: r.Session, Host: host, Port: port, Reason: r.Reason, Kind: r.Kind},
		AlreadyAllowed: d.Allowed,
		Mode:           approvals.Mode(in.Settings.Approvals),
		Blocked:        blocked.Time, BlockedCommand: blocked.Command,
	}
	out, w := b.broker.Decide(ask)
	ans := SiteAnswer{Outcome: out, Site: target}
	switch {
	case out == approvals.RefusedFull && st.agent:
		ans.Message = target + " is not on this session's allow list, and there are no cards in this mode: only the person can put a site on the list"
		return ans, nil
	case out == approvals.RefusedFull:
		// In the words the session's proxy refuses with, for the same state.
		ans.Message = target + " is not on this session's allow list; " + st.ways(target)
		return ans, nil
	case out == approvals.Denied && st.agent:
		ans.Message = target + " was denied for this session by the person; do not ask for it again"
		return ans, nil
	case out == approvals.Denied:
		ans.Message = target + " was denied for this session; " + st.ways(target)
		return ans, nil
	case out == approvals.Allowed:
		ans.Message = target + " is already allowed in this session"
		return ans, nil
	}
	info := cardInfo(w.Card)
	ans.Card = &info
	if r.OnCard != nil {
		r.OnCard(info)
	}
	if !r.NoWait {
		wait := r.Wait
		if wait <= 0 {
			wait = 60 * time.Second
		}
		w.WaitFor(ctx, wait)
	}
	ans.Outcome = w.Outcome()
	switch {
	case ans.Outcome == approvals.NoAnswerYet && st.agent && r.Kind == approvals.Fetch:
		ans.Message = "the card is waiting for the person; call web_fetch again later with the same URL: it is fetched once they allow it (an answer of once is for that one fetch)"
	case ans.Outcome == approvals.NoAnswerYet && st.agent:
		ans.Message = "the card is waiting for the person; their answer still applies to this session when it comes: ask again with request_site later to learn it"
	case ans.Outcome == approvals.NoAnswerYet && r.Kind == approvals.Fetch:
		ans.Message = "card " + info.ID + " is waiting for an answer (openworker answer " + info.ID + " " + strings.Join(info.Answers, "|") + "); fetch again once it is answered"
	case ans.Outcome == approvals.NoAnswerYet:
		ans.Message = "card " + info.ID + " is waiting for an answer (openworker answer " + info.ID + " " + strings.Join(info.Answers, "|") + "); a later answer still applies to the session"
	case ans.Outcome == approvals.Ended:
		ans.Message = "the session ended before the card was answered"
	}
	return ans, nil
}

// AnswerExact is Answer for an answer a person typed: a word that is not one of the card's
// answers is an error, and the card stays up for a right one.
func (b *Backend) AnswerExact(cardID, word string) (approvals.Effect, error) {
	if c, ok := b.broker.Card(cardID); ok {
		if _, err := approvals.ParseAnswer(c.Ask.Kind, word); err != nil {
			return approvals.Effect{}, fmt.Errorf("%w; the card is still waiting", err)
		}
	}
	return b.Answer(cardID, word)
}

// Answer answers a card and carries its effect out: the site opens for the session at once
// (its proxy's list swapped, while a command runs too), Always writes it to the settings,
// Deny is remembered for the session. An unknown word is a deny and an error.
func (b *Backend) Answer(cardID, word string) (approvals.Effect, error) {
	var persist error
	e, err := b.broker.AnswerWith(cardID, word, func(e approvals.Effect) {
		if e.Card.Ask.Kind.SSH() {
			persist = b.answerSSH(e)
			return
		}
		// In force before the askers are woken: a fetch or command retried at once gets in.
		entry, perr := hosts.Parse(e.Card.Ask.Target())
		if perr != nil {
			return
		}
		if e.AddToSettings {
			persist = b.store.Apply(AddHost(entry))
			b.recordSite(e.Card.Ask.Session, "added to the machine's list: "+entry.String(), ByCard)
		}
		switch {
		case e.OpenForSession && !e.AddToSettings:
			b.recordSite(e.Card.Ask.Session, "allowed for the session: "+entry.String(), ByCard)
		case e.RememberDenial:
			b.recordSite(e.Card.Ask.Session, "denied for the session: "+entry.String(), ByCard)
		}
		if st, serr := b.sites(e.Card.Ask.Session); serr == nil {
			st.mu.Lock()
			if e.OpenForSession && !e.AddToSettings && !slices.Contains(st.own, entry) {
				st.own = append(st.own, entry)
			}
			if e.RememberDenial && !slices.Contains(st.denied, entry) {
				st.denied = append(st.denied, entry)
			}
			if e.Outcome == approvals.AllowedOnce {
				st.once = append(st.once, entry)
			}
			st.mu.Unlock()
			b.swap(st)
			b.publishAccess(e.Card.Ask.Session)
		}
	})
	if err != nil {
		return e, err
	}
	return e, persist
}

// Cards lists the pending cards, oldest first.
func (b *Backend) Cards() []CardInfo {
	var out []CardInfo
	for _, c := range b.broker.Cards() {
		out = append(out, cardInfo(c))
	}
	return out
}

// CardInfo is apitype's, the local API's wire type.
type CardInfo = apitype.CardInfo

func cardInfo(c approvals.Card) CardInfo {
	info := CardInfo{ID: c.ID, Session: c.Ask.Session, Site: c.Ask.Target(), Reason: c.Ask.Reason, Kind: string(c.Ask.Kind),
		Created: c.Created, Blocked: c.Blocked, BlockedCommand: c.BlockedCommand, Askers: c.Askers}
	if c.Ask.Kind.SSH() {
		// The server's name (or what a signature is for); the key is in the card's text.
		info.Site = c.Ask.Host
	}
	for _, a := range approvals.Answers(c.Ask.Kind) {
		info.Answers = append(info.Answers, string(a))
	}
	return info
}
