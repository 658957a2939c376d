// Package seatbelt is the macOS enforcement back end: it renders a session's policy.Policy as a
// Seatbelt profile (SBPL), starts the tool runner under /usr/bin/sandbox-exec with it, says
// whether this Mac can run sessions at all, and turns the kernel's denials, read back from the
// unified log, into the short report a command's error output ends with.
//
// Rendering, the denial parser and the report are OS-neutral and tested on any machine; only
// starting processes and following the log live in _darwin.go files. The package does not
// decide what a session may reach (that is policy's job) and does not run the egress proxy.
package seatbelt

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/openworker/openworker/core/policy"
)

// Param is one `-D NAME=VALUE` of sandbox-exec: a value the profile names as (param "NAME").
type Param struct {
	Name, Value string
}

// Profile is a rendered Seatbelt profile and the parameters it must be started with.
type Profile struct {
	Text   string
	Params []Param
}

// Args returns sandbox-exec's arguments for the profile, to be followed by the command:
// -p TEXT -D NAME=VALUE ...
func (pr *Profile) Args() []string {
	args := []string{"-p", pr.Text}
	for _, p := range pr.Params {
		args = append(args, "-D", p.Name+"="+p.Value)
	}
	return args
}

// ParamMap returns the parameters by name.
func (pr *Profile) ParamMap() map[string]string {
	m := make(map[string]string, len(pr.Params))
	for _, p := range pr.Params {
		m[p.Name] = p.Value
	}
	return m
}

// String is the printable form `openworker sandbox profile` shows: the profile text, then its
// parameters as comments, so the whole stays a valid profile.
func (pr *Profile) String() string {
	var b strings.Builder
	b.WriteString(pr.Text)
	b.WriteString("\n; Parameters (sandbox-exec -D NAME=VALUE):\n")
	for _, p := range pr.Params {
		v := p.Value
		if strings.ContainsFunc(v, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }) {
			// A newline in a folder name must not end the comment.
			v = strconv.Quote(v)
		}
		fmt.Fprintf(&b, ";   %s=%s\n", p.Name, v)
	}
	return b.String()
}

// validMarker says what a marker may contain: it is inlined in the profile, in a log predicate and
// in file names, so it is kept to characters that need no quoting anywhere.
func validMarker(m string) bool {
	if len(m) < 8 || len(m) > 128 {
		return false
	}
	for i, c := range m {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// devices a sandboxed command may read: the null device and the random and zero sources.
// Only /dev/null may be written.
var readableDevices = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"}

// systemSymlinks are macOS's top-level symlinks into /private: a program that opens
// /etc/hosts or /tmp/x stats them on the way to the real path.
var systemSymlinks = []string{"/etc", "/tmp", "/var"}

// terminalFilters are the terminal devices: the controlling terminal, ptys and the console.
// A command may neither open them nor ioctl them, even through a descriptor it inherited, so it
// cannot push keystrokes (TIOCSTI) into a person's shell or read what they type.
var terminalFilters = []string{
	`(literal "/dev/tty")`,
	`(regex #"^/dev/tty[^/]*$")`,
	`(regex #"^/dev/pty[^/]*$")`,
	`(literal "/dev/ptmx")`,
	`(literal "/dev/console")`,
}

// mdnsResponder is the socket through which macOS's resolver asks mDNSResponder for names.
const mdnsResponder = "/private/var/run/mDNSResponder"

// Render renders p as a Seatbelt profile. It fails, rather than render a looser profile, when
// p is incomplete or inconsistent: no marker, a relative or uncleaned path, a session folder
// that is or contains the home folder, an allowlist without a proxy port.
func Render(p *policy.Policy) (*Profile, error) {
	if p == nil {
		return nil, errors.New("seatbelt: no policy to render")
	}
	if err := check(p); err != nil {
		return nil, err
	}
	r := &renderer{p: p, names: map[string]string{}}
	r.render()
	return &Profile{Text: r.b.String(), Params: r.params}, nil
}

func check(p *policy.Policy) error {
	if !validMarker(p.Marker) {
		return fmt.Errorf("seatbelt: the policy's marker %q is not 8-128 letters, digits, '.', '_' or '-'; build the policy with policy.New", p.Marker)
	}
	var bad []string
	checkPath := func(kind, s string) {
		if s == "" || !path.IsAbs(s) || path.Clean(s) != s || strings.ContainsRune(s, 0) {
			bad = append(bad, fmt.Sprintf("%s %q", kind, s))
		}
	}
	checkPath("home folder", p.UserHome)
	for _, w := range p.Writable {
		checkPath("writable folder", w)
	}
	for _, d := range p.ReadOnly {
		checkPath("read-only folder", d)
	}
	if p.PrivateTmp != "" {
		checkPath("private tmp folder", p.PrivateTmp)
	}
	for _, d := range p.System {
		checkPath("system path", d)
	}
	for _, d := range p.Toolchains {
		checkPath("toolchain folder", d)
	}
	for _, d := range p.RunnerFiles {
		checkPath("runner file", d)
	}
	if len(bad) > 0 {
		return fmt.Errorf("seatbelt: these paths are not absolute, clean and without NUL: %s; the policy must resolve them first", strings.Join(bad, ", "))
	}
	shared := slices.Concat(p.Writable, p.ReadOnly, p.Toolchains, p.RunnerFiles, p.System)
	if p.PrivateTmp != "" {
		shared = append(shared, p.PrivateTmp)
	}
	for _, d := range shared {
		if policy.Within(d, p.UserHome) {
			return fmt.Errorf("seatbelt: %s is or contains the home folder %s; the home folder is never shared whole", d, p.UserHome)
		}
	}
	switch p.Network {
	case policy.Allowlist:
		if p.ProxyPort < 1 || p.ProxyPort > 65535 {
			return fmt.Errorf("seatbelt: allowlist network needs the egress proxy's port, got %d; start the proxy before rendering the profile", p.ProxyPort)
		}
	case policy.Open, policy.None:
	default:
		return fmt.Errorf("seatbelt: network mode %q is not allowlist, open or none", p.Network)
	}
	return nil
}

type renderer struct {
	p      *policy.Policy
	b      strings.Builder
	params []Param
	names  map[string]string // "ROLE\x00value" → parameter name, so a path gets one name per role
}

// quote renders s as an SBPL string literal. Every backslash and quote is escaped, so nothing
// in s can end the string; nothing else is special inside one. Check refuses NUL, the one byte
// a C string cannot hold.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// param returns `(param "ROLE_N")` for value, adding the parameter the first time.
func (r *renderer) param(role, value string) string {
	key := role + "\x00" + value
	name, ok := r.names[key]
	if !ok {
		n := 0
		for _, p := range r.params {
			if strings.HasPrefix(p.Name, role+"_") {
				n++
			}
		}
		name = role + "_" + strconv.Itoa(n)
		if role == "PRIVATE_TMP" || role == "USER_HOME" {
			name = role
		}
		r.names[key] = name
		r.params = append(r.params, Param{Name: name, Value: value})
	}
	return `(param "` + name + `")`
}

func (r *renderer) line(format string, args ...any) {
	fmt.Fprintf(&r.b, format, args...)
	r.b.WriteByte('\n')
}

// rule writes `(ACTION OPS FILTER...)`, one filter a line, and a deny's marker message.
func (r *renderer) rule(action, ops string, filters []string) {
	if action == "deny" {
		filters = append(slices.Clone(filters), "(with message "+quote(r.p.Marker)+")")
	}
	if len(filters) == 1 && len(filters[0]) < 50 {
		r.line("(%s %s %s)", action, ops, filters[0])
		return
	}
	r.line("(%s %s", action, ops)
	for i, f := range filters {
		end := ""
		if i == len(filters)-1 {
			end = ")"
		}
		r.line("  %s%s", f, end)
	}
}

func subpaths(exprs []string) []string {
	out := make([]string, len(exprs))
	for i, e := range exprs {
		out[i] = "(subpath " + e + ")"
	}
	return out
}

// readable is every folder and file the sandbox may read, as expressions, in the order of
// policy.Readable: system paths inlined (they are the product's constants), the session's own
// as parameters.
func (r *renderer) readable() []string {
	p := r.p
	var out []string
	for _, d := range p.System {
		out = append(out, quote(d))
	}
	for _, d := range p.Toolchains {
		out = append(out, r.param("TOOLCHAIN", d))
	}
	for _, d := range p.RunnerFiles {
		out = append(out, r.param("RUNNER", d))
	}
	for _, d := range p.ReadOnly {
		out = append(out, r.param("READ_ONLY", d))
	}
	for _, d := range p.Writable {
		out = append(out, r.param("WRITABLE", d))
	}
	if p.PrivateTmp != "" {
		out = append(out, r.param("PRIVATE_TMP", p.PrivateTmp))
	}
	return out
}

func (r *renderer) writable() []string {
	var out []string
	for _, d := range r.p.Writable {
		out = append(out, r.param("WRITABLE", d))
	}
	if r.p.PrivateTmp != "" {
		out = append(out, r.param("PRIVATE_TMP", r.p.PrivateTmp))
	}
	return out
}

// ancestors returns the folders above the readable paths, "/" first, then those of system
// paths (inlined), then the others (parameters).
func (r *renderer) ancestors() []string {
	p := r.p
	seen := map[string]bool{"/": true}
	var system, session []string
	all := slices.Concat(p.System, p.Toolchains, p.RunnerFiles, p.ReadOnly, p.Writable)
	if p.PrivateTmp != "" {
		all = append(all, p.PrivateTmp)
	}
	readable := func(a string) bool {
		return slices.ContainsFunc(all, func(d string) bool { return policy.Within(d, a) })
	}
	add := func(list *[]string, d string) {
		for a := path.Dir(d); a != "/"; a = path.Dir(a) {
			// A folder already readable whole needs no rule of its own.
			if !seen[a] && !readable(a) {
				seen[a] = true
				*list = append(*list, a)
			}
		}
	}
	for _, d := range p.System {
		add(&system, d)
	}
	for _, d := range all[len(p.System):] {
		add(&session, d)
	}
	slices.Sort(system)
	slices.Sort(session)
	out := []string{`(literal "/")`}
	for _, a := range system {
		out = append(out, "(literal "+quote(a)+")")
	}
	for _, a := range session {
		out = append(out, "(literal "+r.param("ANCESTOR", a)+")")
	}
	return out
}

func (r *renderer) render() {
	p := r.p
	r.line("; Seatbelt profile generated by OpenWorker for marker %s.", p.Marker)
	r.line("; Rendered from one session's policy; do not edit. Paths are parameters (-D NAME=VALUE,")
	r.line("; listed at the end by `openworker sandbox profile`), so no folder name can change a rule.")
	r.line("; When several rules match an operation, the last one decides.")
	r.line("(version 1)")
	r.line("")
	r.line("; Everything not allowed below is denied, and every denial carries this run's marker so")
	r.line("; that it can be found in the unified log.")
	r.rule("deny", "default", nil)
	r.line("")

	r.line("; Processes: a command may start others (they inherit this profile) and signal or")
	r.line("; inspect only processes under this same sandbox.")
	r.line("(allow process-fork)")
	r.line("(allow signal (target same-sandbox))")
	r.line("(allow process-info* (target same-sandbox))")
	r.line("")

	readable := r.readable()
	r.line("; Files it reads: the system, enabled toolchains, the runner's own files, the session's")
	r.line("; read-only and writable folders and its private tmp folder.")
	r.rule("allow", "file-read* file-test-existence", subpaths(readable))
	r.line("")
	r.line("; Programs it runs and libraries it maps: only readable ones.")
	r.rule("allow", "process-exec file-map-executable", subpaths(readable))
	r.line("")

	r.line("; Files it writes: the session's writable folders and its private tmp folder (which holds")
	r.line("; the sandbox's home).")
	if w := r.writable(); len(w) > 0 {
		r.rule("allow", "file-write*", subpaths(w))
	} else {
		r.line("; (none in this session)")
	}
	r.line("")
	if len(p.ReadOnly) > 0 {
		r.line("; Read-only folders stay read-only, even inside a writable folder.")
		var ro []string
		for _, d := range p.ReadOnly {
			ro = append(ro, r.param("READ_ONLY", d))
		}
		r.rule("deny", "file-write*", subpaths(ro))
		r.line("")
	}

	r.line("; The home folder: nothing in it, not even a listing, but the shared folders inside it.")
	home := "(subpath " + r.param("USER_HOME", p.UserHome) + ")"
	var inside []string
	all := slices.Concat(p.System, p.Toolchains, p.RunnerFiles, p.ReadOnly, p.Writable)
	if p.PrivateTmp != "" {
		all = append(all, p.PrivateTmp)
	}
	for i, d := range all { // in the order of readable()
		if policy.Within(p.UserHome, d) {
			inside = append(inside, "(subpath "+readable[i]+")")
		}
	}
	if len(inside) == 0 {
		r.rule("deny", "file* process-exec", []string{home})
	} else {
		guard := "(require-all\n    " + home + "\n    (require-not (require-any\n      " + strings.Join(inside, "\n      ") + ")))"
		r.rule("deny", "file* process-exec", []string{guard})
	}
	r.line("")

	r.line("; Metadata (not contents) of the folders above those paths and of the /etc, /tmp, /var")
	r.line("; symlinks, so that paths resolve (realpath, getcwd). The home folder can then be")
	r.line("; stat'ed when a session folder lies in it, never listed.")
	meta := r.ancestors()
	for _, s := range systemSymlinks {
		meta = append(meta, "(literal "+quote(s)+")")
	}
	r.rule("allow", "file-read-metadata file-test-existence", meta)
	r.line("")

	r.line("; Devices: the null device (read and write) and the zero and random sources (read).")
	var devs []string
	for _, d := range readableDevices {
		devs = append(devs, "(literal "+quote(d)+")")
	}
	r.rule("allow", "file-read*", devs)
	r.rule("allow", "file-write-data", []string{`(literal "/dev/null")`})
	r.rule("allow", "file-ioctl", devs)
	r.line("")

	r.line("; Terminals: no opening and no ioctl, not even on an inherited descriptor, so a command")
	r.line("; cannot push keystrokes into a person's shell or read what they type.")
	r.rule("deny", "file-read* file-write* file-ioctl", terminalFilters)
	r.line("")

	r.line("; macOS services, by name; LaunchServices, the pasteboard, the keychain and preferences")
	r.line("; are not among them.")
	var names []string
	for _, s := range machServices {
		names = append(names, "(global-name "+quote(s.name)+") ; "+s.why)
	}
	r.ruleCommented("allow", "mach-lookup", names)
	r.line("")

	r.line("; Kernel values runtimes ask about the machine and their own processes.")
	var sysctls []string
	for _, n := range sysctlNames {
		sysctls = append(sysctls, "(sysctl-name "+quote(n)+")")
	}
	for _, n := range sysctlPrefixes {
		sysctls = append(sysctls, "(sysctl-name-prefix "+quote(n)+")")
	}
	r.rule("allow", "sysctl-read", sysctls)
	r.line("; Named semaphores, for Python's multiprocessing locks.")
	r.line("(allow ipc-posix-sem)")
	r.line("")

	r.line("; Unix sockets: none (not Docker's, not ssh-agent's, not OpenWorker's, not one in a")
	r.line("; session folder). The runner talks over an inherited socket pair, which needs no rule.")
	r.rule("deny", "network-outbound network-inbound network-bind", []string{`(subpath "/")`})
	r.line("")
	switch p.Network {
	case policy.Allowlist:
		r.line("; Network: only the egress proxy, on its loopback port (localhost is 127.0.0.1 and ::1).")
		r.line("; A program that ignores HTTPS_PROXY has no network at all.")
		r.line("(allow network-outbound (remote ip %s))", quote("localhost:"+strconv.Itoa(p.ProxyPort)))
	case policy.Open:
		r.line("; Network: open. Any address and port, outbound only; files stay walled. Names are")
		r.line("; resolved by mDNSResponder, through its socket: the one Unix socket open mode allows.")
		r.line(`(allow network-outbound (remote ip "*:*"))`)
		r.line("(allow network-outbound (literal %s))", quote(mdnsResponder))
	case policy.None:
		r.line("; Network: none, not even the egress proxy.")
	}
	r.line("")

	r.line("; Hard links and clones: Seatbelt checks them as operations of their own, which no read")
	r.line("; or write rule covers; denied by name, so a file the command may not read cannot get a")
	r.line("; second name or a copy in a folder it may. Tools copy instead.")
	r.rule("deny", "file-link file-clone", nil)
}

// ruleCommented is rule with a trailing comment on each filter line.
func (r *renderer) ruleCommented(action, ops string, filters []string) {
	r.line("(%s %s", action, ops)
	for i, f := range filters {
		if i == len(filters)-1 {
			// The closing parenthesis goes before the comment, or the comment would eat it.
			code, comment, _ := strings.Cut(f, " ; ")
			r.line("  %s) ; %s", code, comment)
			continue
		}
		r.line("  %s", f)
	}
}
