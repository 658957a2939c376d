package gitmeta

import (
	"errors"
	"fmt"
	"strings"
)

// A key of a git settings file, as git names it: the section and the key's name lower-cased,
// the subsection (between them) kept as written.
type key struct{ section, sub, name string }

func (k key) String() string {
	if k.sub == "" {
		return k.section + "." + k.name
	}
	return k.section + "." + k.sub + "." + k.name
}

// dangerous are the keys of a repository's settings that make the person's own git run a
// program, or read settings from another file, outside the sandbox. A pattern is
// section.name (no subsection), section.*.name (any subsection), or section.* (any key of
// the section, with or without a subsection). Sources: git-config(1), githooks(5),
// gitattributes(5) (drivers named by attributes run what the settings say).
var dangerous = []string{
	"core.fsmonitor", "core.hookspath", "core.sshcommand", "core.pager", "core.editor",
	"core.askpass", "core.gitproxy", "core.alternaterefscommand",
	"sequence.editor", "interactive.difffilter",
	"diff.external", "diff.*.textconv", "diff.*.command",
	"filter.*", "merge.*.driver",
	"credential.helper", "credential.*.helper",
	"include.path", "includeif.*",
	"pager.*", "alias.*", "hook.*",
	"gpg.*",
	"remote.*.uploadpack", "remote.*.receivepack", "remote.*.vcs",
	"protocol.allow", "protocol.*.allow",
	"difftool.*.cmd", "difftool.*.path", "mergetool.*.cmd", "mergetool.*.path",
	"web.browser", "browser.*.cmd", "browser.*.path", "man.viewer", "man.*.cmd", "man.*.path",
	"sendemail.smtpserver", "sendemail.tocmd", "sendemail.cccmd", "sendemail.*.smtpserver",
	"submodule.*.update", "trailer.*.command", "trailer.*.cmd", "instaweb.*",
}

// isDangerous says whether k matches one of the dangerous patterns.
func isDangerous(k key) bool {
	for _, p := range dangerous {
		parts := strings.Split(p, ".")
		if parts[0] != k.section {
			continue
		}
		switch {
		case len(parts) == 2 && parts[1] == "*":
			return true
		case len(parts) == 2 && k.sub == "" && parts[1] == k.name:
			return true
		case len(parts) == 3 && k.sub != "" && parts[2] == k.name:
			return true
		}
	}
	return false
}

// dangerousKeys returns the dangerous keys set in a git settings file's contents, each
// once, in file order. What git would refuse to read, it refuses too: a file that is not
// valid is dangerous as a whole (errBadConfig), since a reader more lenient than this one
// might find a key in it that this one did not.
func dangerousKeys(data []byte) ([]string, error) {
	keys, err := parseKeys(data)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, k := range keys {
		if s := k.String(); isDangerous(k) && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out, nil
}

var errBadConfig = errors.New("not a valid git settings file")

// parseKeys returns every key a git settings file sets, following git's own reader
// (config.c: get_base_var, get_value, parse_value): keys may follow a section header on its
// line, values may be quoted and continue on the next line after a backslash, comments start
// with # or ; outside quotes.
func parseKeys(data []byte) ([]key, error) {
	p := &cfgParser{data: data}
	if len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF {
		p.i = 3
	}
	var keys []key
	section, sub := "", ""
	haveSection := false
	for {
		c, ok := p.next()
		if !ok {
			return keys, nil
		}
		switch {
		case c == '\n' || c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f':
		case c == '#' || c == ';':
			p.skipLine()
		case c == '[':
			var err error
			if section, sub, err = p.header(); err != nil {
				return nil, err
			}
			haveSection = true
		case isAlpha(c):
			if !haveSection {
				return nil, fmt.Errorf("%w: a key before any [section]", errBadConfig)
			}
			name := []byte{lower(c)}
			for {
				c, ok = p.peek()
				if !ok || !(isAlnum(c) || c == '-') {
					break
				}
				p.i++
				name = append(name, lower(c))
			}
			if err := p.value(); err != nil {
				return nil, err
			}
			keys = append(keys, key{section: section, sub: sub, name: string(name)})
		default:
			return nil, fmt.Errorf("%w: unexpected %q at byte %d", errBadConfig, c, p.i-1)
		}
	}
}

type cfgParser struct {
	data []byte
	i    int
}

// next returns the next character, a "\r\n" read as '\n', as git does.
func (p *cfgParser) next() (byte, bool) {
	if p.i >= len(p.data) {
		return 0, false
	}
	c := p.data[p.i]
	p.i++
	if c == '\r' && p.i < len(p.data) && p.data[p.i] == '\n' {
		p.i++
		c = '\n'
	}
	return c, true
}

func (p *cfgParser) peek() (byte, bool) {
	if p.i >= len(p.data) {
		return 0, false
	}
	return p.data[p.i], true
}

func (p *cfgParser) skipLine() {
	for {
		c, ok := p.next()
		if !ok || c == '\n' {
			return
		}
	}
}

// header reads a section header after its '[': "[section]", "[section "sub"]" or the old
// "[section.sub]" (all lower-cased).
func (p *cfgParser) header() (section, sub string, err error) {
	var name []byte
	for {
		c, ok := p.next()
		if !ok {
			return "", "", fmt.Errorf("%w: a section header does not end", errBadConfig)
		}
		switch {
		case c == ']':
			// The old form: the subsection is what follows the first dot, lower-cased.
			section, sub, _ = strings.Cut(string(name), ".")
			return section, sub, nil
		case c == ' ' || c == '\t':
			s, err := p.subsection()
			return string(name), s, err
		case isAlnum(c) || c == '-' || c == '.':
			name = append(name, lower(c))
		default:
			return "", "", fmt.Errorf("%w: %q in a section name", errBadConfig, c)
		}
	}
}

// subsection reads ` "sub"]` after a section's name.
func (p *cfgParser) subsection() (string, error) {
	c, ok := p.next()
	for ok && (c == ' ' || c == '\t') {
		c, ok = p.next()
	}
	if !ok || c != '"' {
		return "", fmt.Errorf("%w: a subsection is not quoted", errBadConfig)
	}
	var sub []byte
	for {
		c, ok = p.next()
		if !ok || c == '\n' {
			return "", fmt.Errorf("%w: a subsection does not end", errBadConfig)
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			if c, ok = p.next(); !ok || c == '\n' {
				return "", fmt.Errorf("%w: a subsection does not end", errBadConfig)
			}
		}
		sub = append(sub, c)
	}
	if c, ok = p.next(); !ok || c != ']' {
		return "", fmt.Errorf("%w: a subsection's header does not end with ]", errBadConfig)
	}
	return string(sub), nil
}

// value skips what follows a key's name: blanks, then the end of the line (a key without a
// value) or "=" and the value.
func (p *cfgParser) value() error {
	c, ok := p.next()
	for ok && (c == ' ' || c == '\t') {
		c, ok = p.next()
	}
	if !ok || c == '\n' {
		return nil
	}
	if c != '=' {
		return fmt.Errorf("%w: a key is not followed by =", errBadConfig)
	}
	quoted, comment := false, false
	for {
		c, ok = p.next()
		if !ok {
			if quoted {
				return fmt.Errorf("%w: a quoted value does not end", errBadConfig)
			}
			return nil
		}
		if c == '\n' {
			if quoted {
				return fmt.Errorf("%w: a quoted value does not end on its line", errBadConfig)
			}
			return nil
		}
		if comment {
			continue
		}
		switch {
		case !quoted && (c == '#' || c == ';'):
			comment = true
		case c == '"':
			quoted = !quoted
		case c == '\\':
			c, ok = p.next()
			if !ok {
				return fmt.Errorf("%w: a value ends with a backslash", errBadConfig)
			}
			switch c {
			case '\n', 't', 'b', 'n', '\\', '"':
			default:
				return fmt.Errorf("%w: %q after a backslash in a value", errBadConfig, c)
			}
		}
	}
}

func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isAlnum(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' }
func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
