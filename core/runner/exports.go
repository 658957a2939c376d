package runner

import (
	"errors"
	"strconv"
	"strings"
)

// parseExports reads what a shell's `export -p` prints: one `export NAME=WORD` per variable,
// WORD quoted for the shell to read back. Shells quote differently, so every form they use
// is read: 'single', "double" with backslash escapes, $'ANSI-C', and backslashes outside
// quotes. dash and busybox print `export`; bash prints `declare -x`, or `export` when it is
// sh. A variable exported without a value has no `=` and is left out, as env leaves it out.
//
// Reading the shell's own listing spares every command the start of an env program.
func parseExports(text string) ([]string, error) {
	var env []string
	for p := (exportsParser{s: text}); ; {
		p.skipSpace()
		if p.done() {
			return env, nil
		}
		kv, err := p.record()
		if err != nil {
			return nil, err
		}
		if kv != "" {
			env = append(env, kv)
		}
	}
}

type exportsParser struct {
	s string
	i int
}

var errExports = errors.New("unreadable export -p listing")

func (p *exportsParser) done() bool { return p.i >= len(p.s) }

func (p *exportsParser) skipSpace() {
	for !p.done() && strings.IndexByte(" \t\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

// record reads one line's variable: "NAME=value", or "" for a name without a value.
func (p *exportsParser) record() (string, error) {
	rest := p.s[p.i:]
	switch {
	case strings.HasPrefix(rest, "export "):
		p.i += len("export ")
	case strings.HasPrefix(rest, "declare -x "):
		p.i += len("declare -x ")
	default:
		return "", errExports
	}
	start := p.i
	for !p.done() && isNameByte(p.s[p.i], p.i == start) {
		p.i++
	}
	name := p.s[start:p.i]
	if name == "" {
		return "", errExports
	}
	if p.done() || p.s[p.i] == '\n' {
		return "", nil
	}
	if p.s[p.i] != '=' {
		return "", errExports
	}
	p.i++
	value, err := p.word()
	if err != nil {
		return "", err
	}
	return name + "=" + value, nil
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || !first && '0' <= c && c <= '9'
}

// word reads a shell word up to an unquoted newline or the end.
func (p *exportsParser) word() (string, error) {
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		switch {
		case c == '\n':
			return b.String(), nil
		case c == '\'':
			end := strings.IndexByte(p.s[p.i+1:], '\'')
			if end < 0 {
				return "", errExports
			}
			b.WriteString(p.s[p.i+1 : p.i+1+end])
			p.i += end + 2
		case c == '"':
			if err := p.doubleQuoted(&b); err != nil {
				return "", err
			}
		case c == '$' && p.i+1 < len(p.s) && p.s[p.i+1] == '\'':
			p.i++
			if err := p.ansiC(&b); err != nil {
				return "", err
			}
		case c == '\\' && p.i+1 < len(p.s):
			if p.s[p.i+1] != '\n' {
				b.WriteByte(p.s[p.i+1])
			}
			p.i += 2
		case c == ' ' || c == '\t':
			return "", errExports // one word per variable; anything else was misread
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return b.String(), nil
}

// doubleQuoted reads "…": a backslash escapes only $ ` " \ and a newline.
func (p *exportsParser) doubleQuoted(b *strings.Builder) error {
	for p.i++; !p.done(); p.i++ {
		switch c := p.s[p.i]; {
		case c == '"':
			p.i++
			return nil
		case c == '\\' && p.i+1 < len(p.s) && strings.IndexByte("$`\"\\\n", p.s[p.i+1]) >= 0:
			p.i++
			if p.s[p.i] != '\n' {
				b.WriteByte(p.s[p.i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return errExports
}

// ansiC reads $'…' (p.i at the opening quote), bash's form for values with control
// characters.
func (p *exportsParser) ansiC(b *strings.Builder) error {
	simple := map[byte]byte{'a': '\a', 'b': '\b', 'e': 0x1b, 'E': 0x1b, 'f': '\f', 'n': '\n', 'r': '\r',
		't': '\t', 'v': '\v', '\\': '\\', '\'': '\'', '"': '"', '?': '?'}
	for p.i++; !p.done(); {
		c := p.s[p.i]
		if c == '\'' {
			p.i++
			return nil
		}
		if c != '\\' || p.i+1 >= len(p.s) {
			b.WriteByte(c)
			p.i++
			continue
		}
		e := p.s[p.i+1]
		p.i += 2
		if r, ok := simple[e]; ok {
			b.WriteByte(r)
			continue
		}
		// \xHH (one or two hex digits), \NNN (one to three octal digits), \cX (control).
		switch {
		case e == 'x':
			n := p.digits(2, 16)
			if n == "" {
				return errExports
			}
			v, _ := strconv.ParseUint(n, 16, 8)
			b.WriteByte(byte(v))
		case '0' <= e && e <= '7':
			p.i--
			v, _ := strconv.ParseUint(p.digits(3, 8), 8, 16)
			b.WriteByte(byte(v))
		case e == 'c' && !p.done():
			b.WriteByte(p.s[p.i] & 0x1f)
			p.i++
		case e == 'u' || e == 'U':
			n := p.digits(map[byte]int{'u': 4, 'U': 8}[e], 16)
			v, err := strconv.ParseUint(n, 16, 32)
			if err != nil {
				return errExports
			}
			b.WriteRune(rune(v))
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return errExports
}

// digits takes up to max digits of the base at p.i.
func (p *exportsParser) digits(max, base int) string {
	start := p.i
	for !p.done() && p.i-start < max {
		if _, err := strconv.ParseUint(p.s[p.i:p.i+1], base, 8); err != nil {
			break
		}
		p.i++
	}
	return p.s[start:p.i]
}
