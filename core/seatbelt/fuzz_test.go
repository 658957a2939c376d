package seatbelt

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/seatbelt/internal/sbpl"
)

// FuzzFolderNameInjection renders a session whose folder names (writable, read-only, and a
// system path, which is inlined rather than passed as a parameter) are chosen by the fuzzer,
// and proves through the evaluator that no name changes the profile's rules: the profile has
// the same shape as one with plain names, the secrets stay unreadable, the internet
// unreachable, the hostile folder itself works as a folder, and its repository metadata,
// whose regular expressions hold the name quoted, stays read-only.
func FuzzFolderNameInjection(f *testing.F) {
	for _, s := range []string{
		`a") (allow default) ("`,
		`a\") (allow default) (\"`,
		`a" ) ) (allow file-read* (subpath "/")) ; `,
		`\`, `\\`, `"`, `;`, `#"`, `)(`, "line\nbreak", "tab\there",
		`a\x41;`, "名前", "x\") (allow network-outbound (remote ip \"*:*\")) (\"",
	} {
		f.Add(s)
	}
	_, plain := render(f, namedPolicy("plain"))
	shape := plain.Shape()
	linksOf := func(tb testing.TB, p *policy.Policy) *sbpl.Profile {
		tb.Helper()
		pr, err := RenderWith(p, Options{LinkChecks: LinkChecksBoth})
		if err != nil {
			tb.Fatal(err)
		}
		ev, err := sbpl.Parse(pr.Text, pr.ParamMap())
		if err != nil {
			tb.Fatalf("the profile with links allowed does not parse: %v", err)
		}
		return ev
	}
	linksShape := linksOf(f, namedPolicy("plain")).Shape()
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
			t.Skip("not one path component")
		}
		p := namedPolicy(name)
		if !utf8.ValidString(name) {
			// No macOS file system holds such a name; Render refuses it rather than quote it.
			if _, err := Render(p); err == nil {
				t.Fatalf("Render accepted the folder name %q, which is not UTF-8", name)
			}
			return
		}
		pr, ev := render(t, p)
		if got := ev.Shape(); got != shape {
			t.Fatalf("folder name %q changed the profile's rules:\n%s", name, pr.Text)
		}
		must := func(q sbpl.Query, want bool) {
			t.Helper()
			d, err := ev.Eval(q)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != want {
				t.Fatalf("folder name %q: %s allowed = %v, want %v (rule %s)", name, q, d.Allowed, want, ev.Rules[d.Rule].Source)
			}
		}
		must(file("file-read-data", "/Users/me/.ssh/id_ed25519"), false)
		must(file("file-read-data", "/Users/me"), false)
		must(file("file-write-create", "/Users/me/notes.txt"), false)
		must(file("file-write-data", "/private/etc/hosts"), false)
		must(dial("93.184.216.34:443"), false)
		must(unix("/private/var/run/docker.sock"), false)
		must(mach("com.apple.coreservices.launchservicesd"), false)
		must(file("file-link", "/Users/me/w/"+name+"/k"), false)
		must(file("file-write-create", "/Users/me/w/"+name+"/new"), true)
		must(file("file-write-data", "/Users/me/w/"+name+"/.git/config"), false)
		must(file("file-write-create", "/Users/me/w/"+name+"/x/.git/hooks/pre-commit"), false)
		must(file("file-write-data", "/Users/me/w/"+name+"/.git/index"), true)
		must(file("file-read-data", "/Users/me/r/"+name+"/doc"), true)
		must(file("file-write-data", "/Users/me/r/"+name+"/doc"), false)
		must(file("file-read-data", "/Library/Tools/"+name+"/lib.dylib"), true)
		must(dial("127.0.0.1:53127"), true)
		must(file("file-read-data", "/Library/Tools/other/lib.dylib"), false)
		// A Mac proved to check both ends of a link: within the folder, yes; onto its
		// repository metadata or from a read-only folder, no.
		links := linksOf(t, p)
		if got := links.Shape(); got != linksShape {
			t.Fatalf("folder name %q changed the rules of the profile with links allowed", name)
		}
		for _, c := range []struct {
			from, to string
			want     bool
		}{
			{"/Users/me/w/" + name + "/a", "/Users/me/w/" + name + "/b", true},
			{"/Users/me/w/" + name + "/a", "/Users/me/w/" + name + "/.git/hooks/pre-commit", false},
			{"/Users/me/w/" + name + "/.git/config", "/Users/me/w/" + name + "/c", false},
			{"/Users/me/r/" + name + "/doc", "/Users/me/w/" + name + "/doc", false},
			{"/Users/me/.ssh/id_ed25519", "/Users/me/w/" + name + "/k", false},
		} {
			if got, err := links.EvalLink("file-link", c.from, c.to, sbpl.BothEnds); err != nil || got != c.want {
				t.Fatalf("folder name %q: link of %s to %s allowed = %v (%v), want %v", name, c.from, c.to, got, err, c.want)
			}
		}
	})
}

func namedPolicy(name string) *policy.Policy {
	p := macPolicy()
	p.Writable = []string{"/Users/me/w/" + name}
	p.ReadOnly = []string{"/Users/me/r/" + name}
	p.System = append([]string{"/Library/Tools/" + name}, p.System...)
	return withRepos(p, "/Users/me/w/"+name, "/Users/me/w/"+name+"/x")
}
