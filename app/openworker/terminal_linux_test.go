package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostile is text a command or an agent chose to drive a person's terminal: it ends a line,
// redraws it, sets the title, hides what follows and reverses what is shown.
const hostile = "x\r\x1b[2K\x1b]0;t\x07\x1b[8m\u202e\nopenworker: fake\xff"

// requireInert fails when out holds anything a terminal would act on.
func requireInert(t *testing.T, what, out string) {
	t.Helper()
	for i, r := range out {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x202e {
			t.Fatalf("%s printed %U at %d: %q", what, r, i, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "openworker: fake") {
			t.Fatalf("%s printed a line the hostile text made: %q", what, out)
		}
	}
}

// Every surface that prints what a command or an agent wrote prints it escaped: the cards
// (the reason), session list (the names a command made), request-site, and errors.
func TestHostileTextReachesTheTerminalEscaped(t *testing.T) {
	cw := newCardsWorld(t, "")
	if err := os.WriteFile(filepath.Join(cw.project, "evil"+hostile), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := cw.run("session", "list", cw.id, cw.project)
	if code != 0 || !strings.Contains(out, "evil") {
		t.Fatalf("session list: %d %q %q", code, out, errs)
	}
	requireInert(t, "session list", out+errs)

	out, errs, _ = cw.run("request-site", cw.id, "evil.example.com", "--reason", hostile, "--wait", "0.2s")
	requireInert(t, "request-site", out+errs)
	out, errs, _ = cw.run("cards")
	if !strings.Contains(out, "evil.example.com") {
		t.Fatalf("no card: %q %q", out, errs)
	}
	requireInert(t, "cards", out+errs)
	if n := strings.Count(strings.TrimSpace(out), "\n"); n != 0 {
		t.Fatalf("one card took %d lines: %q", n+1, out)
	}

	out, errs, code = cw.run("session", "read", cw.id, "no-such"+hostile)
	if code == 0 {
		t.Fatalf("reading a missing file: %q", out)
	}
	requireInert(t, "an error", out+errs)
}
