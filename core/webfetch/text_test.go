package webfetch

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHTMLText(t *testing.T) {
	tests := []struct {
		name, in, title, text string
	}{
		{"empty", "", "", ""},
		{"plain", "just words", "", "just words"},
		{"page", testPage, "A test page", testPageText},
		{"whitespace_collapsed", " a \t\n b&nbsp;&nbsp;c ", "", "a b c"},
		{"entities", "&lt;b&gt; &amp;amp; &#x263A; &eacute", "", "<b> &amp; ☺ é"},
		{"unclosed_script", "<p>shown<script>hidden", "", "shown"},
		{"unclosed_style", "shown<style>hidden", "", "shown"},
		{"script_text_with_tags", "<script>document.write('<p>x</p>')</script>y", "", "y"},
		{"nested_template", "<template><template>x</template>y</template>z", "", "z"},
		{"stray_end_tags", "</template></script></div>a", "", "a"},
		{"comments", "a<!-- hidden -->b", "", "ab"},
		{"first_title_wins", "<title>one</title><title>two</title>text", "one", "text"},
		{"title_in_body", "<body><title>late</title>text</body>", "late", "text"},
		{"title_markup_is_text", "<title>a <b>b</b></title>", "a <b>b</b>", ""},
		{"headings", "<h2>A</h2>text<h3>B</h3>", "", "A\n\ntext\n\nB"},
		{"line_breaks_bounded", "a<br><br><br><br>b", "", "a\n\nb"},
		{"leading_breaks", "<br><p><p>x", "", "x"},
		{"inline_runs", "a<b>b</b><i> c</i>", "", "ab c"},
		{"table", "<table><tr><th>h1<th>h2<tr><td>a</td><td>b</td></tr></table>", "", "h1 h2\na b"},
		{"lists", "<ol><li>one<li>two</ol>after", "", "- one\n- two\n\nafter"},
		{"pre_kept", "<pre>  a\n\n\n b</pre>", "", "  a\n\n\n b"},
		{"textarea_kept", "<textarea>typed <b>x</b></textarea>", "", "typed <b>x</b>"},
		{"invalid_utf8", "a\xffb", "", "a\uFFFDb"},
		{"nul", "a\x00b", "", "ab"},
		{"void_elements", "a<img src=x alt=y><input value=z>b", "", "ab"},
		{"svg_title_not_page_title", "<svg><title>icon</title></svg>body", "", "iconbody"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			title, text := htmlText(tt.in)
			if title != tt.title || text != tt.text {
				t.Fatalf("htmlText(%q) =\n%q, %q\nwant\n%q, %q", tt.in, title, text, tt.title, tt.text)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name, in, charset, want string
	}{
		{"utf8", "caf\xc3\xa9", "utf-8", "café"},
		{"utf8_alias", "caf\xc3\xa9", "UTF8", "café"},
		{"no_charset", "caf\xc3\xa9", "", "café"},
		{"bom", "\xef\xbb\xbfhi", "", "hi"},
		{"invalid_utf8", "caf\xe9", "", "caf\uFFFD"},
		{"ascii", "hi", "us-ascii", "hi"},
		{"latin1", "caf\xe9", "ISO-8859-1", "café"},
		{"latin1_is_windows_1252", "\x80\x9f\xa0", "latin1", "€Ÿ\u00a0"},
		{"windows_1252", "\x93q\x94", "windows-1252", "“q”"},
		{"windows_1252_unassigned", "\x81", "cp1252", "\u0081"},
		{"quoted", "caf\xe9", `"iso-8859-1"`, "café"},
		{"unknown_passes_through", "x\xff", "shift_jis", "x\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decode([]byte(tt.in), tt.charset); got != tt.want {
				t.Fatalf("decode(%q, %q) = %q, want %q", tt.in, tt.charset, got, tt.want)
			}
		})
	}
}

func TestTrimCut(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"whole", "café", "café"},
		{"cut_two_byte", "caf\xc3", "caf"},
		{"cut_four_byte", "a\xf0\x9f\x98", "a"},
		{"whole_four_byte", "a\xf0\x9f\x98\x80", "a\xf0\x9f\x98\x80"},
		{"invalid_kept", "a\xff", "a\xff"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(trimCut([]byte(tt.in))); got != tt.want {
				t.Fatalf("trimCut(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestMetaCharset(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"meta_charset", `<meta charset="latin1">`, "latin1"},
		{"http_equiv", `<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">`, "windows-1252"},
		{"none", `<p>x</p>`, ""},
		{"after_body_ignored", `<body>x</body><meta charset="latin1">`, ""},
		{"past_prescan_ignored", strings.Repeat(" ", 1100) + `<meta charset="latin1">`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := metaCharset([]byte(tt.in)); got != tt.want {
				t.Fatalf("metaCharset(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzHTMLText: any input gives valid UTF-8, a title and text bounded by the input's size,
// and no panic.
func FuzzHTMLText(f *testing.F) {
	for _, s := range []string{testPage, "", "<script>", "<template><template>", "<title>", "<pre>\n\n", "a\xff<br>",
		"<svg><foreignObject><p>x", "<table><td><li><h1>", "&#0;&#x110000;&amp", "<noscript><p>x</noscript>y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		title, text := htmlText(s)
		if !utf8.ValidString(title) || !utf8.ValidString(text) {
			t.Fatalf("htmlText(%q) is not valid UTF-8: %q, %q", s, title, text)
		}
		// An invalid byte becomes U+FFFD: three bytes for one is the most any input grows.
		if limit := 3*len(s) + 3; len(text) > limit || len(title) > limit {
			t.Fatalf("htmlText(%q) grew to %d and %d bytes", s, len(title), len(text))
		}
		if strings.TrimSpace(text) != text && !strings.HasPrefix(text, " ") {
			// Text is trimmed of breaks at both ends; only a <pre>'s own spaces may lead.
			if strings.HasPrefix(text, "\n") || strings.HasSuffix(text, "\n") {
				t.Fatalf("htmlText(%q) = %q: not trimmed", s, text)
			}
		}
	})
}
