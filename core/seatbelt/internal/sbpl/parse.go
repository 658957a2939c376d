// Package sbpl is a small evaluator of Seatbelt profiles (SBPL), used to prove what a rendered
// profile allows without a Mac. It parses the s-expressions, binds `(param "NAME")` values the
// way `sandbox-exec -D NAME=VALUE` does, and answers whether one operation on one target would
// be allowed.
//
// It is test support, not an enforcement: the kernel's own compiler decides on a Mac. It
// implements only the subset of SBPL that OpenWorker's profiles and the peers' profiles it
// was checked against use, and it refuses anything else (an unknown operation, filter or
// parameter) with an error rather than guessing, so that a typo in a rendered profile fails a
// test instead of silently reading as "denied". The semantics it assumes, and where each comes
// from, are written down in ../../testdata/SEMANTICS.md.
package sbpl

import (
	"fmt"
	"strconv"
	"strings"
)

// nodeKind is the kind of one s-expression.
type nodeKind int

const (
	kindList   nodeKind = iota
	kindSymbol          // version, allow, file-read*, ...
	kindString          // "..." after escapes
	kindRegex           // #"..." (backslashes kept as written)
	kindNumber
)

// node is one parsed s-expression.
type node struct {
	kind nodeKind
	text string // symbol name, string value, regex source or number text
	list []node
	pos  int // byte offset in the source, for errors
}

func (n node) String() string {
	switch n.kind {
	case kindList:
		parts := make([]string, len(n.list))
		for i, c := range n.list {
			parts[i] = c.String()
		}
		return "(" + strings.Join(parts, " ") + ")"
	case kindString:
		return strconv.Quote(n.text)
	case kindRegex:
		return `#"` + n.text + `"`
	default:
		return n.text
	}
}

// parseSexprs reads every top-level s-expression of src.
func parseSexprs(src string) ([]node, error) {
	p := &reader{src: src}
	var out []node
	for {
		p.skipSpace()
		if p.pos >= len(p.src) {
			return out, nil
		}
		n, err := p.read()
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
}

type reader struct {
	src string
	pos int
}

func (r *reader) errorf(pos int, format string, args ...any) error {
	line := 1 + strings.Count(r.src[:min(pos, len(r.src))], "\n")
	return fmt.Errorf("sbpl: line %d: %s", line, fmt.Sprintf(format, args...))
}

// skipSpace skips white space and `;` comments, which run to the end of the line.
func (r *reader) skipSpace() {
	for r.pos < len(r.src) {
		c := r.src[r.pos]
		switch {
		case c == ';':
			for r.pos < len(r.src) && r.src[r.pos] != '\n' {
				r.pos++
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			r.pos++
		default:
			return
		}
	}
}

func (r *reader) read() (node, error) {
	r.skipSpace()
	if r.pos >= len(r.src) {
		return node{}, r.errorf(r.pos, "unexpected end of profile")
	}
	start := r.pos
	switch c := r.src[r.pos]; {
	case c == '(':
		r.pos++
		n := node{kind: kindList, pos: start}
		for {
			r.skipSpace()
			if r.pos >= len(r.src) {
				return node{}, r.errorf(start, "unclosed '('")
			}
			if r.src[r.pos] == ')' {
				r.pos++
				return n, nil
			}
			child, err := r.read()
			if err != nil {
				return node{}, err
			}
			n.list = append(n.list, child)
		}
	case c == ')':
		return node{}, r.errorf(start, "unexpected ')'")
	case c == '"':
		s, err := r.readString()
		if err != nil {
			return node{}, err
		}
		return node{kind: kindString, text: s, pos: start}, nil
	case c == '#' && strings.HasPrefix(r.src[r.pos:], `#"`):
		r.pos += 2
		var b strings.Builder
		for {
			if r.pos >= len(r.src) {
				return node{}, r.errorf(start, "unterminated regex literal")
			}
			ch := r.src[r.pos]
			if ch == '\\' && r.pos+1 < len(r.src) {
				// In a #"..." literal a backslash is kept for the regex engine; it only stops
				// a quote from ending the literal.
				b.WriteByte(ch)
				b.WriteByte(r.src[r.pos+1])
				r.pos += 2
				continue
			}
			r.pos++
			if ch == '"' {
				return node{kind: kindRegex, text: b.String(), pos: start}, nil
			}
			b.WriteByte(ch)
		}
	default:
		for r.pos < len(r.src) && !strings.ContainsRune(" \t\n\r\f();\"", rune(r.src[r.pos])) {
			r.pos++
		}
		tok := r.src[start:r.pos]
		if _, err := strconv.Atoi(tok); err == nil {
			return node{kind: kindNumber, text: tok, pos: start}, nil
		}
		return node{kind: kindSymbol, text: tok, pos: start}, nil
	}
}

// readString reads a "..." string with Scheme escapes: \" \\ \n \t \r and \xHH;.
func (r *reader) readString() (string, error) {
	start := r.pos
	r.pos++ // opening quote
	var b strings.Builder
	for {
		if r.pos >= len(r.src) {
			return "", r.errorf(start, "unterminated string")
		}
		c := r.src[r.pos]
		r.pos++
		switch c {
		case '"':
			return b.String(), nil
		case 0:
			// The compiler works on C strings: a NUL would end the string early.
			return "", r.errorf(start, "NUL byte in string")
		case '\\':
			if r.pos >= len(r.src) {
				return "", r.errorf(start, "unterminated string")
			}
			e := r.src[r.pos]
			r.pos++
			switch e {
			case '"', '\\':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'x':
				end := strings.IndexByte(r.src[r.pos:], ';')
				if end < 0 {
					return "", r.errorf(start, `\x escape without ';'`)
				}
				v, err := strconv.ParseUint(r.src[r.pos:r.pos+end], 16, 8)
				if err != nil {
					return "", r.errorf(start, `bad \x escape`)
				}
				b.WriteByte(byte(v))
				r.pos += end + 1
			default:
				return "", r.errorf(start, "unknown escape \\%c in string", e)
			}
		default:
			b.WriteByte(c)
		}
	}
}
