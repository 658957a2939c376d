package sbpl

import (
	"strings"
	"testing"
)

func mustParse(t *testing.T, src string, params map[string]string) *Profile {
	t.Helper()
	p, err := Parse(src, params)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, src)
	}
	return p
}

func allowed(t *testing.T, p *Profile, q Query) bool {
	t.Helper()
	d, err := p.Eval(q)
	if err != nil {
		t.Fatalf("Eval(%s): %v", q, err)
	}
	return d.Allowed
}

func TestFilters(t *testing.T) {
	tests := []struct {
		name  string
		rules string
		q     Query
		want  bool
	}{
		{"literal_exact", `(allow file-read-data (literal "/a/b"))`, Query{Op: "file-read-data", Path: "/a/b"}, true},
		{"literal_not_below", `(allow file-read-data (literal "/a/b"))`, Query{Op: "file-read-data", Path: "/a/b/c"}, false},
		{"path_is_literal", `(allow file-read-data (path "/dev/null"))`, Query{Op: "file-read-data", Path: "/dev/null"}, true},
		{"subpath_itself", `(allow file-read-data (subpath "/a/b"))`, Query{Op: "file-read-data", Path: "/a/b"}, true},
		{"subpath_below", `(allow file-read-data (subpath "/a/b"))`, Query{Op: "file-read-data", Path: "/a/b/c/d"}, true},
		{"subpath_component_boundary", `(allow file-read-data (subpath "/a/b"))`, Query{Op: "file-read-data", Path: "/a/bc"}, false},
		{"subpath_parent", `(allow file-read-data (subpath "/a/b"))`, Query{Op: "file-read-data", Path: "/a"}, false},
		{"subpath_root", `(allow file-read-data (subpath "/"))`, Query{Op: "file-read-data", Path: "/x"}, true},
		{"prefix_string", `(allow file-read-data (prefix "/a/b"))`, Query{Op: "file-read-data", Path: "/a/bc"}, true},
		{"prefix_miss", `(allow file-read-data (prefix "/a/b"))`, Query{Op: "file-read-data", Path: "/a/c"}, false},
		{"regex_literal", `(allow file-read-data (regex #"^/dev/ttys[0-9]+$"))`, Query{Op: "file-read-data", Path: "/dev/ttys003"}, true},
		{"regex_anchored_miss", `(allow file-read-data (regex #"^/dev/ttys[0-9]+$"))`, Query{Op: "file-read-data", Path: "/dev/ttys003x"}, false},
		{"regex_string", `(allow file-read-data (regex "^/a/[^/]+\\.txt$"))`, Query{Op: "file-read-data", Path: "/a/x.txt"}, true},
		{"regex_string_quoted_dot", `(allow file-read-data (regex "^/a/x\\.txt$"))`, Query{Op: "file-read-data", Path: "/a/xytxt"}, false},
		{"regex_string_quoted_paren", `(allow file-read-data (regex "^/a\\(b\\)(/[^/]+)*/\\.git$"))`, Query{Op: "file-read-data", Path: "/a(b)/c/.git"}, true},
		{"semaphore_name", `(allow ipc-posix-sem (ipc-posix-name-regex #"^/mp-[a-z0-9_]+$"))`, Query{Op: "ipc-posix-sem", Name: "/mp-k3j_9x2a"}, true},
		{"semaphore_other_name", `(allow ipc-posix-sem (ipc-posix-name-regex #"^/mp-[a-z0-9_]+$"))`, Query{Op: "ipc-posix-sem", Name: "/other"}, false},
		{"any_of_filters", `(allow file-read-data (literal "/x") (literal "/y"))`, Query{Op: "file-read-data", Path: "/y"}, true},
		{"require_all_both", `(allow file-read-data (require-all (subpath "/a") (regex #"\.txt$")))`, Query{Op: "file-read-data", Path: "/a/x.txt"}, true},
		{"require_all_one", `(allow file-read-data (require-all (subpath "/a") (regex #"\.txt$")))`, Query{Op: "file-read-data", Path: "/a/x.sh"}, false},
		{"require_any", `(allow file-read-data (require-any (literal "/x") (literal "/y")))`, Query{Op: "file-read-data", Path: "/x"}, true},
		{"require_not", `(allow file-read-data (require-all (subpath "/a") (require-not (subpath "/a/secret"))))`, Query{Op: "file-read-data", Path: "/a/secret/k"}, false},
		{"require_not_outside", `(allow file-read-data (require-all (subpath "/a") (require-not (subpath "/a/secret"))))`, Query{Op: "file-read-data", Path: "/a/open"}, true},
		{"no_filter_matches_all", `(allow file-read-data)`, Query{Op: "file-read-data", Path: "/anything"}, true},
		{"remote_localhost_v4", `(allow network-outbound (remote ip "localhost:8080"))`, Query{Op: "network-outbound", Addr: "127.0.0.1:8080"}, true},
		{"remote_localhost_v6", `(allow network-outbound (remote ip "localhost:8080"))`, Query{Op: "network-outbound", Addr: "[::1]:8080"}, true},
		{"remote_localhost_mapped", `(allow network-outbound (remote ip "localhost:8080"))`, Query{Op: "network-outbound", Addr: "[::ffff:127.0.0.1]:8080"}, false},
		{"remote_localhost_other_loopback", `(allow network-outbound (remote ip "localhost:8080"))`, Query{Op: "network-outbound", Addr: "127.0.0.2:8080"}, false},
		{"remote_localhost_port", `(allow network-outbound (remote ip "localhost:8080"))`, Query{Op: "network-outbound", Addr: "127.0.0.1:22"}, false},
		{"remote_localhost_not_internet", `(allow network-outbound (remote ip "localhost:*"))`, Query{Op: "network-outbound", Addr: "93.184.216.34:443"}, false},
		{"remote_any", `(allow network-outbound (remote ip "*:*"))`, Query{Op: "network-outbound", Addr: "93.184.216.34:443"}, true},
		{"remote_ip_not_unix", `(allow network-outbound (remote ip "*:*"))`, Query{Op: "network-outbound", Path: "/private/var/run/docker.sock"}, false},
		{"local_on_outbound_matches_all", `(allow network-outbound (local ip "localhost:*"))`, Query{Op: "network-outbound", Addr: "93.184.216.34:443"}, true},
		{"local_on_bind", `(allow network-bind (local ip "localhost:*"))`, Query{Op: "network-bind", Addr: "127.0.0.1:9000"}, true},
		{"local_on_bind_any_address", `(allow network-bind (local ip "localhost:*"))`, Query{Op: "network-bind", Addr: "0.0.0.0:9000"}, false},
		{"remote_on_bind", `(allow network-bind (remote ip "*:*"))`, Query{Op: "network-bind", Addr: "127.0.0.1:9000"}, false},
		{"unix_path_filter", `(allow network-outbound (literal "/private/var/run/syslog"))`, Query{Op: "network-outbound", Path: "/private/var/run/syslog"}, true},
		{"unix_path_not_ip", `(allow network-outbound (subpath "/"))`, Query{Op: "network-outbound", Addr: "93.184.216.34:443"}, false},
		{"unix_socket_path_literal", `(allow network-outbound (remote unix-socket (path-literal "/tmp/s")))`, Query{Op: "network-outbound", Path: "/tmp/s"}, true},
		{"unix_socket_subpath_bind", `(allow network-bind (local unix-socket (subpath "/tmp/a")))`, Query{Op: "network-bind", Path: "/tmp/a/s"}, true},
		{"unix_socket_subpath_bind_outside", `(allow network-bind (local unix-socket (subpath "/tmp/a")))`, Query{Op: "network-bind", Path: "/tmp/ab/s"}, false},
		{"unix_socket_local_not_outbound", `(allow network-outbound (local unix-socket (subpath "/tmp/a")))`, Query{Op: "network-outbound", Path: "/tmp/a/s"}, false},
		{"unix_socket_remote_not_bind", `(allow network-bind (remote unix-socket (subpath "/tmp/a")))`, Query{Op: "network-bind", Path: "/tmp/a/s"}, false},
		{"unix_socket_remote_outbound", `(allow network-outbound (remote unix-socket (subpath "/tmp/a")))`, Query{Op: "network-outbound", Path: "/tmp/a/s"}, true},
		{"unix_socket_not_ip", `(allow network-bind (local unix-socket (subpath "/")))`, Query{Op: "network-bind", Addr: "127.0.0.1:80"}, false},
		{"socket_domain", `(allow system-socket (socket-domain AF_UNIX))`, Query{Op: "system-socket", Name: "AF_UNIX"}, true},
		{"socket_domain_other", `(allow system-socket (socket-domain AF_UNIX))`, Query{Op: "system-socket", Name: "AF_INET"}, false},
		{"sysctl_write_name", `(allow sysctl-write (sysctl-name "kern.grade_cputype"))`, Query{Op: "sysctl-write", Name: "kern.grade_cputype"}, true},
		{"sysctl_read_not_write", `(allow sysctl-read (sysctl-name "kern.grade_cputype"))`, Query{Op: "sysctl-write", Name: "kern.grade_cputype"}, false},
		{"global_name", `(allow mach-lookup (global-name "com.apple.logd"))`, Query{Op: "mach-lookup", Name: "com.apple.logd"}, true},
		{"global_name_miss", `(allow mach-lookup (global-name "com.apple.logd"))`, Query{Op: "mach-lookup", Name: "com.apple.logd2"}, false},
		{"target_same", `(allow signal (target same-sandbox))`, Query{Op: "signal", SameSandbox: true}, true},
		{"target_other", `(allow signal (target same-sandbox))`, Query{Op: "signal"}, false},
		{"sysctl_name", `(allow sysctl-read (sysctl-name "hw.ncpu"))`, Query{Op: "sysctl-read", Name: "hw.ncpu"}, true},
		{"sysctl_prefix", `(allow sysctl-read (sysctl-name-prefix "hw.optional."))`, Query{Op: "sysctl-read", Name: "hw.optional.neon"}, true},
		{"process_exec_subpath", `(allow process-exec (subpath "/usr/bin"))`, Query{Op: "process-exec", Path: "/usr/bin/git"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, "(version 1)\n(deny default)\n"+tt.rules, nil)
			if got := allowed(t, p, tt.q); got != tt.want {
				t.Errorf("%s under %s = %v, want %v", tt.q, tt.rules, got, tt.want)
			}
		})
	}
}

func TestOperations(t *testing.T) {
	tests := []struct {
		name string
		rule string
		op   string
		want bool
	}{
		{"file_read_star_data", "file-read*", "file-read-data", true},
		{"file_read_star_metadata", "file-read*", "file-read-metadata", true},
		{"file_read_star_not_write", "file-read*", "file-write-data", false},
		{"file_write_star_create", "file-write*", "file-write-create", true},
		{"file_write_star_not_link", "file-write*", "file-link", false},
		{"file_write_star_not_clone", "file-write*", "file-clone", false},
		{"file_read_star_not_link", "file-read*", "file-link", false},
		{"file_write_star_not_ioctl", "file-write*", "file-ioctl", false},
		{"file_star_link", "file*", "file-link", true},
		{"file_star_ioctl", "file*", "file-ioctl", true},
		{"network_star_bind", "network*", "network-bind", true},
		{"exact_only", "file-read-data", "file-read-metadata", false},
		{"default_everything", "default", "mach-lookup", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, "(version 1)\n(deny default)\n(allow "+tt.rule+")", nil)
			q := Query{Op: tt.op, Path: "/x"}
			if got := allowed(t, p, q); got != tt.want {
				t.Errorf("(allow %s) allows %s = %v, want %v", tt.rule, tt.op, got, tt.want)
			}
		})
	}
}

// TestPrecedence follows the evidence in testdata/SEMANTICS.md: a rule naming the operation
// outranks one naming only a wildcard parent, whatever their order; within a rank the last
// matching rule decides.
func TestPrecedence(t *testing.T) {
	tests := []struct {
		name  string
		rules string
		q     Query
		want  bool
		msg   string
	}{
		{"default_deny", ``, Query{Op: "file-read-data", Path: "/a"}, false, "M"},
		{"later_deny_wins", `(allow file-read* (subpath "/a")) (deny file-read* (subpath "/a/s") (with message "X"))`,
			Query{Op: "file-read-data", Path: "/a/s/k"}, false, "X"},
		{"earlier_allow_still_for_others", `(allow file-read* (subpath "/a")) (deny file-read* (subpath "/a/s"))`,
			Query{Op: "file-read-data", Path: "/a/t"}, true, ""},
		{"deny_then_allow_same_op", `(deny file-read* (subpath "/a")) (allow file-read* (subpath "/"))`,
			Query{Op: "file-read-data", Path: "/a/s"}, true, ""},
		{"later_allow_wins", `(deny file-read* (subpath "/a")) (allow file-read-metadata (literal "/a/s"))`,
			Query{Op: "file-read-metadata", Path: "/a/s"}, true, ""},
		{"later_allow_other_op", `(deny file-read* (subpath "/a")) (allow file-read-metadata (literal "/a/s"))`,
			Query{Op: "file-read-data", Path: "/a/s"}, false, ""},
		// The shape that leaked on a real Mac: the wildcard deny does not outrank the allow that
		// names file-read-data, so the file stays readable.
		{"wildcard_deny_leaks_under_exact_allow", `(allow file-read-data (subpath "/")) (deny file-read* (literal "/p/.env"))`,
			Query{Op: "file-read-data", Path: "/p/.env"}, true, ""},
		{"wildcard_deny_still_covers_other_ops", `(allow file-read-data (subpath "/")) (deny file-read* (literal "/p/.env") (with message "X"))`,
			Query{Op: "file-read-metadata", Path: "/p/.env"}, false, "X"},
		{"exact_deny_closes_it", `(allow file-read-data (subpath "/")) (deny file-read-data (literal "/p/.env") (with message "X"))`,
			Query{Op: "file-read-data", Path: "/p/.env"}, false, "X"},
		{"exact_deny_outranks_later_wildcard_allow", `(deny file-read-data (literal "/p/.env") (with message "X")) (allow file-read* (subpath "/"))`,
			Query{Op: "file-read-data", Path: "/p/.env"}, false, "X"},
		{"exact_allow_outranks_later_wildcard_deny", `(allow file-read-data (subpath "/a")) (deny file* (subpath "/a"))`,
			Query{Op: "file-read-data", Path: "/a/x"}, true, ""},
		{"longer_wildcard_outranks_shorter", `(allow file-read* (subpath "/a")) (deny file* (subpath "/a"))`,
			Query{Op: "file-read-data", Path: "/a/x"}, true, ""},
		{"shorter_wildcard_decides_other_ops", `(allow file-read* (subpath "/a")) (deny file* (subpath "/a") (with message "X"))`,
			Query{Op: "file-write-data", Path: "/a/x"}, false, "X"},
		{"exact_rank_falls_through_when_no_filter_matches", `(deny file-read* (subpath "/h") (with message "X")) (allow file-read-metadata (literal "/h/a"))`,
			Query{Op: "file-read-metadata", Path: "/h/b"}, false, "X"},
		{"default_ranks_lowest", `(deny file-read-data (literal "/a") (with message "X")) (allow default)`,
			Query{Op: "file-read-data", Path: "/a"}, false, "X"},
		{"later_allow_default_opens_the_rest", `(allow default)`, Query{Op: "mach-lookup", Name: "com.apple.pasteboard.1"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, "(version 1)\n(deny default (with message \"M\"))\n"+tt.rules, nil)
			d, err := p.Eval(tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tt.want {
				t.Errorf("%s = %v, want %v (rule %d)", tt.q, d.Allowed, tt.want, d.Rule)
			}
			if !tt.want && tt.msg != "" && d.Message != tt.msg {
				t.Errorf("%s: message %q, want %q", tt.q, d.Message, tt.msg)
			}
		})
	}
}

// TestLastMatchReading is the plain reading the evaluator used to follow: under it the
// leaking shape looks closed, which is why escape tests use Specific and check that LastMatch
// agrees, never LastMatch alone.
func TestLastMatchReading(t *testing.T) {
	p := mustParse(t, `(version 1)(deny default)(allow file-read-data (subpath "/")) (deny file-read* (literal "/p/.env"))`, nil)
	q := Query{Op: "file-read-data", Path: "/p/.env"}
	spec, err := p.EvalAs(q, Specific)
	if err != nil {
		t.Fatal(err)
	}
	last, err := p.EvalAs(q, LastMatch)
	if err != nil {
		t.Fatal(err)
	}
	if !spec.Allowed || last.Allowed {
		t.Errorf("Specific allowed = %v, LastMatch allowed = %v; want true, false", spec.Allowed, last.Allowed)
	}
}

func TestConcrete(t *testing.T) {
	got := Concrete("file-read*")
	want := []string{"file-read-data", "file-read-metadata", "file-read-xattr"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Concrete(file-read*) = %v, want %v", got, want)
	}
	if got := Concrete("file-link"); len(got) != 1 || got[0] != "file-link" {
		t.Errorf("Concrete(file-link) = %v", got)
	}
	for _, op := range Concrete("file*") {
		if IsWildcard(op) {
			t.Errorf("Concrete(file*) has the wildcard %s", op)
		}
	}
}

func TestIPCNames(t *testing.T) {
	p := mustParse(t, `(version 1)(deny default)
(allow ipc-posix-shm-write-create (ipc-posix-name-regex #"^/psm_[0-9a-f]+$") (ipc-posix-name-prefix "/__KMP_"))`, nil)
	tests := []struct {
		name string
		want bool
	}{
		{"/psm_0a1b", true}, {"/__KMP_REGISTERED_LIB_1", true}, {"/psm_x", false}, {"apple.cfprefs.501", false},
	}
	for _, tt := range tests {
		if got := allowed(t, p, Query{Op: "ipc-posix-shm-write-create", Name: tt.name}); got != tt.want {
			t.Errorf("shm %s allowed = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestParams(t *testing.T) {
	src := `(version 1) (deny default) (allow file-write* (subpath (param "W")))`
	p := mustParse(t, src, map[string]string{"W": `/Users/me/a") (allow default) ("`})
	if !allowed(t, p, Query{Op: "file-write-data", Path: `/Users/me/a") (allow default) ("/f`}) {
		t.Error("a write inside the bound folder was denied")
	}
	if allowed(t, p, Query{Op: "file-read-data", Path: "/etc/passwd"}) {
		t.Error("a parameter value changed the rules: /etc/passwd readable")
	}
	if _, err := Parse(src, nil); err == nil || !strings.Contains(err.Error(), `"W" is not bound`) {
		t.Errorf("unbound parameter: err = %v", err)
	}
}

func TestStrings(t *testing.T) {
	tests := []struct {
		name, lit, want string
	}{
		{"plain", `"/a b"`, "/a b"},
		{"quote", `"/a\"b"`, `/a"b`},
		{"backslash", `"/a\\b"`, `/a\b`},
		{"hex", `"/a\x41;"`, "/aA"},
		{"semicolon_kept", `"/a;b"`, "/a;b"},
		{"paren_kept", `"/a)(b"`, "/a)(b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, "(version 1)(deny default)(allow file-read-data (literal "+tt.lit+"))", nil)
			if !allowed(t, p, Query{Op: "file-read-data", Path: tt.want}) {
				t.Errorf("literal %s does not match %q", tt.lit, tt.want)
			}
		})
	}
}

func TestRejects(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"no_version", `(deny default)`, "version 1"},
		{"no_default", `(version 1)(allow file-read*)`, "no default"},
		{"unknown_op", `(version 1)(deny default)(allow file-reed-data)`, "unknown operation"},
		{"unknown_filter", `(version 1)(deny default)(allow file-read* (vnode-type DIRECTORY))`, "unknown filter"},
		{"ip_host", `(version 1)(deny default)(allow network-outbound (remote ip "1.2.3.4:443"))`, "* or localhost"},
		{"ip_port", `(version 1)(deny default)(allow network-outbound (remote ip "localhost:99999"))`, "1-65535"},
		{"relative_path", `(version 1)(deny default)(allow file-read* (subpath "a"))`, "absolute"},
		{"unclosed", `(version 1)(deny default`, "unclosed"},
		{"stray_close", `(version 1))`, "unexpected ')'"},
		{"unterminated", `(version 1)(deny default)(allow file-read* (literal "/a))`, "unterminated"},
		{"bad_escape", `(version 1)(deny default)(allow file-read* (literal "/a\q"))`, "unknown escape"},
		{"nul", "(version 1)(deny default)(allow file-read* (literal \"/a\x00b\"))", "NUL"},
		{"unknown_modifier", `(version 1)(deny default (with telemetry))`, "modifier"},
		{"no_sandbox", `(version 1)(deny default)(allow process-exec (with no-sandbox) (literal "/bin/ps"))`, "outside the sandbox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.src, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%s) err = %v, want it to mention %q", tt.src, err, tt.want)
			}
		})
	}
}

func TestEvalRejectsAbstractOps(t *testing.T) {
	p := mustParse(t, "(version 1)(deny default)", nil)
	for _, op := range []string{"file-read*", "default", "file-reed-data"} {
		if _, err := p.Eval(Query{Op: op, Path: "/a"}); err == nil {
			t.Errorf("Eval(%s) gave no error", op)
		}
	}
}

func TestComments(t *testing.T) {
	p := mustParse(t, "; header (allow default)\n(version 1)\n(deny default) ; (allow default)\n", nil)
	if allowed(t, p, Query{Op: "file-read-data", Path: "/a"}) {
		t.Error("a rule inside a comment was applied")
	}
	if len(p.Rules) != 1 {
		t.Errorf("rules = %d, want 1", len(p.Rules))
	}
}

func TestShape(t *testing.T) {
	a := mustParse(t, `(version 1)(deny default (with message "m1"))(allow file-read* (subpath "/a") (literal "/b"))`, nil)
	b := mustParse(t, `(version 1)(deny default (with message "m2"))(allow file-read* (subpath "/x") (literal "/y"))`, nil)
	c := mustParse(t, `(version 1)(deny default (with message "m2"))(allow file-read* (subpath "/x")) (allow default)`, nil)
	if a.Shape() != b.Shape() {
		t.Errorf("shapes differ:\n%s\n%s", a.Shape(), b.Shape())
	}
	if a.Shape() == c.Shape() {
		t.Error("an added rule kept the shape")
	}
}

func TestNoReport(t *testing.T) {
	p := mustParse(t, `(version 1)
(deny default (with message "m"))
(deny mach-lookup (global-name "com.apple.cfprefsd.agent") (with message "m") (with no-report))
(allow mach-lookup (global-name "com.apple.logd") (with no-report))`, nil)
	for _, tt := range []struct {
		name         string
		allow, quiet bool
	}{
		{"com.apple.cfprefsd.agent", false, true},
		{"com.apple.FSEvents", false, false},
		{"com.apple.logd", true, false}, // an allow is never a quiet denial
	} {
		d, err := p.Eval(Query{Op: "mach-lookup", Name: tt.name})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != tt.allow || d.Quiet != tt.quiet || !d.Allowed && d.Message != "m" {
			t.Errorf("%s: %+v, want allowed %v quiet %v with the message", tt.name, d, tt.allow, tt.quiet)
		}
	}
}
