package webfetch

import (
	"bytes"
	"mime"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlText is a page as a person reads it: its first <title>, and its text with script, style,
// noscript and template content left out, headings, paragraphs and other blocks separated by a
// blank line, list items, table rows and line breaks on lines of their own, and runs of white
// space collapsed (kept inside <pre>). It reads nothing but src: no stylesheet, image or frame
// is fetched. It streams tokens rather than building a tree, so a hostile page's nesting costs
// it nothing, and its output is valid UTF-8 no longer than three times src.
func htmlText(src string) (title, text string) {
	src = strings.ToValidUTF8(src, "\uFFFD")
	z := html.NewTokenizer(strings.NewReader(src))
	var (
		w       textWriter
		t       strings.Builder
		skip    int  // depth inside elements whose content is not shown
		foreign int  // depth inside <svg> or <math>, where <title> is not the page's
		pre     int  // depth inside <pre>
		inTitle bool // inside the page's first <title>
		titled  bool // the page's title has been taken
		inOther bool // inside a later <title>, which is neither title nor text
		preOpen bool // a <pre> just opened: its first newline is not content
	)
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return strings.TrimSpace(collapse(t.String())), w.String()
		case html.TextToken:
			b := z.Text()
			switch {
			case skip > 0, inOther:
			case inTitle:
				t.Write(b)
			case pre > 0:
				if preOpen && len(b) > 0 && b[0] == '\n' {
					b = b[1:]
				}
				w.verbatim(b)
			default:
				w.words(b)
			}
			preOpen = false
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			start := tt == html.StartTagToken
			end := tt == html.EndTagToken
			if foreign > 0 && start {
				// The tokenizer reads a <title> or <style> as raw text; inside SVG and
				// MathML they hold markup, as a browser's parser sees it.
				z.NextIsNotRawText()
			}
			preOpen = false
			switch a {
			case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Iframe, atom.Noembed, atom.Noframes:
				if start {
					skip++
				} else if end && skip > 0 {
					skip--
				}
				continue
			case atom.Svg, atom.Math:
				if start {
					foreign++
				} else if end && foreign > 0 {
					foreign--
				}
				continue
			case atom.Title:
				if foreign > 0 {
					continue
				}
				switch {
				case start && !titled && skip == 0:
					inTitle, titled = true, true
				case start:
					inOther = true
				case end:
					inTitle, inOther = false, false
				}
				continue
			}
			if skip > 0 || inTitle || inOther {
				continue
			}
			switch a {
			case atom.Br:
				w.newline()
			case atom.Li, atom.Dt:
				w.lineBreak()
				if start {
					w.bullet = a == atom.Li
				}
			case atom.Tr, atom.Div, atom.Dd, atom.Section, atom.Article, atom.Header, atom.Footer,
				atom.Nav, atom.Aside, atom.Main, atom.Figure, atom.Figcaption, atom.Form, atom.Fieldset,
				atom.Address, atom.Details, atom.Summary, atom.Caption, atom.Option, atom.Legend:
				w.lineBreak()
			case atom.Td, atom.Th:
				w.space = true
			case atom.P, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Ul, atom.Ol, atom.Dl,
				atom.Table, atom.Blockquote, atom.Hr:
				w.paragraph()
				if end && (a == atom.Ul || a == atom.Ol || a == atom.Dl) {
					w.bullet = false
				}
			case atom.Pre:
				w.paragraph()
				if start {
					pre++
					preOpen = true
				} else if end && pre > 0 {
					pre--
				}
			}
		}
	}
}

// textWriter writes words with the breaks between them decided lazily, so that no run of
// breaks is ever longer than one blank line and none lead or trail.
type textWriter struct {
	b        strings.Builder
	breaks   int  // newlines owed before the next word: 0, 1 or 2
	space    bool // a space owed before the next word
	bullet   bool // a "- " owed before the next word
	midLine  bool // something has been written on the current line
	anything bool // something has been written at all
}

func (w *textWriter) newline() {
	if w.anything && w.breaks < 2 {
		w.breaks++
	}
	w.midLine = false
}

func (w *textWriter) lineBreak() {
	if w.anything && w.breaks < 1 {
		w.breaks = 1
	}
	w.midLine = false
}

func (w *textWriter) paragraph() {
	if w.anything {
		w.breaks = 2
	}
	w.midLine = false
}

// flush writes what is owed before a word.
func (w *textWriter) flush() {
	if w.breaks > 0 {
		w.b.WriteString("\n\n"[:w.breaks])
		w.breaks, w.space = 0, false
	} else if w.space && w.midLine {
		w.b.WriteByte(' ')
	}
	w.space = false
	if w.bullet {
		w.b.WriteString("- ")
		w.bullet = false
	}
	w.midLine, w.anything = true, true
}

// words writes text with its white space collapsed and its control characters dropped.
func (w *textWriter) words(b []byte) {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if unicode.IsSpace(r) {
			w.space = true
			b = b[n:]
			continue
		}
		i := 0
		for i < len(b) {
			r, n := utf8.DecodeRune(b[i:])
			if unicode.IsSpace(r) {
				break
			}
			i += n
		}
		word := dropControls(b[:i])
		if len(word) > 0 {
			w.flush()
			w.b.Write(word)
		}
		b = b[i:]
	}
}

// verbatim writes a <pre>'s text as it is, less control characters other than tab and newline.
func (w *textWriter) verbatim(b []byte) {
	b = dropControls(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			i = len(b)
		}
		if i > 0 {
			w.flush()
			w.b.Write(b[:i])
		}
		if i == len(b) {
			return
		}
		// A newline inside <pre> is content: it is written, not owed.
		if w.anything {
			w.flush()
			w.b.WriteByte('\n')
			w.midLine = false
		}
		b = b[i+1:]
	}
}

func (w *textWriter) String() string { return strings.TrimRight(w.b.String(), " \t\n") }

// dropControls removes C0 and C1 control characters other than tab and newline: a page's
// NULs and terminal escape sequences are nothing a reader needs, and could act on a terminal
// that shows the text.
func dropControls(b []byte) []byte {
	clean := true
	for _, r := range string(b) {
		if unicode.IsControl(r) && r != '\t' && r != '\n' {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b))
	for _, r := range string(b) {
		if !unicode.IsControl(r) || r == '\t' || r == '\n' {
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}

// collapse is a title's text with its white space collapsed and its controls dropped.
func collapse(s string) string {
	return strings.Join(strings.Fields(string(dropControls([]byte(s)))), " ")
}

// metaCharset is the charset a page declares in a <meta> within its first 1024 bytes, the
// part a browser's prescan reads, or "" when it declares none there.
func metaCharset(b []byte) string {
	if len(b) > 1024 {
		b = b[:1024]
	}
	z := html.NewTokenizer(bytes.NewReader(b))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch atom.Lookup(name) {
			case atom.Body:
				return ""
			case atom.Meta:
				var charset, equiv, content string
				for hasAttr {
					var k, v []byte
					k, v, hasAttr = z.TagAttr()
					switch string(k) {
					case "charset":
						charset = string(v)
					case "http-equiv":
						equiv = strings.ToLower(string(v))
					case "content":
						content = string(v)
					}
				}
				if charset != "" {
					return strings.TrimSpace(charset)
				}
				if equiv == "content-type" {
					if _, params, err := mime.ParseMediaType(content); err == nil && params["charset"] != "" {
						return params["charset"]
					}
				}
			}
		}
	}
}

// decode turns a text body into UTF-8 under the charset its response declares. UTF-8 (also
// when a byte order mark says so, whatever is declared) and the Latin-1 family, which the web
// reads as windows-1252, are decoded; any other charset passes through as UTF-8. Invalid bytes
// become U+FFFD.
func decode(b []byte, charset string) string {
	label := charsetLabel(charset)
	if bytes.HasPrefix(b, []byte("\xef\xbb\xbf")) {
		b, label = b[3:], "utf-8"
	}
	if latin1Labels[label] {
		return windows1252(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// charsetLabel is a charset's name as the tables here spell it.
func charsetLabel(charset string) string {
	return strings.ToLower(strings.Trim(strings.TrimSpace(charset), `"'`))
}

// trimCut drops an incomplete UTF-8 character from the end of a truncated body, which ends
// wherever the limit fell.
func trimCut(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// latin1Labels are the labels the WHATWG Encoding standard maps to windows-1252.
var latin1Labels = map[string]bool{
	"ansi_x3.4-1968": true, "ascii": true, "cp1252": true, "cp819": true, "csisolatin1": true,
	"ibm819": true, "iso-8859-1": true, "iso-ir-100": true, "iso8859-1": true, "iso88591": true,
	"iso_8859-1": true, "iso_8859-1:1987": true, "l1": true, "latin1": true, "us-ascii": true,
	"windows-1252": true, "x-cp1252": true,
}

// cp1252 maps 0x80–0x9F, where windows-1252 differs from Latin-1; 0 keeps the C1 control.
var cp1252 = [32]rune{
	0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017D, 0,
	0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
}

func windows1252(b []byte) string {
	var s strings.Builder
	s.Grow(len(b))
	for _, c := range b {
		r := rune(c)
		if c >= 0x80 && c < 0xA0 && cp1252[c-0x80] != 0 {
			r = cp1252[c-0x80]
		}
		s.WriteRune(r)
	}
	return s.String()
}
