package config

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/hosts"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files in testdata/")

// TestParseBadFiles checks each real bad file in testdata/bad gives exactly these problems,
// at exactly these places, and no settings.
type badFile struct {
	file string
	goos string
	want []string
}

func badFiles() []badFile {
	return []badFile{
		{"syntax.toml", "linux", []string{
			`testdata/bad/syntax.toml:2:26: not valid TOML: basic strings cannot have new lines`,
		}},
		// A list left open is said where it starts, not at the next setting, where TOML finds
		// out.
		{"unclosed_list.toml", "linux", []string{
			`testdata/bad/unclosed_list.toml:2:25: not valid TOML: the list that starts here is not closed: a ']' is missing before line 4`,
		}},
		{"duplicate_key.toml", "linux", []string{
			`testdata/bad/duplicate_key.toml:2:1: not valid TOML: key sandbox_network_profile is already defined`,
		}},
		{"unknown_key.toml", "linux", []string{
			`testdata/bad/unknown_key.toml:2:1: unknown setting "sandbox_network_profle"; the settings are sandbox_provider, sandbox_network_profile, sandbox_network_hosts, sandbox_toolchains, sandbox_approvals, sandbox_git_metadata, sandbox_max_caches, sandbox_host_caches, the limits (sandbox_max_processes, sandbox_max_memory, sandbox_cpu_weight, sandbox_max_tmp, sandbox_max_proxy_connections, sandbox_max_proxy_connections_total) and [[sandbox_credentials]]`,
			`testdata/bad/unknown_key.toml:3:1: unknown setting "sandbox.provider"; the settings are sandbox_provider, sandbox_network_profile, sandbox_network_hosts, sandbox_toolchains, sandbox_approvals, sandbox_git_metadata, sandbox_max_caches, sandbox_host_caches, the limits (sandbox_max_processes, sandbox_max_memory, sandbox_cpu_weight, sandbox_max_tmp, sandbox_max_proxy_connections, sandbox_max_proxy_connections_total) and [[sandbox_credentials]]`,
			`testdata/bad/unknown_key.toml:5:2: unknown table "network"; the only table is [[sandbox_credentials]], and the other settings are top-level keys`,
		}},
		{"hosts.toml", "linux", []string{
			`testdata/bad/hosts.toml:4:3: sandbox_network_hosts: site "*": allows every site; name the sites instead, such as *.example.com`,
			`testdata/bad/hosts.toml:5:3: sandbox_network_hosts: site "*.com": is a wildcard over a whole top-level domain; a wildcard must leave at least two labels, such as *.example.com`,
			`testdata/bad/hosts.toml:6:3: sandbox_network_hosts: site "https://example.com": has a scheme; write only the host and port, such as github.com:443`,
			`testdata/bad/hosts.toml:7:3: sandbox_network_hosts: site "example.com/path": has a path or user part; write only the host and port, such as github.com:443`,
			`testdata/bad/hosts.toml:8:3: sandbox_network_hosts: site "exa mple.com": contains a space; write one host per entry, such as github.com:443`,
			`testdata/bad/hosts.toml:9:3: sandbox_network_hosts: site "": is empty; write a host such as github.com or github.com:443`,
			`testdata/bad/hosts.toml:10:3: sandbox_network_hosts: site "example.com:0": has port 0; a port is 1 to 65535`,
			`testdata/bad/hosts.toml:11:3: sandbox_network_hosts: site "example.com:65536": has port 65536; a port is 1 to 65535`,
			`testdata/bad/hosts.toml:12:3: sandbox_network_hosts entries must be strings such as "github.com:443", not a number`,
		}},
		{"provider_seatbelt.toml", "linux", []string{
			`testdata/bad/provider_seatbelt.toml:1:20: sandbox_provider "seatbelt" is the macOS sandbox and does not exist on Linux; use "linux" or "direct"`,
		}},
		{"provider_linux.toml", "darwin", []string{
			`testdata/bad/provider_linux.toml:1:20: sandbox_provider "linux" is the Linux sandbox and does not exist on macOS; use "seatbelt" or "direct"`,
		}},
		{"provider_unknown.toml", "linux", []string{
			`testdata/bad/provider_unknown.toml:1:20: sandbox_provider "docker" is not a provider; use "linux" or "direct"`,
		}},
		{"types.toml", "linux", []string{
			`testdata/bad/types.toml:1:20: sandbox_provider must be a string such as "direct", not true or false`,
			`testdata/bad/types.toml:2:27: sandbox_network_profile must be a string such as "allowlist", not a list`,
			`testdata/bad/types.toml:3:25: sandbox_network_hosts must be a list such as ["github.com:443"], not a string`,
			`testdata/bad/types.toml:4:31: sandbox_toolchains entries must be strings such as ".nvm", not a number`,
			`testdata/bad/types.toml:5:21: sandbox_approvals must be a string such as "ask", not a date or time`,
			`testdata/bad/types.toml:6:1: sandbox_credentials is a list of entries; write each entry under its own [[sandbox_credentials]] line`,
		}},
		{"values.toml", "linux", []string{
			`testdata/bad/values.toml:1:27: sandbox_network_profile "none" is not a network profile; use "allowlist" (only the sites listed) or "open" (any site)`,
			`testdata/bad/values.toml:2:21: sandbox_approvals "never" is not an approvals mode; use "ask" or "full-access"`,
			`testdata/bad/values.toml:3:24: sandbox_git_metadata "open" is not a choice; use "protected" (repository hooks and config stay read-only inside) or "writable"`,
		}},
		{"toolchains.toml", "linux", []string{
			`testdata/bad/toolchains.toml:4:3: sandbox_toolchains: "/opt/homebrew" is an absolute path; write it relative to your home folder, such as "~/tools/x"`,
			`testdata/bad/toolchains.toml:5:3: sandbox_toolchains: "../shared" leaves the home folder; name a folder inside it`,
			`testdata/bad/toolchains.toml:6:3: sandbox_toolchains: "~" is the whole home folder; name a folder inside it`,
			`testdata/bad/toolchains.toml:7:3: sandbox_toolchains: "~bob/tools" names another user's home folder; write a path under your own, such as "~/tools/x"`,
			`testdata/bad/toolchains.toml:8:3: sandbox_toolchains: ".ssh/bin" would expose ~/.ssh, which holds logins; share a login on purpose with [[sandbox_credentials]]`,
			`testdata/bad/toolchains.toml:9:3: sandbox_toolchains: ".config" would expose ~/.config/openworker, OpenWorker's own state, which no session may reach`,
			`testdata/bad/toolchains.toml:10:3: sandbox_toolchains: ".local/state" would expose ~/.local/state/openworker, OpenWorker's own state, which no session may reach`,
			`testdata/bad/toolchains.toml:11:3: sandbox_toolchains: "" is empty; write a folder under your home folder, such as ".local/share/fnm"`,
		}},
		{"credentials.toml", "linux", []string{
			`testdata/bad/credentials.toml:6:8: sandbox_credentials: ssh is already listed on line 1; keep one entry`,
			`testdata/bad/credentials.toml:10:8: sandbox_credentials: "keychain" is not in the catalog (ssh, gh, aws-config, aws-credentials, kubectl, npm, docker, gcloud, terraform); for another file or folder write path, label and hosts instead of name`,
			`testdata/bad/credentials.toml:13:1: this [[sandbox_credentials]] entry has no enabled; add enabled = true to share it or enabled = false to keep it off`,
			`testdata/bad/credentials.toml:18:9: sandbox_credentials: label "secret" is not a label; use "credential" (a secret inside) or "configuration" (host names, profiles, options)`,
			`testdata/bad/credentials.toml:19:33: sandbox_credentials hosts: site "*": allows every site; name the sites instead, such as *.example.com`,
			`testdata/bad/credentials.toml:20:11: enabled must be true or false, not a string`,
			`testdata/bad/credentials.toml:22:1: this [[sandbox_credentials]] entry has a path but no label; add label = "credential" or label = "configuration"`,
			`testdata/bad/credentials.toml:23:8: sandbox_credentials: path "/etc/tool.conf" is an absolute path; write it relative to your home folder, such as "~/tools/x"`,
			`testdata/bad/credentials.toml:26:1: this [[sandbox_credentials]] entry has neither name nor path; add name = "ssh" (a catalog login) or path, label and hosts (your own file or folder)`,
			`testdata/bad/credentials.toml:31:1: a [[sandbox_credentials]] entry has either name (a catalog login) or path (your own file or folder), not both`,
			`testdata/bad/credentials.toml:36:1: a catalog entry brings its own label; label is only for an entry with a path`,
			`testdata/bad/credentials.toml:37:1: unknown key "colour" in [[sandbox_credentials]]; an entry has name (a catalog login) and secrets (for gh, npm, docker, kubectl, aws-credentials and terraform), or path, label, hosts and var (your own file or folder), and enabled`,
		}},
		{"limits.toml", "linux", []string{
			`testdata/bad/limits.toml:1:25: sandbox_max_processes = 10 is out of range; use a whole number from 32 to 4194304`,
			`testdata/bad/limits.toml:2:22: sandbox_max_memory must be a string such as "8GiB" or "50%", not a number`,
			`testdata/bad/limits.toml:3:22: sandbox_cpu_weight = 0 is out of range; use a whole number from 1 to 10000`,
			`testdata/bad/limits.toml:4:19: sandbox_max_tmp "8G" is not a size; write a whole number and a unit (KiB, MiB, GiB or TiB), such as "8GiB", or a share of the machine's memory, such as "50%"`,
			`testdata/bad/limits.toml:5:33: sandbox_max_proxy_connections must be a whole number from 1 to 65536, not a string`,
			`testdata/bad/limits.toml:6:39: sandbox_max_proxy_connections_total = 2_000_000 is out of range; use a whole number from 1 to 1048576`,
		}},
		{"limits_sizes.toml", "linux", []string{
			`testdata/bad/limits_sizes.toml:1:22: sandbox_max_memory "150%" is not a share of the machine's memory; write a whole percent from 1% to 100%, such as "50%"`,
			`testdata/bad/limits_sizes.toml:2:19: sandbox_max_tmp "1MiB" is too small; the least is 16MiB`,
		}},
		{"caches.toml", "linux", []string{
			`testdata/bad/caches.toml:1:22: sandbox_max_caches "50%" is a share of the machine's memory; a size on disk is written with a unit, such as "10GiB", or "0" to keep none`,
			`testdata/bad/caches.toml:2:23: sandbox_host_caches "yes" is not a choice; use "read-only" (sessions read the packages your own caches hold, never writing them) or "off"`,
		}},
		{"credentials_secrets.toml", "linux", []string{
			`testdata/bad/credentials_secrets.toml:3:11: sandbox_credentials: secrets "standin" is not a way to share a login's secrets; use "stand-in" (they stay outside, and OpenWorker puts them on requests to the login's own hosts) or "copy" (they are copied into the sandbox)`,
			`testdata/bad/credentials_secrets.toml:8:11: gcloud cannot be a stand-in here: gcloud refreshes its own tokens with the refresh token and sends them to many Google hosts, which OpenWorker does not carry stand-ins through yet; write secrets = "copy"`,
			`testdata/bad/credentials_secrets.toml:13:1: secrets is not for the ssh login: the ssh login keeps its keys outside with OpenWorker's SSH agent instead (keys = "agent")`,
			`testdata/bad/credentials_secrets.toml:20:1: secrets is only for a CLI's login (name = "gh", "npm", "docker", "kubectl", "aws-credentials", "terraform"); a file or folder of your own is copied`,
		}},
		{"credentials_table.toml", "linux", []string{
			`testdata/bad/credentials_table.toml:2:1: sandbox_credentials is a list of entries; write each entry under its own [[sandbox_credentials]] line`,
		}},
	}
}

func TestParseBadFiles(t *testing.T) {
	for _, tt := range badFiles() {
		t.Run(tt.file, func(t *testing.T) {
			file := "testdata/bad/" + tt.file
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, problems := Parse(file, data, tt.goos)
			if s != nil {
				t.Errorf("Parse returned settings for a bad file: %+v", s)
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tt.want)
			}
			// Load reports the same problems as a *ProblemsError.
			_, err = Load(file, tt.goos)
			pe, ok := err.(*ProblemsError)
			if !ok || len(pe.Problems) != len(tt.want) {
				t.Errorf("Load error = %v, want a *ProblemsError with %d problems", err, len(tt.want))
			}
		})
	}
}

func TestParseBadFilesCoverTestdata(t *testing.T) {
	// A bad file added to testdata without expectations would be tested by nothing.
	files, _ := filepath.Glob("testdata/bad/*.toml")
	for _, f := range files {
		if !slices.ContainsFunc(badFiles(), func(b badFile) bool { return b.file == filepath.Base(f) }) {
			t.Errorf("%s has no expectations in badFiles", f)
		}
	}
	if len(files) != len(badFiles()) {
		t.Errorf("testdata/bad has %d files, badFiles lists %d", len(files), len(badFiles()))
	}
}

func TestParseGood(t *testing.T) {
	data, err := os.ReadFile("testdata/good/hand.toml")
	if err != nil {
		t.Fatal(err)
	}
	s, problems := Parse("hand.toml", data, "linux")
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	must := func(e string) hosts.Entry {
		h, err := hosts.Parse(e)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if s.Provider != "linux" || s.NetworkProfile != "allowlist" || s.Approvals != "ask" || s.GitMetadata != "writable" {
		t.Errorf("scalars = %q %q %q %q", s.Provider, s.NetworkProfile, s.Approvals, s.GitMetadata)
	}
	if s.MaxCaches != 2<<30 || s.HostCaches != HostCachesOff {
		t.Errorf("caches: %d bytes kept, host caches %q", s.MaxCaches, s.HostCaches)
	}
	if d := Default(); d.MaxCaches != DefaultMaxCaches || d.HostCaches != HostCachesReadOnly {
		t.Errorf("default caches: %d bytes kept, host caches %q", d.MaxCaches, d.HostCaches)
	}
	wantHosts := []hosts.Entry{must("github.com:443"), must("*.githubusercontent.com:443"), must("proxy.golang.org:443")}
	if !slices.Equal(s.NetworkHosts, wantHosts) {
		t.Errorf("hosts = %v, want %v", s.NetworkHosts, wantHosts)
	}
	if want := []string{"github.com:443", "*.githubusercontent.com", "proxy.golang.org:443"}; !slices.Equal(s.NetworkHostsRaw, want) {
		t.Errorf("raw hosts = %q, want %q", s.NetworkHostsRaw, want)
	}
	if want := []string{".nvm", "go", "tools/flutter"}; !slices.Equal(s.Toolchains, want) {
		t.Errorf("toolchains = %q, want %q", s.Toolchains, want)
	}
	if len(s.Credentials) != 3 {
		t.Fatalf("credentials = %+v", s.Credentials)
	}
	if c := s.Credentials[0]; c.Name != "ssh" || c.Enabled || c.StandIn() {
		t.Errorf("first credential = %+v, want ssh switched off", c)
	}
	if c := s.Credentials[1]; c.Name != "npm" || !c.Enabled || !c.StandIn() {
		t.Errorf("second credential = %+v, want npm as a stand-in", c)
	}
	if c := s.Credentials[2]; c.Path != ".config/tool" || c.Label != "configuration" || !c.Enabled ||
		!slices.Equal(c.Hosts, []hosts.Entry{must("api.example.com:443")}) || c.Key() != "~/.config/tool" {
		t.Errorf("third credential = %+v", c)
	}
}

func TestParseProviderPerOS(t *testing.T) {
	tests := []struct {
		goos, provider string
		ok             bool
	}{
		{"darwin", "seatbelt", true},
		{"darwin", "direct", true},
		{"darwin", "linux", false},
		{"linux", "linux", true},
		{"linux", "direct", true},
		{"linux", "seatbelt", false},
		{"windows", "direct", true},
		{"windows", "seatbelt", false},
	}
	for _, tt := range tests {
		t.Run(tt.goos+"_"+tt.provider, func(t *testing.T) {
			s, problems := Parse("c.toml", []byte(`sandbox_provider = "`+tt.provider+`"`), tt.goos)
			if ok := len(problems) == 0; ok != tt.ok {
				t.Fatalf("problems = %v, want ok=%v", problems, tt.ok)
			}
			if tt.ok && s.Provider != tt.provider {
				t.Errorf("Provider = %q", s.Provider)
			}
		})
	}
}

func TestParseEmptyIsDefault(t *testing.T) {
	s, problems := Parse("c.toml", []byte("# nothing chosen yet\n"), "linux")
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	d := Default()
	if s.Provider != d.Provider || s.NetworkProfile != d.NetworkProfile || s.Approvals != d.Approvals ||
		s.Provider != "direct" || s.NetworkProfile != "allowlist" || s.Approvals != "ask" || s.GitMetadata != "protected" ||
		len(s.NetworkHosts)+len(s.Toolchains)+len(s.Credentials) != 0 {
		t.Errorf("empty file = %+v, want the defaults", s)
	}
}

func TestLoadMissingFileIsDefault(t *testing.T) {
	s, err := Load(filepath.Join(t.TempDir(), "none", "config.toml"), "linux")
	if err != nil || s.Provider != "direct" || s.NetworkProfile != "allowlist" {
		t.Fatalf("Load = %+v, %v; want defaults", s, err)
	}
}

func TestShowGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/good/hand.toml")
	if err != nil {
		t.Fatal(err)
	}
	s, problems := Parse("hand.toml", data, "linux")
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	got := s.TOML()
	golden := "testdata/good/hand.show.golden"
	if *updateGolden {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("TOML() =\n%s\nwant\n%s", got, want)
	}
	// What show prints is itself a valid settings file meaning the same.
	again, problems := Parse("show", got, "linux")
	if len(problems) > 0 {
		t.Fatalf("show output does not parse: %v", problems)
	}
	if string(again.TOML()) != string(got) {
		t.Errorf("show output does not round-trip")
	}
}

func TestParseLimits(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       Limits
	}{
		{"defaults", "", defaultLimits()},
		{"all", `sandbox_max_processes = 8_192
sandbox_max_memory = "8GiB"
sandbox_cpu_weight = 50
sandbox_max_tmp = "10%"
sandbox_max_proxy_connections = 64
sandbox_max_proxy_connections_total = 512
`, Limits{MaxProcesses: 8192, MaxMemory: Size{Bytes: 8 << 30}, CPUWeight: 50, MaxTmp: Size{Percent: 10}, MaxProxyConnections: 64, MaxProxyConnectionsTotal: 512}},
		{"one", `sandbox_max_tmp = "512MiB"`, func() Limits { l := defaultLimits(); l.MaxTmp = Size{Bytes: 512 << 20}; return l }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, problems := Parse("c.toml", []byte(tc.text), "linux")
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			if s.Limits != tc.want {
				t.Errorf("limits = %+v, want %+v", s.Limits, tc.want)
			}
			// show writes them back as they mean.
			again, problems := Parse("show", s.TOML(), "linux")
			if len(problems) > 0 || again.Limits != tc.want {
				t.Errorf("show does not round-trip the limits: %+v %v", again.Limits, problems)
			}
		})
	}
}

func TestProblemString(t *testing.T) {
	if got := (Problem{File: "c.toml", Line: 3, Col: 7, Msg: "bad"}).String(); got != "c.toml:3:7: bad" {
		t.Errorf("String = %q", got)
	}
	if got := (Problem{File: "c.toml", Msg: "unreadable"}).String(); got != "c.toml: unreadable" {
		t.Errorf("String = %q", got)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.toml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, problems := Parse("f.toml", data, "linux")
		if (s == nil) == (len(problems) == 0) {
			t.Fatalf("Parse gave settings=%v with %d problems", s != nil, len(problems))
		}
		for _, p := range problems {
			if p.Line < 0 || p.Col < 0 || p.Msg == "" {
				t.Fatalf("bad problem %+v", p)
			}
		}
		if s != nil && s.NetworkProfile != NetworkAllowlist && s.NetworkProfile != NetworkOpen {
			t.Fatalf("profile %q", s.NetworkProfile)
		}
	})
}

// unclosedList points at a list left open only when TOML's error is at the start of a later
// setting or table; an error inside a list that is closed later stays where TOML put it.
func TestUnclosedList(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       string // "LINE:COL" or "" when TOML's place is kept
	}{
		{"blank_line_then_key", "a = 1\nhosts = [\"x\",\n\nb = \"y\"\n", "2:9"},
		{"table_after", "hosts = [\"x\"\n[[sandbox_credentials]]\nname = \"ssh\"\n", "1:9"},
		{"nested", "hosts = [[\"x\"], [\"y\"]\nb = 1\n", "1:9"},
		{"bad_value_inside", "hosts = [\n  \"x\",\n  bad,\n]\n", ""},
		{"string_with_bracket", "hosts = [\"a]\"\nb = 1\n", "1:9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, problems := parseDocument("f.toml", []byte(tc.text), "linux")
			if len(problems) != 1 {
				t.Fatalf("problems %v", problems)
			}
			p := problems[0]
			got := fmt.Sprintf("%d:%d", p.Line, p.Col)
			redirected := strings.Contains(p.Msg, "the list that starts here is not closed")
			if tc.want == "" && redirected || tc.want != "" && (got != tc.want || !redirected) {
				t.Errorf("%s: %s, want %q", got, p.Msg, tc.want)
			}
		})
	}
}
