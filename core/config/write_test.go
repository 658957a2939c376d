package config

import (
	"fmt"
	"github.com/openworker/openworker/core/hosts"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestAddHostKeepsEveryOtherByte is the write-back promise: on a commented, hand-formatted
// file, adding a site inserts the site and its separator, and nothing else changes.
func TestAddHostKeepsEveryOtherByte(t *testing.T) {
	orig, err := os.ReadFile("testdata/good/hand.toml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, orig, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := Update(path, "linux", func(e *Editor) error { return e.AddHost("example.org:8443") }); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, path)
	const last = `    "proxy.golang.org:443"` + "\n]"
	if strings.Count(string(orig), last) != 1 {
		t.Fatal("testdata/good/hand.toml changed; this test expects its host list to end with proxy.golang.org")
	}
	want := strings.Replace(string(orig), last, `    "proxy.golang.org:443",`+"\n"+`    "example.org:8443"`+"\n]", 1)
	if got != want {
		t.Errorf("after AddHost:\n%s\nwant:\n%s", got, want)
	}
	// Only insertions: the original is the result with the inserted bytes taken out.
	i := strings.Index(got, `,`+"\n"+`    "example.org:8443"`)
	if got[:i]+got[i+len(",\n    \"example.org:8443\""):] != string(orig) {
		t.Error("bytes other than the insertion changed")
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want the file's own 0640 kept", info.Mode().Perm())
	}
	// No temporary files are left beside it; the lock file stays for the next writer.
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if e.Name() != "config.toml" && e.Name() != "config.toml.lock" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestEdits(t *testing.T) {
	tests := []struct {
		name   string
		before string
		change func(*Editor) error
		after  string
	}{
		{"add_inline", `sandbox_network_hosts = ["a.com:443"]  # mine` + "\n",
			func(e *Editor) error { return e.AddHost("b.com") },
			`sandbox_network_hosts = ["a.com:443", "b.com:443"]  # mine` + "\n"},
		{"add_inline_trailing_comma", `sandbox_network_hosts = [ "a.com:443", ]` + "\n",
			func(e *Editor) error { return e.AddHost("b.com:22") },
			`sandbox_network_hosts = [ "a.com:443", "b.com:22", ]` + "\n"},
		{"add_empty", "sandbox_network_hosts = [ ]\n",
			func(e *Editor) error { return e.AddHost("[::1]:8080") },
			`sandbox_network_hosts = ["[::1]:8080"]` + "\n"},
		{"add_multiline_trailing_comma", "sandbox_network_hosts = [\n\t\"a.com:443\",  # first\n]\n",
			func(e *Editor) error { return e.AddHost("b.com") },
			"sandbox_network_hosts = [\n\t\"a.com:443\",  # first\n\t\"b.com:443\",\n]\n"},
		{"add_multiline_comment_no_comma", "sandbox_network_hosts = [\n  \"a.com:443\" # first, really\n]\n",
			func(e *Editor) error { return e.AddHost("b.com") },
			"sandbox_network_hosts = [\n  \"a.com:443\", # first, really\n  \"b.com:443\"\n]\n"},
		{"add_crlf", "sandbox_network_hosts = [\r\n  \"a.com:443\"\r\n]\r\n",
			func(e *Editor) error { return e.AddHost("b.com") },
			"sandbox_network_hosts = [\r\n  \"a.com:443\",\r\n  \"b.com:443\"\r\n]\r\n"},
		{"add_already_there_in_another_spelling", "sandbox_network_hosts = [\"GitHub.com\"]\n",
			func(e *Editor) error { return e.AddHost("github.com:443") },
			"sandbox_network_hosts = [\"GitHub.com\"]\n"},
		{"add_missing_key_after_settings", "# top\nsandbox_provider = \"linux\" # on\n\n# logins\n[[sandbox_credentials]]\nname = \"gh\"\nenabled = true\n",
			func(e *Editor) error { return e.AddHost("b.com") },
			"# top\nsandbox_provider = \"linux\" # on\nsandbox_network_hosts = [\"b.com:443\"]\n\n# logins\n[[sandbox_credentials]]\nname = \"gh\"\nenabled = true\n"},
		{"add_missing_key_before_table", "# header\n\n# logins\n[[sandbox_credentials]]\nname = \"gh\"\nenabled = true\n",
			func(e *Editor) error { return e.AddHost("b.com") },
			"# header\n\nsandbox_network_hosts = [\"b.com:443\"]\n\n# logins\n[[sandbox_credentials]]\nname = \"gh\"\nenabled = true\n"},
		{"add_missing_key_no_final_newline", "sandbox_provider = \"linux\"",
			func(e *Editor) error { return e.AddHost("b.com") },
			"sandbox_provider = \"linux\"\nsandbox_network_hosts = [\"b.com:443\"]\n"},
		{"remove_own_line", "sandbox_network_hosts = [\n  \"a.com:443\",\n  \"b.com:443\", # bee\n  \"c.com:443\",\n]\n",
			func(e *Editor) error { return e.RemoveHost("b.com") },
			"sandbox_network_hosts = [\n  \"a.com:443\",\n  \"c.com:443\",\n]\n"},
		{"remove_last_own_line", "sandbox_network_hosts = [\n  \"a.com:443\",\n  \"b.com:443\"\n]\n",
			func(e *Editor) error { return e.RemoveHost("b.com:443") },
			"sandbox_network_hosts = [\n  \"a.com:443\",\n]\n"},
		{"remove_inline_middle", `sandbox_network_hosts = ["a.com", "B.com", "c.com"]` + "\n",
			func(e *Editor) error { return e.RemoveHost("b.com:443") },
			`sandbox_network_hosts = ["a.com", "c.com"]` + "\n"},
		{"remove_inline_last", `sandbox_network_hosts = ["a.com", "b.com"] # x` + "\n",
			func(e *Editor) error { return e.RemoveHost("b.com") },
			`sandbox_network_hosts = ["a.com"] # x` + "\n"},
		{"remove_only", `sandbox_network_hosts = ["b.com"]` + "\n",
			func(e *Editor) error { return e.RemoveHost("b.com") },
			`sandbox_network_hosts = []` + "\n"},
		{"remove_every_spelling", `sandbox_network_hosts = ["b.com", "a.com", "b.com:443"]` + "\n",
			func(e *Editor) error { return e.RemoveHost("b.com") },
			`sandbox_network_hosts = ["a.com"]` + "\n"},
		{"remove_absent", `sandbox_network_hosts = ["a.com"]` + "\n",
			func(e *Editor) error { return e.RemoveHost("b.com") },
			`sandbox_network_hosts = ["a.com"]` + "\n"},
		{"set_string", "sandbox_provider   =   'direct'   # not yet\n",
			func(e *Editor) error { return e.SetString(KeyProvider, "linux") },
			"sandbox_provider   =   \"linux\"   # not yet\n"},
		{"credential_off", "[[sandbox_credentials]]\nname = \"ssh\"\nenabled = true # push\n",
			func(e *Editor) error { return e.SetCredentialEnabled("ssh", false) },
			"[[sandbox_credentials]]\nname = \"ssh\"\nenabled = false # push\n"},
		{"credential_path_on", "[[sandbox_credentials]]\npath = \"~/.tool\"\nlabel = \"credential\"\nenabled = false\n",
			func(e *Editor) error { return e.SetCredentialEnabled(".tool", true) },
			"[[sandbox_credentials]]\npath = \"~/.tool\"\nlabel = \"credential\"\nenabled = true\n"},
		{"credential_added", "sandbox_provider = \"linux\"\n",
			func(e *Editor) error { return e.SetCredentialEnabled("gh", true) },
			"sandbox_provider = \"linux\"\n\n[[sandbox_credentials]]\nname = \"gh\"\nsecrets = \"stand-in\"\nenabled = true\n"},
		{"credential_added_without_stand_in", "",
			func(e *Editor) error { return e.AddCredential(Credential{Name: "gcloud", Enabled: true}) },
			"[[sandbox_credentials]]\nname = \"gcloud\"\nenabled = true\n"},
		{"credential_added_copying", "",
			func(e *Editor) error {
				return e.AddCredential(Credential{Name: "npm", Secrets: SecretsCopy, Enabled: true})
			},
			"[[sandbox_credentials]]\nname = \"npm\"\nsecrets = \"copy\"\nenabled = true\n"},
		{"secrets_set_where_there_was_none", "[[sandbox_credentials]]\nname = \"npm\"\nenabled = true # publish\n",
			func(e *Editor) error { return e.SetSecrets("npm", SecretsStandIn) },
			"[[sandbox_credentials]]\nname = \"npm\"\nsecrets = \"stand-in\"\nenabled = true # publish\n"},
		{"secrets_switched", "[[sandbox_credentials]]\nname = \"gh\"\nsecrets = 'stand-in'  # mine\nenabled = true\n",
			func(e *Editor) error { return e.SetSecrets("gh", SecretsCopy) },
			"[[sandbox_credentials]]\nname = \"gh\"\nsecrets = \"copy\"  # mine\nenabled = true\n"},
		{"credential_absent_off", "sandbox_provider = \"linux\"\n",
			func(e *Editor) error { return e.SetCredentialEnabled("gh", false) },
			"sandbox_provider = \"linux\"\n"},
		{"credential_path_added_with_var", "sandbox_provider = \"linux\"\n",
			func(e *Editor) error {
				h, _ := hosts.Parse("api.tool.example")
				return e.AddCredential(Credential{Path: "~/.config/tool", Label: LabelCredential, Hosts: []hosts.Entry{h}, Var: "TOOL_CONFIG", Enabled: true})
			},
			"sandbox_provider = \"linux\"\n\n[[sandbox_credentials]]\npath = \"~/.config/tool\"\nlabel = \"credential\"\nhosts = [\"api.tool.example:443\"]\nvar = \"TOOL_CONFIG\"\nenabled = true\n"},
		{"credential_removed_keeps_comments", "sandbox_provider = \"linux\"\n\n# ssh\n[[sandbox_credentials]]\nname = \"ssh\"\nenabled = true # push\n\n# gh, kept\n[[sandbox_credentials]]\nname = \"gh\"\nenabled = false\n",
			func(e *Editor) error { return e.RemoveCredential("ssh") },
			"sandbox_provider = \"linux\"\n\n# ssh\n\n# gh, kept\n[[sandbox_credentials]]\nname = \"gh\"\nenabled = false\n"},
		{"credential_removed_last", "sandbox_provider = \"linux\"\n\n[[sandbox_credentials]]\npath = \"~/.tool\"\nlabel = \"credential\"\nenabled = false\n",
			func(e *Editor) error { return e.RemoveCredential("~/.tool") },
			"sandbox_provider = \"linux\"\n"},
		{"ssh_login_beside_a_signing_answer_of_the_same_text", "[[sandbox_credentials]]\nname = \"ssh\"\nagent_signing = [\"prod.example SHA256:k\"]\nenabled = true\n",
			func(e *Editor) error { return e.AddSSHAllowance("agent_logins", "prod.example SHA256:k") },
			"[[sandbox_credentials]]\nname = \"ssh\"\nagent_signing = [\"prod.example SHA256:k\"]\nagent_logins = [\"prod.example SHA256:k\"]\nenabled = true\n"},
		{"ssh_answer_already_in_its_list", "[[sandbox_credentials]]\nname = \"ssh\"\nagent_logins = [\"prod.example SHA256:k\"]\nenabled = true\n",
			func(e *Editor) error { return e.AddSSHAllowance("agent_logins", "prod.example SHA256:k") },
			"[[sandbox_credentials]]\nname = \"ssh\"\nagent_logins = [\"prod.example SHA256:k\"]\nenabled = true\n"},
		{"toolchain_added", "sandbox_toolchains = [\".nvm\"]\n",
			func(e *Editor) error { return e.AddToolchain("~/tools/flutter/") },
			"sandbox_toolchains = [\".nvm\", \"tools/flutter\"]\n"},
		{"toolchain_removed", "sandbox_toolchains = [\".nvm\", \"go\"]\n",
			func(e *Editor) error { return e.RemoveToolchain("go") },
			"sandbox_toolchains = [\".nvm\"]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			writeFile(t, path, tt.before)
			if err := Update(path, "linux", tt.change); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, path); got != tt.after {
				t.Errorf("got:\n%q\nwant:\n%q", got, tt.after)
			}
		})
	}
}

func TestEditRefusals(t *testing.T) {
	tests := []struct {
		name    string
		before  string
		change  func(*Editor) error
		wantErr string
	}{
		{"broken_file", "sandbox_provider = \"seatbelt\"\n",
			func(e *Editor) error { return e.AddHost("b.com") },
			"because it has problems; fix them first (openworker config check):\n"},
		{"bad_host", "", func(e *Editor) error { return e.AddHost("*") },
			`site "*": allows every site`},
		{"bad_toolchain", "", func(e *Editor) error { return e.AddToolchain(".ssh") },
			`toolchain ".ssh" would expose ~/.ssh`},
		{"bad_value", "", func(e *Editor) error { return e.SetString(KeyNetworkProfile, "wide") },
			`the change would leave`},
		{"unknown_path_credential", "", func(e *Editor) error { return e.SetCredentialEnabled("~/.tool", true) },
			"there is no [[sandbox_credentials]] entry for ~/.tool"},
		{"reserved_var", "", func(e *Editor) error {
			return e.AddCredential(Credential{Path: ".tool", Label: LabelConfiguration, Var: "LD_PRELOAD", Enabled: true})
		}, `var "LD_PRELOAD" is set by the sandbox itself or changes what programs run`},
		{"remove_absent_credential", "", func(e *Editor) error { return e.RemoveCredential("ssh") },
			"there is no [[sandbox_credentials]] entry for ssh"},
		{"stand_in_not_offered", "[[sandbox_credentials]]\nname = \"gcloud\"\nenabled = false\n",
			func(e *Editor) error { return e.SetSecrets("gcloud", SecretsStandIn) },
			"gcloud cannot be a stand-in here: gcloud refreshes its own tokens"},
		{"secrets_of_ssh", "[[sandbox_credentials]]\nname = \"ssh\"\nenabled = false\n",
			func(e *Editor) error { return e.SetSecrets("ssh", SecretsCopy) },
			"ssh cannot be a stand-in here: the ssh login keeps its keys outside with OpenWorker's SSH agent instead"},
		{"secrets_of_an_absent_login", "",
			func(e *Editor) error { return e.SetSecrets("npm", SecretsStandIn) },
			"there is no [[sandbox_credentials]] entry for npm; add it first (openworker credentials add npm)"},
		{"secrets_not_a_mode", "[[sandbox_credentials]]\nname = \"npm\"\nenabled = false\n",
			func(e *Editor) error { return e.SetSecrets("npm", "hide") },
			`"hide" is not a way to share a login's secrets; use "stand-in" or "copy"`},
		{"duplicate_credential", "[[sandbox_credentials]]\nname = \"gh\"\nenabled = false\n",
			func(e *Editor) error { return e.AddCredential(Credential{Name: "gh", Enabled: true}) },
			"gh already has a [[sandbox_credentials]] entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			writeFile(t, path, tt.before)
			err := Update(path, "linux", tt.change)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			if got := readFile(t, path); got != tt.before {
				t.Errorf("file changed to %q after a refused change", got)
			}
		})
	}
}

// On a Mac gh and npm are stand-ins by default; docker, whose clients could not trust
// OpenWorker's certificate authority there, copies, and a stand-in is refused with the reason.
func TestStandInOnAMac(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := Update(path, "darwin", func(e *Editor) error {
		for _, name := range []string{"gh", "npm", "docker"} {
			if err := e.AddCredential(Credential{Name: name, Enabled: true}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, path)
	if !strings.Contains(got, "name = \"gh\"\nsecrets = \"stand-in\"") || !strings.Contains(got, "name = \"npm\"\nsecrets = \"stand-in\"") ||
		!strings.Contains(got, "name = \"docker\"\nenabled = true") {
		t.Fatalf("settings:\n%s", got)
	}
	err := Update(path, "darwin", func(e *Editor) error { return e.SetSecrets("docker", SecretsStandIn) })
	if err == nil || !strings.Contains(err.Error(), "docker cannot be a stand-in here: registry clients (skopeo, crane, helm, oras) are Go programs, which on a Mac trust only the system's certificate settings") {
		t.Fatalf("got %v", err)
	}
	if now := readFile(t, path); now != got {
		t.Fatalf("a refused change was written:\n%s", now)
	}
}

func TestUpdateCreatesMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "openworker", "config.toml")
	if err := AddHost(path, "github.com"); err != nil {
		t.Fatal(err)
	}
	want := newFileHeader + "sandbox_network_hosts = [\"github.com:443\"]\n"
	if got := readFile(t, path); got != want {
		t.Errorf("new file:\n%s\nwant:\n%s", got, want)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("new file mode = %v, want 0600", info.Mode().Perm())
	}
	dir, _ := os.Stat(filepath.Dir(path))
	if dir.Mode().Perm() != 0o700 {
		t.Errorf("new folder mode = %v, want 0700", dir.Mode().Perm())
	}
	// Removing from a file that does not exist creates nothing.
	other := filepath.Join(t.TempDir(), "config.toml")
	if err := RemoveHost(other, "github.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("RemoveHost created %s", other)
	}
}

func TestUpdateKeepsSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "openworker.toml")
	if err := os.MkdirAll(filepath.Dir(real), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, real, "sandbox_network_hosts = []\n")
	link := filepath.Join(dir, "config.toml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := AddHost(link, "a.com"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("config.toml is no longer a symlink: %v %v", fi, err)
	}
	if got := readFile(t, real); got != "sandbox_network_hosts = [\"a.com:443\"]\n" {
		t.Errorf("target = %q", got)
	}
}

// TestConcurrentWriteBacks: write-backs from many goroutines (each taking the lock file as
// another process would) all land.
func TestConcurrentWriteBacks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, path, "# mine\nsandbox_network_hosts = [\n]\n")
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- AddHost(path, fmt.Sprintf("h%d.example.com", i))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	s, err := Load(path, "linux")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.NetworkHosts) != n {
		t.Errorf("%d hosts after %d concurrent adds: %v", len(s.NetworkHosts), n, s.NetworkHostsRaw)
	}
	if !strings.HasPrefix(readFile(t, path), "# mine\n") {
		t.Error("comment lost")
	}
}

// TestWriteBackRacingUserSave: the user saves between our read and our rename. Our change is
// made again on their text: both survive.
func TestWriteBackRacingUserSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, path, "sandbox_network_hosts = [\"a.com\"]\n")
	raced := false
	userSave := func() {
		if raced {
			return
		}
		raced = true
		writeFile(t, path, "sandbox_approvals = \"full-access\" # user, just now\nsandbox_network_hosts = [\"a.com\", \"user.com\"]\n")
	}
	if err := update(path, "linux", func(e *Editor) error { return e.AddHost("card.com") }, userSave); err != nil {
		t.Fatal(err)
	}
	want := "sandbox_approvals = \"full-access\" # user, just now\nsandbox_network_hosts = [\"a.com\", \"user.com\", \"card.com:443\"]\n"
	if got := readFile(t, path); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// A file that never stops changing is not overwritten blindly.
	n := 0
	always := func() { n++; writeFile(t, path, fmt.Sprintf("sandbox_network_hosts = [\"u%d.com\"]\n", n)) }
	err := update(path, "linux", func(e *Editor) error { return e.AddHost("card2.com") }, always)
	if err == nil || !strings.Contains(err.Error(), "kept changing") {
		t.Errorf("err = %v, want kept changing", err)
	}
	if got := readFile(t, path); got != fmt.Sprintf("sandbox_network_hosts = [\"u%d.com\"]\n", n) {
		t.Errorf("the user's last save was overwritten: %q", got)
	}
}

// FuzzEdit: on any valid file, adding then removing a site gives valid files with exactly
// that site added, then gone, and the other sites untouched.
func FuzzEdit(f *testing.F) {
	files, _ := filepath.Glob("testdata/good/*.toml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("sandbox_network_hosts = [\n  # none yet\n]\n"))
	f.Add([]byte("sandbox_network_hosts = [\"a.com\" # c\n, \"b.com\"]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, doc, problems := parseDocument("f.toml", data, "linux")
		if len(problems) > 0 {
			return
		}
		e := &Editor{file: "f.toml", goos: "linux", data: data, doc: doc, settings: s}
		before := len(s.NetworkHosts)
		if err := e.AddHost("fuzz.example.com:1"); err != nil {
			t.Fatalf("AddHost on %q: %v", data, err)
		}
		if len(e.settings.NetworkHosts) != before+1 {
			t.Fatalf("AddHost on %q gave %q", data, e.data)
		}
		if err := e.RemoveHost("fuzz.example.com:1"); err != nil {
			t.Fatalf("RemoveHost on %q: %v", e.data, err)
		}
		if len(e.settings.NetworkHosts) != before {
			t.Fatalf("RemoveHost on %q gave %q", data, e.data)
		}
	})
}

// TestWriteBackWaitsForLock: while another writer (another process, as far as flock is
// concerned) holds the lock file, a write-back waits instead of writing over it.
func TestWriteBackWaitsForLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, path, "sandbox_network_hosts = []\n")
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- AddHost(path, "a.com") }()
	// A write-back that waits gives no sign of it: only a fixed window can show that it did
	// not finish while the lock was held.
	select {
	case err := <-done:
		unlock()
		t.Fatalf("write-back finished while the lock was held: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if got := readFile(t, path); got != "sandbox_network_hosts = []\n" {
		t.Errorf("file written while locked: %q", got)
	}
	unlock()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("write-back did not finish after the lock was released")
	}
	if got := readFile(t, path); got != "sandbox_network_hosts = [\"a.com:443\"]\n" {
		t.Errorf("after the lock: %q", got)
	}
}

func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/good/hand.toml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, problems := Parse("hand.toml", data, "linux"); len(problems) > 0 {
			b.Fatal(problems)
		}
	}
}

func BenchmarkAddHost(b *testing.B) {
	path := filepath.Join(b.TempDir(), "config.toml")
	orig, err := os.ReadFile("testdata/good/hand.toml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := os.WriteFile(path, orig, 0o600); err != nil {
			b.Fatal(err)
		}
		if err := Update(path, "linux", func(e *Editor) error { return e.AddHost("example.org") }); err != nil {
			b.Fatal(err)
		}
	}
}
