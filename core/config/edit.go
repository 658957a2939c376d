package config

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// The text edits below change only the bytes of the value they touch (and, for a list, the
// separator next to it), so the user's comments, order and layout survive a write-back. Each
// result is parsed again before it is used; an edit that would not give a valid file is
// refused rather than written.

// replace returns data with data[start:end] replaced by text.
func replace(data []byte, start, end int, text string) []byte {
	out := make([]byte, 0, len(data)-(end-start)+len(text))
	out = append(out, data[:start]...)
	out = append(out, text...)
	return append(out, data[end:]...)
}

// tomlString renders s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		case r == utf8.RuneError:
			b.WriteString(`\uFFFD`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// newlineAt returns the line ending used by the line that ends at or after offset.
func newlineAt(data []byte, offset int) string {
	if e := lineEnd(data, offset); e >= 2 && data[e-1] == '\n' && data[e-2] == '\r' {
		return "\r\n"
	}
	return "\n"
}

func isBlank(b []byte) bool { return len(bytes.TrimLeft(b, " \t")) == 0 }

// insertTopLevel adds a "key = value" line among the top-level settings.
func insertTopLevel(doc *document, key, value string) []byte {
	data := doc.data
	at := doc.topInsert
	nl := "\n"
	if bytes.Contains(data, []byte("\r\n")) {
		nl = "\r\n"
	}
	text := key + " = " + value + nl
	if at > 0 && data[at-1] != '\n' {
		text = nl + text
	}
	if doc.topBeforeTable {
		// Keep a blank line between the settings and the table.
		text += nl
	}
	return replace(data, at, at, text)
}

// appendToList adds value (TOML text) as the last element of the list at vi, following the
// list's own layout: on one line it becomes ", value"; in a list with one element per line
// it becomes a new line with the same indentation, with or without a trailing comma as the
// list already has.
func appendToList(data []byte, vi *valueIndex, value string) []byte {
	open, closing := vi.value.start, vi.value.end-1
	if len(vi.elems) == 0 {
		if len(bytes.TrimSpace(data[open+1:closing])) == 0 {
			return replace(data, open, closing+1, "["+value+"]")
		}
		return replace(data, open+1, open+1, value)
	}
	last := vi.elems[len(vi.elems)-1]
	if !bytes.Contains(data[last.end:closing], []byte("\n")) {
		return replace(data, last.end, last.end, ", "+value)
	}
	ls := lineStart(data, last.start)
	indent := data[ls:last.start]
	if !isBlank(indent) {
		indent = indent[:len(indent)-len(bytes.TrimLeft(indent, " \t"))]
	}
	eol := lineEnd(data, last.end) // just past '\n'; the list closes on a later line
	nl := newlineAt(data, last.end)
	rest := bytes.TrimLeft(data[last.end:eol], " \t")
	if len(rest) > 0 && rest[0] == ',' {
		return replace(data, eol, eol, string(indent)+value+","+nl)
	}
	// No comma after the last element: add one right after it, and the new element on a new
	// line after any comment that ends the old line.
	out := replace(data, eol-len(nl), eol-len(nl), nl+string(indent)+value)
	return replace(out, last.end, last.end, ",")
}

// removeFromList removes element i of the list at vi with the separator that goes with it.
// An element alone on its line takes its line (and that line's comment) with it.
func removeFromList(data []byte, vi *valueIndex, i int) []byte {
	el := vi.elems[i]
	ls, le := lineStart(data, el.start), lineEnd(data, el.end)
	if isBlank(data[ls:el.start]) && ls > vi.value.start && le <= vi.value.end {
		rest := bytes.TrimLeft(data[el.end:le], " \t")
		rest = bytes.TrimPrefix(rest, []byte(","))
		rest = bytes.TrimLeft(rest, " \t")
		if len(rest) == 0 || rest[0] == '#' || rest[0] == '\n' || rest[0] == '\r' {
			return replace(data, ls, le, "")
		}
	}
	j := el.end
	for j < len(data) && (data[j] == ' ' || data[j] == '\t') {
		j++
	}
	if j < len(data) && data[j] == ',' {
		j++
		for j < len(data) && (data[j] == ' ' || data[j] == '\t') {
			j++
		}
		return replace(data, el.start, j, "")
	}
	// The last element, with the list's end on its line: take the comma before it.
	k := el.start
	for k > 0 && (data[k-1] == ' ' || data[k-1] == '\t') {
		k--
	}
	if k > 0 && data[k-1] == ',' {
		return replace(data, k-1, el.end, "")
	}
	return replace(data, k, el.end, "")
}

// credentialBlock renders a new [[sandbox_credentials]] entry.
func credentialBlock(c Credential, nl string) string {
	var b strings.Builder
	b.WriteString("[[sandbox_credentials]]" + nl)
	if c.Name != "" {
		b.WriteString("name = " + tomlString(c.Name) + nl)
		if c.Keys != "" {
			b.WriteString("keys = " + tomlString(c.Keys) + nl)
		}
		if c.Secrets != "" {
			b.WriteString("secrets = " + tomlString(c.Secrets) + nl)
		}
		for _, l := range []struct {
			key  string
			vals []string
		}{{"agent_logins", c.AgentLogins}, {"agent_signing", c.AgentSigning}} {
			if len(l.vals) > 0 {
				vs := make([]string, len(l.vals))
				for i, v := range l.vals {
					vs[i] = tomlString(v)
				}
				b.WriteString(l.key + " = [" + strings.Join(vs, ", ") + "]" + nl)
			}
		}
	} else {
		b.WriteString("path = " + tomlString("~/"+c.Path) + nl)
		b.WriteString("label = " + tomlString(c.Label) + nl)
		hs := make([]string, len(c.Hosts))
		for i, h := range c.Hosts {
			hs[i] = tomlString(h.String())
		}
		b.WriteString("hosts = [" + strings.Join(hs, ", ") + "]" + nl)
		if c.Var != "" {
			b.WriteString("var = " + tomlString(c.Var) + nl)
		}
	}
	fmt.Fprintf(&b, "enabled = %t%s", c.Enabled, nl)
	return b.String()
}

// appendBlock adds text at the end of the file, after a blank line.
func appendBlock(data []byte, text string) []byte {
	nl := "\n"
	if bytes.Contains(data, []byte("\r\n")) {
		nl = "\r\n"
	}
	out := slices.Clone(data)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, nl...)
	}
	if len(out) > 0 && !bytes.HasSuffix(out, []byte(nl+nl)) {
		out = append(out, nl...)
	}
	return append(out, text...)
}
