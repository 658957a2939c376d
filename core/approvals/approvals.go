// Package approvals is the site cards: a coworker asks for a site with a reason, a person
// answers on a card, and the answer's effect is decided here as a value. It is pure decide-
// and-effect code with no network and no clock of its own; the backend carries the effects
// out (swaps a session's allow list, writes the settings) and shows the cards.
//
// It does not enforce anything: an answer only becomes an allow-list change in the backend.
// Anything unclear is a deny: an unknown answer, an answer for a card that is gone, a card
// whose session ended.
package approvals

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openworker/openworker/core/termtext"
)

// Kind says who asks: a command's site (the sandbox's proxy) or a web fetch (the core).
type Kind string

const (
	Command Kind = "command"
	Fetch   Kind = "fetch"
	// SSHLogin asks to sign in to a server over SSH with one of the person's keys, through
	// OpenWorker's SSH agent: Host is the server's name, Key the key's fingerprint.
	SSHLogin Kind = "ssh"
	// SSHSigning asks to sign other data with a key (git's commit signing): Host is what the
	// signature is for (its namespace, "git"), Key the key's fingerprint.
	SSHSigning Kind = "ssh-signing"
)

// SSH says whether cards of kind k are the SSH agent's, which open no site.
func (k Kind) SSH() bool { return k == SSHLogin || k == SSHSigning }

// Answer is what a person chose on a card.
type Answer string

const (
	Once    Answer = "once"    // this one web fetch only (fetch cards)
	Session Answer = "session" // the site is open for the session, at once
	Always  Answer = "always"  // Session, and the site is added to the machine's settings
	Deny    Answer = "deny"    // refused, and a repeated ask is refused without a card
)

// Answers returns the answers a card of kind k offers, in the order its buttons show.
func Answers(k Kind) []Answer {
	if k == Fetch {
		return []Answer{Once, Session, Always, Deny}
	}
	return []Answer{Session, Always, Deny}
}

// ParseAnswer reads an answer for a card of kind k. Anything else, once on a command card
// included, is an error, so a caller never mistakes a typo for an answer.
func ParseAnswer(k Kind, s string) (Answer, error) {
	for _, a := range Answers(k) {
		if string(a) == s {
			return a, nil
		}
	}
	words := ""
	for i, a := range Answers(k) {
		if i > 0 {
			words += ", "
		}
		words += string(a)
	}
	return "", fmt.Errorf("%q is not an answer to a %s card; answer %s", s, k, words)
}

// A card keeps a bounded part of what an agent and a command wrote: a person reads a reason
// in a line or two, and an agent must not make the daemon hold megabytes per card.
const (
	MaxReason         = 1000 // bytes of an ask's reason
	MaxBlockedCommand = 200  // bytes of the command that was running when the site was blocked
)

// Ask is a coworker's request for a site.
type Ask struct {
	Session string
	Host    string // canonical, as hosts.Decide returns it
	Port    int
	Reason  string
	Kind    Kind
	// Key is the SSH key's fingerprint on an SSH card; "" otherwise.
	Key string
}

// Target is "host:port"; on an SSH card, the host (or namespace) and the key.
func (a Ask) Target() string {
	if a.Kind.SSH() {
		return a.Host + " " + a.Key
	}
	return net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
}

// denialKey is what a denial is remembered by: a site's target, or an SSH card's kind,
// host and key, which never stand for a site.
func (a Ask) denialKey() string {
	if a.Kind.SSH() {
		return string(a.Kind) + "\x00" + a.Target()
	}
	return a.Target()
}

// Card is a pending ask as a person sees it.
type Card struct {
	ID      string
	Ask     Ask
	Created time.Time
	// Blocked is when the sandbox's proxy refused this site in this session, if it did;
	// BlockedCommand is the command that was running then (for an SSH signature, which no
	// wall blocks, the command that asked for it).
	Blocked        time.Time
	BlockedCommand string
	// Askers counts the identical asks this card answers.
	Askers int
}

// Outcome is what an ask or an answer comes to.
type Outcome string

const (
	Allowed        Outcome = "allowed"              // already allowed: no card
	AllowedOnce    Outcome = "once"                 // this fetch only
	AllowedSession Outcome = "session"              // open for the session
	AllowedAlways  Outcome = "always"               // open for the session and in the settings
	Denied         Outcome = "denied"               // refused by the person, now or earlier
	RefusedFull    Outcome = "refused: full access" // no cards in full-access mode
	NoAnswerYet    Outcome = "no answer yet"        // the card is still up
	Ended          Outcome = "session ended"        // the card's session ended first
	Pending        Outcome = "pending"              // a card waits for a person
)

// Allows says whether the outcome lets the site through (for the asker's call).
func (o Outcome) Allows() bool {
	return o == Allowed || o == AllowedOnce || o == AllowedSession || o == AllowedAlways
}

// Mode is the machine's approvals setting.
type Mode string

const (
	ModeAsk        Mode = "ask"
	ModeFullAccess Mode = "full-access"
)

// Effect is what the backend must do for an answer: open the site for the session, write it
// into the settings, or remember the denial.
type Effect struct {
	Card    Card
	Outcome Outcome
	// OpenForSession, AddToSettings, RememberDenial are the changes to make, in this order.
	OpenForSession bool
	AddToSettings  bool
	RememberDenial bool
}

// ErrNoCard is an answer for a card that does not exist (answered, expired, or never was).
var ErrNoCard = errors.New("no such card; it was answered already, its session ended, or the ID is wrong (openworker cards lists them)")

// Broker keeps the pending cards and who waits on them. It is safe for concurrent use.
type Broker struct {
	mu      sync.Mutex
	cards   map[string]*pending
	byAsk   map[string]*pending // session + target + kind → its card
	denials map[string]map[string]bool
	now     func() time.Time
	onCard  func(Card) // a new card
	onEnd   func(Card, Outcome)
}

type pending struct {
	card Card
	done chan struct{}
	out  Outcome
	// answering: an answer is being carried out; finished: the askers were told.
	answering, finished bool
}

// NewBroker returns a broker; onCard is told of each new card, onEnd of each card that ends
// (answered or expired). Either may be nil. now is the clock (nil: time.Now).
func NewBroker(now func() time.Time, onCard func(Card), onEnd func(Card, Outcome)) *Broker {
	if now == nil {
		now = time.Now
	}
	return &Broker{cards: map[string]*pending{}, byAsk: map[string]*pending{}, denials: map[string]map[string]bool{}, now: now, onCard: onCard, onEnd: onEnd}
}

func askKey(a Ask) string { return a.Session + "\x00" + a.Target() + "\x00" + string(a.Kind) }

// Request is an ask with what the backend knows of it: whether the site is allowed already,
// the approvals mode, and when the sandbox last blocked it.
type Request struct {
	Ask            Ask
	AlreadyAllowed bool
	Mode           Mode
	Blocked        time.Time
	BlockedCommand string
}

// Wait is an ask that waits for a person: its card, and the outcome once answered.
type Wait struct {
	Card Card
	p    *pending
}

// Done is closed once the card has an outcome.
func (w *Wait) Done() <-chan struct{} { return w.p.done }

// Outcome is the card's outcome, or NoAnswerYet while it is up.
func (w *Wait) Outcome() Outcome {
	select {
	case <-w.p.done:
		return w.p.out
	default:
		return NoAnswerYet
	}
}

// WaitFor waits until the card has an outcome, d has passed or ctx ends, and returns the
// outcome then (NoAnswerYet when there is none yet).
func (w *Wait) WaitFor(ctx context.Context, d time.Duration) Outcome {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.p.done:
	case <-t.C:
	case <-ctx.Done():
	}
	return w.Outcome()
}

// Decide is the answer to an ask that needs no person, or Pending with a Wait on the card
// for one: a new card, or an identical pending ask's card, which this ask then also waits on.
func (b *Broker) Decide(r Request) (Outcome, *Wait) {
	r.Ask.Reason = termtext.Short(r.Ask.Reason, MaxReason)
	r.BlockedCommand = termtext.Short(r.BlockedCommand, MaxBlockedCommand)
	b.mu.Lock()
	defer b.mu.Unlock()
	a := r.Ask
	switch {
	case r.AlreadyAllowed:
		return Allowed, nil
	case b.denials[a.Session][a.denialKey()]:
		return Denied, nil
	case r.Mode != ModeAsk:
		// Full access, or a mode this code does not know: never a card, never an allow.
		return RefusedFull, nil
	}
	if p, ok := b.byAsk[askKey(a)]; ok {
		p.card.Askers++
		if p.card.Blocked.IsZero() && !r.Blocked.IsZero() {
			p.card.Blocked, p.card.BlockedCommand = r.Blocked, r.BlockedCommand
		}
		return Pending, &Wait{Card: p.card, p: p}
	}
	p := &pending{card: Card{ID: newID(), Ask: a, Created: b.now(), Blocked: r.Blocked, BlockedCommand: r.BlockedCommand, Askers: 1}, done: make(chan struct{})}
	b.cards[p.card.ID] = p
	b.byAsk[askKey(a)] = p
	if b.onCard != nil {
		b.onCard(p.card)
	}
	return Pending, &Wait{Card: p.card, p: p}
}

// Card returns the pending card id.
func (b *Broker) Card(id string) (Card, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.cards[id]
	if !ok {
		return Card{}, false
	}
	return p.card, true
}

// Answer answers card id with the answer word s and returns the effect to carry out. A word
// the card does not offer is a deny (and the error says so); an unknown card is ErrNoCard.
func (b *Broker) Answer(id, s string) (Effect, error) { return b.AnswerWith(id, s, nil) }

// AnswerWith is Answer that carries the effect out with apply before anyone waiting on the
// card is told its outcome: an asker woken by an allow finds the site open. An identical ask
// made meanwhile waits on the same card; a second answer meanwhile is ErrNoCard.
func (b *Broker) AnswerWith(id, s string, apply func(Effect)) (Effect, error) {
	b.mu.Lock()
	p, ok := b.cards[id]
	if !ok || p.answering {
		b.mu.Unlock()
		return Effect{}, ErrNoCard
	}
	a, perr := ParseAnswer(p.card.Ask.Kind, s)
	if perr != nil {
		a = Deny
	}
	e := Effect{Card: p.card}
	switch a {
	case Once:
		e.Outcome = AllowedOnce
	case Session:
		e.Outcome, e.OpenForSession = AllowedSession, true
	case Always:
		e.Outcome, e.OpenForSession, e.AddToSettings = AllowedAlways, true, true
	default:
		e.Outcome, e.RememberDenial = Denied, true
		b.deny(p.card.Ask)
	}
	p.answering = true
	b.mu.Unlock()
	if apply != nil {
		apply(e)
	}
	b.mu.Lock()
	b.finish(p, e.Outcome)
	b.mu.Unlock()
	if perr != nil {
		return e, fmt.Errorf("%w: the card was answered Deny", perr)
	}
	return e, nil
}

func (b *Broker) deny(a Ask) {
	m := b.denials[a.Session]
	if m == nil {
		m = map[string]bool{}
		b.denials[a.Session] = m
	}
	m[a.denialKey()] = true
}

// Forget takes back a session's denial of target, as allowing it from the Access list does.
func (b *Broker) Forget(session, target string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.denials[session], target)
}

// Denials returns the session's denied targets.
func (b *Broker) Denials(session string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for t := range b.denials[session] {
		if !strings.Contains(t, "\x00") { // an SSH card's denial is no site's
			out = append(out, t)
		}
	}
	return out
}

// finish ends a card with its outcome, tells onEnd, then wakes every asker; b.mu is held.
func (b *Broker) finish(p *pending, out Outcome) {
	if p.finished {
		return // its session ended while its answer was being carried out
	}
	p.finished = true
	p.out = out
	delete(b.cards, p.card.ID)
	delete(b.byAsk, askKey(p.card.Ask))
	// Told before the askers wake: what an answer allowed (a signature) comes after the
	// answer in whatever records both.
	if b.onEnd != nil {
		b.onEnd(p.card, out)
	}
	close(p.done)
}

// EndSession ends every card of a session (expired, an ask's deny) and forgets its denials.
func (b *Broker) EndSession(session string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.cards {
		if p.card.Ask.Session == session {
			b.finish(p, Ended)
		}
	}
	delete(b.denials, session)
}

// Cards returns the pending cards, oldest first.
func (b *Broker) Cards() []Card {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Card, 0, len(b.cards))
	for _, p := range b.cards {
		out = append(out, p.card)
	}
	slices.SortFunc(out, func(a, b Card) int { return a.Created.Compare(b.Created) })
	return out
}

func newID() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return "c" + hex.EncodeToString(b[:])
}
