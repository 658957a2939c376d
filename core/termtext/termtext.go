// Package termtext makes text that came from a sandboxed command, an agent or the web safe to
// print on a person's terminal: escaped, so that it can neither drive the terminal nor forge
// a line, and cut to a bound on a character boundary. It is not for what a command writes to
// its own standard output and error, which are the command's and pass through as they are.
package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape returns s with what a terminal would act on escaped: control characters (C0, DEL,
// and C1, which start escape sequences on some terminals), the ESC of every escape sequence,
// carriage returns and newlines, bidirectional overrides and isolates that reorder what is
// shown, and invalid UTF-8. Everything else is kept as it is, so ordinary text reads the same.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unsafeRune(r):
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || unsafeRune(r) {
			return true
		}
		i += size
	}
	return false
}

func unsafeRune(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f ||
		r == 0x061c || r == 0x2028 || r == 0x2029
}

// Cut returns s cut to at most n bytes, ending on a character boundary (never inside a UTF-8
// sequence), and whether it was cut. It does not add a mark: callers say the text was cut in
// the way their reader expects (an ellipsis, a field's flag).
func Cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	if n <= 0 {
		return "", true
	}
	i := n
	// Back up over continuation bytes to the start of the character that crosses n.
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], true
}

// Short is s cut to at most n bytes on a character boundary, with "…" added when it was cut.
func Short(s string, n int) string {
	if c, cut := Cut(s, n); cut {
		return c + "…"
	}
	return s
}

// Show is Short, then Escape: a bounded, printable form of text from a command or an agent.
func Show(s string, n int) string { return Escape(Short(s, n)) }

// Lines is Escape for a message that may have lines of its own (a list of problems): each
// line is escaped, and every line after the first is indented, so that no line of it can
// start where a line of OpenWorker's own starts.
func Lines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Escape(l)
		if i > 0 {
			lines[i] = "  " + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}
