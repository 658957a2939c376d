package backend

import (
	"sync"
	"time"

	"github.com/openworker/openworker/core/apitype"
)

// Event types on the bus, besides the audit trail's own (session.*, tool.*).
const (
	CardPending      = "card.pending"
	CardAnswered     = "card.answered"
	CardExpired      = "card.expired"
	AccessChanged    = "access.changed"
	SettingsReloaded = "settings.reloaded"
	SettingsFailed   = "settings.failed"
	SiteRefused      = "site.refused"
	// FormRefused: an agent's client sent a form answer for a question its server never
	// asked; nothing was answered.
	FormRefused = "form.refused"
	// A shared login was added, switched on or off, or removed in the settings; it applies
	// to sessions started afterwards.
	CredentialAdded    = "credential.added"
	CredentialEnabled  = "credential.enabled"
	CredentialDisabled = "credential.disabled"
	CredentialRemoved  = "credential.removed"
	// CredentialChanged: how an entry is shared changed (the ssh login's keys).
	CredentialChanged = "credential.changed"
	// LoginsCopied: a session started with copies of the shared logins (and what was left out).
	LoginsCopied = "credential.copied"
	// FolderRefused: macOS does not let OpenWorker use one of a session's folders.
	FolderRefused = "folder.refused"
)

// Event is apitype's, the local API's wire type.
type Event = apitype.Event

// Refusal is apitype's, the local API's wire type.
type Refusal = apitype.Refusal

// bus hands every event to every subscriber. A subscriber that falls behind by more than its
// buffer loses events (and is told how many) rather than slowing the backend.
type bus struct {
	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

type subscriber struct {
	ch      chan Event
	dropped int
	cards   bool // it shows cards to a person (the app, cards --watch)
}

func (b *bus) publish(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		select {
		case s.ch <- e:
		default:
			s.dropped++
		}
	}
}

// Subscribe returns a channel of every event from now on; cards says the subscriber shows
// cards to a person. cancel ends the subscription and closes the channel.
func (b *Backend) Subscribe(cards bool) (<-chan Event, func()) {
	s := &subscriber{ch: make(chan Event, 256), cards: cards}
	b.bus.mu.Lock()
	if b.bus.subs == nil {
		b.bus.subs = map[*subscriber]struct{}{}
	}
	b.bus.subs[s] = struct{}{}
	b.bus.mu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			b.bus.mu.Lock()
			delete(b.bus.subs, s)
			b.bus.mu.Unlock()
			close(s.ch)
		})
	}
}

// CardWatchers counts the subscribers that show cards to a person.
func (b *Backend) CardWatchers() int {
	b.bus.mu.Lock()
	defer b.bus.mu.Unlock()
	n := 0
	for s := range b.bus.subs {
		if s.cards {
			n++
		}
	}
	return n
}
