package main

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openworker/openworker/core/backend"
)

// A card's text came from an agent (the reason) and a command (what ran when the site was
// blocked): a carriage return, an escape sequence or a newline in it must not redraw the
// card so that another site shows, nor add a card.
func TestCardLineEscapesWhatTheAgentWrote(t *testing.T) {
	c := backend.CardInfo{ID: "c1a2b3c4d5", Session: "3f9c2a1b7d0e", Site: "evil.example:443", Kind: "command",
		Reason:         "needed\r\x1b[2Kc1a2b3c4d5  session 3f9c2a1b7d0e  github.com:443\n\x1b]0;x\x07\u202emoc",
		Blocked:        time.Now(),
		BlockedCommand: strings.Repeat("a", 59) + "é\x1b[8m" + strings.Repeat("b", 40),
		Answers:        []string{"session", "always", "deny"}}
	line := cardLine(c)
	for i, r := range line {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x202e {
			t.Fatalf("card line has %U at %d: %q", r, i, line)
		}
	}
	if !utf8.ValidString(line) {
		t.Fatalf("card line is not valid UTF-8 (a character was cut): %q", line)
	}
	if strings.Count(line, "github.com") != 1 || !strings.Contains(line, "evil.example:443") {
		t.Fatalf("card line: %q", line)
	}
}

// An SSH card's line says which kind of signature its answer holds for.
func TestCardLineSaysTheSSHKind(t *testing.T) {
	for kind, want := range map[string]string{"ssh": "an answer holds for logins to this server, not for signatures)",
		"ssh-signing": "an answer holds for signatures for this, not for logins)"} {
		line := cardLine(backend.CardInfo{ID: "c1", Session: "s1", Site: "prod.example", Kind: kind, Answers: []string{"session", "always", "deny"}})
		if !strings.Contains(line, want) {
			t.Errorf("a %s card's line does not say %q: %s", kind, want, line)
		}
	}
}

// An SSH card is no blocked site: its line says which command asked for the signature.
func TestCardLineOfAnSSHCard(t *testing.T) {
	c := backend.CardInfo{ID: "c1", Session: "s1", Site: "github.com", Kind: "ssh", Reason: "The coworker wants to sign in to github.com over SSH as you",
		BlockedCommand: "git push", Answers: []string{"session", "always", "deny"}}
	line := cardLine(c)
	if strings.Contains(line, "blocked") || !strings.Contains(line, `(SSH login; asked by "git push"; an answer holds`) {
		t.Errorf("ssh card: %q", line)
	}
	c.BlockedCommand = ""
	if line := cardLine(c); strings.Contains(line, "blocked") || !strings.Contains(line, "(SSH login; asked while no command ran; an answer holds") {
		t.Errorf("ssh card without a command: %q", line)
	}
}
