package gitmeta

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// A key of a git settings file, as git names it: the section and the key's name lower-cased,
// the subsection (between them) kept as written.
type key struct{ section, sub, name string }

// keyValue is a key with the value a settings file gives it.
type keyValue struct {
	key
	value string
}

func (k key) String() string {
	if k.sub == "" {
		return k.section + "." + k.name
	}
	return k.section + "." + k.sub + "." + k.name
}

// A repository a command made, or a settings file it changed, may set only keys that make
// the person's own git run nothing and read nothing else: the keys git itself writes (init,
// clone, submodules, worktrees, push -u) and everyday tools set, each named below. Any other
// key is dangerous, whether it runs a program (core.fsmonitor, filter.*, tar.*.command,
// sendemail.*cmd, lfs.customtransfer.*.path, …) or one git adds later. A pattern is
// section.name, section.*.name (any subsection) or section.* (any key of the section, with or
// without a subsection). Sources: git-config(1), githooks(5), gitattributes(5), git-lfs-config(5).
var harmless = []string{
	"core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates", "core.ignorecase",
	"core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol", "core.safecrlf", "core.quotepath",
	"core.compression", "core.loosecompression", "core.bigfilethreshold", "core.abbrev", "core.sharedrepository",
	"core.warnambiguousrefs", "core.untrackedcache", "core.splitindex", "core.checkstat", "core.trustctime",
	"core.commentchar", "core.commentstring", "core.whitespace", "core.sparsecheckout", "core.sparsecheckoutcone",
	"core.preloadindex", "core.fscache", "core.longpaths", "core.multipackindex", "core.commitgraph",
	"user.*", "author.*", "committer.*", "init.*",
	"remote.*.url", "remote.*.pushurl", "remote.*.fetch", "remote.*.push", "remote.*.mirror", "remote.*.tagopt",
	"remote.*.prune", "remote.*.prunetags", "remote.*.skipdefaultupdate", "remote.*.skipfetchall", "remote.*.promisor",
	"remote.*.partialclonefilter", "remote.*.proxy", "remote.*.followremotehead",
	"branch.*.remote", "branch.*.pushremote", "branch.*.merge", "branch.*.rebase", "branch.*.description",
	"branch.autosetupmerge", "branch.autosetuprebase", "branch.sort",
	"submodule.*.url", "submodule.*.active", "submodule.*.branch", "submodule.*.fetchrecursesubmodules",
	"submodule.*.ignore", "submodule.recurse", "submodule.active", "submodule.fetchjobs",
	"pull.*", "push.*", "fetch.*", "rebase.*", "commit.*", "tag.*", "color.*", "advice.*", "status.*", "log.*",
	"gc.*", "pack.*", "index.*", "feature.*", "extensions.*", "maintenance.*", "http.*", "blame.*", "clone.*",
	"merge.ff", "merge.conflictstyle", "merge.log", "merge.renames", "merge.verbosity", "merge.autostash",
	"diff.renames", "diff.algorithm", "diff.colormoved", "diff.mnemonicprefix", "diff.noprefix",
	"diff.indentheuristic", "diff.submodule", "diff.ignoresubmodules", "diff.context", "diff.interhunkcontext",
	"lfs.url", "lfs.pushurl", "lfs.repositoryformatversion", "lfs.fetchinclude", "lfs.fetchexclude", "lfs.locksverify",
	"lfs.*.access", "lfs.*.locksverify",
}

// isDangerous says whether k is not among the harmless keys.
func isDangerous(k key) bool {
	for _, p := range harmless {
		parts := strings.SplitN(p, ".", 3)
		if parts[0] != k.section {
			continue
		}
		switch {
		case len(parts) == 2 && parts[1] == "*":
			return false
		case len(parts) == 2 && k.sub == "" && parts[1] == k.name:
			return false
		case len(parts) == 3 && k.sub != "" && parts[2] == k.name:
			return false
		}
	}
	return true
}

// dangerousKeys returns the dangerous keys set in a git settings file's contents, each
// once, in file order. What git would refuse to read, it refuses too: a file that is not
// valid is dangerous as a whole (errBadConfig), since a reader more lenient than this one
// might find a key in it that this one did not. core.worktree, which git writes for a
// submodule, is harmless where it names a folder (from dir, the settings file's folder) that
// inside says is one of the session's; anywhere else, or with no dir, it is dangerous: the
// person's git checkout or clean would work on that folder.
func dangerousKeys(data []byte, dir string, inside func(path string) bool) ([]string, error) {
	keys, err := parseKeys(data)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, k := range keys {
		bad := isDangerous(k.key)
		if k.section == "core" && k.sub == "" && k.name == "worktree" {
			bad = !worktreeInside(k.value, dir, inside)
		}
		if s := k.String(); bad && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out, nil
}

// worktreeInside says whether a core.worktree value, from the settings file's folder dir,
// names a folder inside says is the session's.
func worktreeInside(value, dir string, inside func(string) bool) bool {
	if dir == "" || inside == nil || value == "" {
		return false
	}
	p := value
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return inside(filepath.Clean(p))
}

var errBadConfig = errors.New("not a valid git settings file")

// parseKeys returns every key a git settings file sets, following git's own reader
// (config.c: get_base_var, get_value, parse_value): keys may follow a section header on its
// line, values may be quoted and continue on the next line after a backslash, comments start
// with # or ; outside quotes.
func parseKeys(data []byte) ([]keyValue, error) {
	p := &cfgParser{data: data}
	if len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF {
		p.i = 3
	}
	var keys []keyValue
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
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			keys = append(keys, keyValue{key{section: section, sub: sub, name: string(name)}, v})
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

// value reads what follows a key's name: blanks, then the end of the line (a key without a
// value) or "=" and the value, which it returns as git reads it (quotes taken off, escapes
// and continued lines joined, blanks at its ends trimmed).
func (p *cfgParser) value() (string, error) {
	c, ok := p.next()
	for ok && (c == ' ' || c == '\t') {
		c, ok = p.next()
	}
	if !ok || c == '\n' {
		return "", nil
	}
	if c != '=' {
		return "", fmt.Errorf("%w: a key is not followed by =", errBadConfig)
	}
	var v []byte
	quoted, comment := false, false
	for {
		c, ok = p.next()
		if !ok {
			if quoted {
				return "", fmt.Errorf("%w: a quoted value does not end", errBadConfig)
			}
			return strings.TrimSpace(string(v)), nil
		}
		if c == '\n' {
			if quoted {
				return "", fmt.Errorf("%w: a quoted value does not end on its line", errBadConfig)
			}
			return strings.TrimSpace(string(v)), nil
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
				return "", fmt.Errorf("%w: a value ends with a backslash", errBadConfig)
			}
			switch c {
			case '\n':
			case 't':
				v = append(v, '\t')
			case 'b':
				v = append(v, '\b')
			case 'n':
				v = append(v, '\n')
			case '\\', '"':
				v = append(v, c)
			default:
				return "", fmt.Errorf("%w: %q after a backslash in a value", errBadConfig, c)
			}
		default:
			v = append(v, c)
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
