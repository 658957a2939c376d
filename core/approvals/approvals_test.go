package approvals

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

func ask(session, host string) Request {
	return Request{Ask: Ask{Session: session, Host: host, Port: 443, Reason: "npm install needs it", Kind: Command}, Mode: ModeAsk}
}

func TestDecideWithoutAPerson(t *testing.T) {
	b := NewBroker(nil, nil, nil)
	r := ask("s1", "github.com")
	r.AlreadyAllowed = true
	if o, w := b.Decide(r); o != Allowed || w != nil {
		t.Fatalf("an allowed site: %v %v", o, w)
	}
	r = ask("s1", "github.com")
	r.Mode = ModeFullAccess
	if o, w := b.Decide(r); o != RefusedFull || w != nil || len(b.Cards()) != 0 {
		t.Fatalf("full access: %v, %d cards", o, len(b.Cards()))
	}
	r.Mode = "something new"
	if o, _ := b.Decide(r); o != RefusedFull || len(b.Cards()) != 0 {
		t.Fatalf("an unknown mode: %v", o)
	}
}

func TestAnswers(t *testing.T) {
	for _, tc := range []struct {
		kind   Kind
		answer string
		out    Outcome
		effect Effect
		err    bool
	}{
		{Command, "session", AllowedSession, Effect{OpenForSession: true}, false},
		{Command, "always", AllowedAlways, Effect{OpenForSession: true, AddToSettings: true}, false},
		{Command, "deny", Denied, Effect{RememberDenial: true}, false},
		{Command, "once", Denied, Effect{RememberDenial: true}, true}, // not offered on a command card
		{Command, "yes", Denied, Effect{RememberDenial: true}, true},
		{Command, "", Denied, Effect{RememberDenial: true}, true},
		{Fetch, "once", AllowedOnce, Effect{}, false},
		{Fetch, "SESSION", Denied, Effect{RememberDenial: true}, true},
	} {
		t.Run(string(tc.kind)+"_"+tc.answer, func(t *testing.T) {
			b := NewBroker(nil, nil, nil)
			r := ask("s1", "example.com")
			r.Ask.Kind = tc.kind
			o, w := b.Decide(r)
			if o != Pending || w == nil {
				t.Fatalf("no card: %v", o)
			}
			e, err := b.Answer(w.Card.ID, tc.answer)
			if (err != nil) != tc.err || e.Outcome != tc.out || e.OpenForSession != tc.effect.OpenForSession ||
				e.AddToSettings != tc.effect.AddToSettings || e.RememberDenial != tc.effect.RememberDenial {
				t.Fatalf("answer %q: %+v %v", tc.answer, e, err)
			}
			if w.Outcome() != tc.out {
				t.Fatalf("the asker sees %v, want %v", w.Outcome(), tc.out)
			}
			if tc.out.Allows() != (tc.out != Denied) {
				t.Fatalf("Allows(%v)", tc.out)
			}
			// The card is gone: a second answer is an error, never an allow.
			if e, err := b.Answer(w.Card.ID, "session"); !errors.Is(err, ErrNoCard) || e.OpenForSession {
				t.Fatalf("a second answer: %+v %v", e, err)
			}
		})
	}
}

func TestDenyIsRememberedForTheSession(t *testing.T) {
	b := NewBroker(nil, nil, nil)
	_, w := b.Decide(ask("s1", "evil.example"))
	b.Answer(w.Card.ID, "deny")
	if o, w := b.Decide(ask("s1", "evil.example")); o != Denied || w != nil || len(b.Cards()) != 0 {
		t.Fatalf("a repeated ask after deny: %v, %d cards", o, len(b.Cards()))
	}
	if o, _ := b.Decide(ask("s2", "evil.example")); o != Pending {
		t.Fatalf("another session's ask: %v", o)
	}
	b.Forget("s1", "evil.example:443")
	if o, _ := b.Decide(ask("s1", "evil.example")); o != Pending {
		t.Fatalf("after the person allowed it from Access: %v", o)
	}
}

func TestIdenticalAsksCollapse(t *testing.T) {
	var made int
	b := NewBroker(nil, func(Card) { made++ }, nil)
	var wg sync.WaitGroup
	waits := make(chan *Wait, 50)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, w := b.Decide(ask("s1", "registry.example"))
			waits <- w
		}()
	}
	wg.Wait()
	close(waits)
	cards := b.Cards()
	if made != 1 || len(cards) != 1 || cards[0].Askers != 50 {
		t.Fatalf("%d cards made, %d pending (%+v); want one for 50 askers", made, len(cards), cards)
	}
	if _, err := b.Answer(cards[0].ID, "session"); err != nil {
		t.Fatal(err)
	}
	for w := range waits {
		select {
		case <-w.Done():
		case <-time.After(time.Second):
			t.Fatal("an asker was not woken")
		}
		if w.Outcome() != AllowedSession {
			t.Fatalf("an asker got %v", w.Outcome())
		}
	}
}

func TestCardsEndWithTheirSession(t *testing.T) {
	var ended []Outcome
	b := NewBroker(nil, nil, func(_ Card, o Outcome) { ended = append(ended, o) })
	_, w := b.Decide(ask("s1", "a.example"))
	_, other := b.Decide(ask("s2", "a.example"))
	b.EndSession("s1")
	if w.Outcome() != Ended || other.Outcome() != NoAnswerYet || len(b.Cards()) != 1 {
		t.Fatalf("after the session ended: %v %v %d", w.Outcome(), other.Outcome(), len(b.Cards()))
	}
	if e, err := b.Answer(w.Card.ID, "always"); !errors.Is(err, ErrNoCard) || e.AddToSettings {
		t.Fatalf("answering an expired card: %+v %v", e, err)
	}
	if len(ended) != 1 || ended[0] != Ended {
		t.Fatalf("ends told: %v", ended)
	}
}

// A reason is an agent's text, kept on a card until a person answers: a card keeps only a
// bounded part of it, cut on a character boundary, and says it was cut.
func TestReasonIsBoundedOnTheCard(t *testing.T) {
	b := NewBroker(nil, nil, nil)
	r := ask("s1", "example.com")
	r.Ask.Reason = strings.Repeat("é", 3<<20)
	r.Blocked, r.BlockedCommand = time.Now(), strings.Repeat("日", 1<<20)
	_, w := b.Decide(r)
	c := w.Card
	if len(c.Ask.Reason) > MaxReason+len("…") || !strings.HasSuffix(c.Ask.Reason, "…") || !utf8.ValidString(c.Ask.Reason) {
		t.Fatalf("reason kept: %d bytes, ends %q", len(c.Ask.Reason), c.Ask.Reason[len(c.Ask.Reason)-8:])
	}
	if len(c.BlockedCommand) > MaxBlockedCommand+len("…") || !utf8.ValidString(c.BlockedCommand) {
		t.Fatalf("blocked command kept: %d bytes", len(c.BlockedCommand))
	}
}

// TestSSHCardsAreTheirOwn: an SSH card is per host and key; its denial denies that host and
// key only, never a site of the same name, and lists as no site's denial.
func TestSSHCardsAreTheirOwn(t *testing.T) {
	b := NewBroker(nil, nil, nil)
	login := func(host, key string) Request {
		return Request{Ask: Ask{Session: "s1", Host: host, Port: 22, Kind: SSHLogin, Key: key, Reason: "sign in"}, Mode: ModeAsk}
	}
	o, w := b.Decide(login("github.com", "SHA256:a"))
	if o != Pending || len(Answers(SSHLogin)) != 3 {
		t.Fatalf("an SSH ask: %v", o)
	}
	if o2, _ := b.Decide(login("github.com", "SHA256:b")); o2 != Pending || len(b.Cards()) != 2 {
		t.Fatalf("another key for the same host has no card of its own: %d cards", len(b.Cards()))
	}
	if _, err := b.Answer(w.Card.ID, "deny"); err != nil {
		t.Fatal(err)
	}
	if o, _ := b.Decide(login("github.com", "SHA256:a")); o != Denied {
		t.Fatalf("the denied host and key asked again: %v", o)
	}
	site := ask("s1", "github.com")
	site.Ask.Port = 22
	if o, _ := b.Decide(site); o != Pending {
		t.Fatalf("a site of the same name after an SSH denial: %v", o)
	}
	if d := b.Denials("s1"); len(d) != 0 {
		t.Fatalf("an SSH denial listed as a site's: %v", d)
	}
}
