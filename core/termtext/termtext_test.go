package termtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "npm install needs the registry", "npm install needs the registry"},
		{"unicode_kept", "café — ✓ 日本", "café — ✓ 日本"},
		{"newline_forges_a_line", "ok\nc1a2  session x  github.com:443", `ok\nc1a2  session x  github.com:443`},
		{"carriage_return_redraws", "evil.example:443\rgithub.com:443", `evil.example:443\rgithub.com:443`},
		{"csi", "\x1b[2K\x1b[1Agithub.com", `\x1b[2K\x1b[1Agithub.com`},
		{"osc_title", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"c1_csi", "a\u009b2Jb", `a\x9b2Jb`},
		{"del", "a\x7fb", `a\x7fb`},
		{"bidi_override", "moc.buhtig\u202e", `moc.buhtig\u202e`},
		{"bidi_isolate", "\u2066x\u2069", `\u2066x\u2069`},
		{"line_separator", "a\u2028b", `a\u2028b`},
		{"invalid_utf8", "a\xffb\xe2\x82", `a\xffb\xe2\x82`},
		{"tab", "a\tb", `a\tb`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Escape(tc.in)
			if got != tc.want {
				t.Fatalf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
			}
			for _, r := range got {
				if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x202e {
					t.Fatalf("Escape(%q) left %U in %q", tc.in, r, got)
				}
			}
			if !utf8.ValidString(got) {
				t.Fatalf("Escape(%q) = %q is not valid UTF-8", tc.in, got)
			}
		})
	}
}

func TestCutOnCharacterBoundary(t *testing.T) {
	s := strings.Repeat("é", 40) // two bytes each
	for n := 0; n <= len(s)+1; n++ {
		got, cut := Cut(s, n)
		if !utf8.ValidString(got) {
			t.Fatalf("Cut(%d) = %q cuts inside a character", n, got)
		}
		if len(got) > n {
			t.Fatalf("Cut(%d) is %d bytes", n, len(got))
		}
		if cut != (n < len(s)) {
			t.Fatalf("Cut(%d) says cut=%v", n, cut)
		}
		if n < len(s) && len(got) < n-1 {
			t.Fatalf("Cut(%d) kept only %d bytes", n, len(got))
		}
	}
	if got := Short("日本語のテキスト", 7); got != "日本…" {
		t.Fatalf("Short = %q", got)
	}
	if got := Short("short", 60); got != "short" {
		t.Fatalf("Short = %q", got)
	}
}

func FuzzEscape(f *testing.F) {
	f.Add("a\x1b]8;;x\x1b\\b\xff\u202e", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1<<16 {
			return
		}
		got := Show(s, n)
		if !utf8.ValidString(got) {
			t.Fatalf("Show(%q) = %q is not valid UTF-8", s, got)
		}
		for _, r := range got {
			if unsafeRune(r) {
				t.Fatalf("Show(%q) left %U", s, r)
			}
		}
	})
}

func TestLinesIndentsLaterLines(t *testing.T) {
	got := Lines("not changing the file:\nline 3: bad\x1b[2K\nopenworker: blocked github.com")
	want := "not changing the file:\n  line 3: bad\\x1b[2K\n  openworker: blocked github.com"
	if got != want {
		t.Fatalf("Lines = %q, want %q", got, want)
	}
}
