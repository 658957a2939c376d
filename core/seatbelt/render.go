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
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

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

// Operation names as a deny writes them. Seatbelt ranks a rule that names an operation above
// one that names only its wildcard parent (greywall PR 20, fence PRs 184 and 218; see
// testdata/SEMANTICS.md), so a deny that names only file-read* loses to any allow of
// file-read-data, wherever that allow stands. Every deny therefore names each concrete
// operation it must hold against, and the wildcard too, for operations a later macOS adds.
const (
	readOps  = "file-read* file-read-data file-read-metadata file-read-xattr"
	writeOps = "file-write* file-write-acl file-write-create file-write-data file-write-flags " +
		"file-write-mode file-write-owner file-write-setugid file-write-times file-write-unlink file-write-xattr"
	fileOps = "file* " + readOps + " " + writeOps +
		" file-clone file-ioctl file-link file-map-executable file-revoke file-test-existence"
	socketOps = "network* network-bind network-inbound network-outbound"
	// execOps are running a program and running a script's interpreter (#!), which Seatbelt
	// checks as an operation of its own.
	execOps = "process-exec* process-exec process-exec-interpreter"
)

// readableDevices are devices a sandboxed command may open and ioctl: the null device, the zero
// and random sources, and /dev/dtracehelper, which dyld opens in every process to register
// its probes (without it, each program start adds a denial to the report; fence and
// sandbox-runtime allow it).
var readableDevices = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/dtracehelper"}

// writableDevices may be written as well.
var writableDevices = []string{"/dev/null", "/dev/dtracehelper"}

// standardStreams are /dev/fd and its aliases: process substitution, `> /dev/stderr` and
// Python's scan of /dev/fd before each subprocess open them. Opening /dev/fd/N duplicates a
// descriptor the process already has, so it reaches nothing new.
var standardStreams = []string{`(subpath "/dev/fd")`, `(literal "/dev/stdin")`, `(literal "/dev/stdout")`, `(literal "/dev/stderr")`}

// systemSymlinks are macOS's top-level symlinks into /private: a program that opens
// /etc/hosts or /tmp/x stats them on the way to the real path. /dev is listed so that
// realpath of /dev/stdout works.
var systemSymlinks = []string{"/dev", "/etc", "/tmp", "/var"}

// programStart are what macOS's own program start reads outside the system folders, each with
// its source. Every command the runner starts goes through /bin/sh, which on macOS is a shim
// that reads /private/var/select/sh; /usr/bin/git, python3, make and clang are shims that read
// the xcode-select link.
var programStart = []struct{ filter, why string }{
	{`(subpath "/private/var/select")`, "the /bin/sh shim's choice of shell and the developer folder link (codex, and peers that list it)"},
	{`(literal "/private/var/db/xcode_select_link")`, "the xcode-select link the /usr/bin developer-tool shims read"},
	{`(subpath "/private/var/db/dyld")`, "dyld's shared cache on macOS releases that keep it here (codex)"},
	{`(literal "/private/var/db/os_eligibility/eligibility.plist")`, "the OS's feature-eligibility answers, which libsystem's os_eligibility reads for frameworks as they start (its folder may be stat'ed, below): yes-or-no answers and the region they rest on, which LANG tells a command anyway; refused, it would be reported after every Foundation program, and quietly refused, frameworks would take features as unavailable"},
}

// startProbes are devices and segments nearly every program touches as it starts, readable
// and nothing more: refused, each would end every command's report (macOS review A3).
var startProbes = []struct{ ops, filter, why string }{
	{"file-read-data file-read-metadata", `(literal "/dev/autofs_nowait")`, "opened by most programs at start so that a path lookup never waits for an automount (codex, agent-safehouse)"},
	{"ipc-posix-shm-read-data ipc-posix-shm-read-metadata", `(ipc-posix-name "apple.shm.notification_center")`, "libnotify's shared segment, read by tzset and localtime (ls -l, date, git log) to learn that the time zone changed; agent-safehouse"},
}

// hereDocuments are the files shells write here-documents to. bash 3.2, macOS's /bin/sh,
// creates them in /var/tmp (its P_tmpdir) whatever TMPDIR says, opens them again to read and
// unlinks them. The folder is shared with the person's own shells, so this is as narrow as
// the names allow: create, write, read and unlink of bash's own file names, nothing else there.
const hereDocuments = `(regex #"^/private/var/tmp/sh-thd[^/]*$")`

// xcrunCache is the cache file the /usr/bin developer shims (git, make, cc, clang, python3)
// fall back to when confstr cannot give them the person's per-user temp folder, and the
// temporary files it is written through. Inside, confstr fails (no metadata of
// /private/var/folders, no com.apple.bsd.dirhelper), so xcrun always lands here and never
// in the person's own cache, which their xcrun outside the wall reads (openai/codex issue
// 191; opam issue 4958).
const xcrunCache = `(regex #"^/private/tmp/xcrun_db(-[^/]+)?$")`

// varFolders holds the per-user temporary and cache folders (confstr's
// _CS_DARWIN_USER_TEMP_DIR): no session folder may lie in it, or the folders above would be
// stat-able and xcrun would move its cache into the person's own.
const varFolders = "/private/var/folders"

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

// sharedMemory are the POSIX shared-memory names a command may create: libomp's registration
// segment (codex's base profile) and Python's multiprocessing.shared_memory segments. Other
// names (cfprefsd's, notifyd's) belong to services the sandbox does not get.
var sharedMemory = []string{
	`(ipc-posix-name-regex #"^/__KMP_REGISTERED_LIB_[0-9]+(_[0-9]+)?$")`,
	`(ipc-posix-name-regex #"^/psm_[0-9a-f]+$")`,
}

// mdnsResponder is the socket through which macOS's resolver asks mDNSResponder for names.
const mdnsResponder = "/private/var/run/mDNSResponder"

// semaphores are the POSIX named semaphores a command may create, open, wait on and unlink:
// the names runtimes give their own. Every other name belongs to some other program of the
// person's, which a command could otherwise hold or remove.
var semaphores = []struct{ filter, why string }{
	{`(ipc-posix-name-regex #"^/mp-[a-z0-9_]+$")`, "Python's multiprocessing: locks, queues, pools, ProcessPoolExecutor; /mp- and eight random characters (CPython Lib/multiprocessing/synchronize.py, SemLock._make_name)"},
	{`(ipc-posix-name-regex #"^/loky-[0-9]+-[a-z0-9_]+$")`, "joblib's process pool, loky: /loky-PID- and eight random characters (joblib/loky, loky/backend/synchronize.py)"},
}

// hostSettings is, at any depth of a writable folder, what an agent host run by the person
// obeys outside the wall, as regular expressions (in any letter case) that follow the
// folder's quoted path. A command may not write, create, remove, rename, link or clone any
// of it, whether the project had it or not.
var hostSettings = []struct{ suffix, why string }{
	{`(/[^/]+)*/\.` + anyCaseRegex(`(claude|codex|gemini|cursor)`) + `(/[^/]+)*$`, "an agent host's project settings (Claude Code's hooks, apiKeyHelper and shell prefix, Codex's, gemini-cli's and Cursor's MCP servers and hooks), which the person's host runs outside when it starts in the project"},
	{`(/[^/]+)*/\.` + anyCaseRegex(`mcp`) + `\.` + anyCaseRegex(`json`) + `$`, "the project's MCP servers, which Claude Code starts outside"},
}

// anyCaseRegex is re, a regular expression of ASCII letters, dots, slashes and groups, with
// each letter matched in either case.
func anyCaseRegex(re string) string {
	var b strings.Builder
	for i := 0; i < len(re); i++ {
		c := re[i]
		switch {
		case c == '\\' && i+1 < len(re):
			b.WriteByte(c)
			i++
			b.WriteByte(re[i])
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			b.WriteString("[" + string(c&^0x20) + string(c|0x20) + "]")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// anyCase is rel, a path below a writable folder, as a regular expression that matches it as
// a volume that finds names in any letter case does (APFS and HFS+ by default): each ASCII
// letter in either case, and each run of other bytes as any name's characters, since such a
// volume also finds them in another case or Unicode form. It matches a little more than the
// volume finds; what it guards is then guarded under a few more names.
func anyCase(rel string) string {
	var b strings.Builder
	for i := 0; i < len(rel); i++ {
		c := rel[i]
		switch {
		case c >= 0x80:
			for i+1 < len(rel) && rel[i+1] >= 0x80 {
				i++
			}
			b.WriteString("[^/]+")
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			b.WriteString("[" + string(c&^0x20) + string(c|0x20) + "]")
		default:
			b.WriteString(regexQuote(string(c)))
		}
	}
	return b.String()
}

// caseless is a filter for path, in a writable folder, in any letter case past the folder's
// own path (which the policy spells as on disk), and below it when below is set.
func (r *renderer) caseless(path string, below bool) string {
	root := ""
	for _, w := range r.p.Writable {
		if policy.Within(w, path) && len(w) > len(root) {
			root = w
		}
	}
	tail := "$"
	if below {
		tail = "(/[^/]+)*$"
	}
	return "(regex " + quote("^"+regexQuote(root)+anyCase(strings.TrimPrefix(path, root))+tail) + ")"
}

// narrowed are folders inside the readable system paths that hold the person's data rather
// than the system's. Nothing in one is reachable but what keep names and the session folders
// the person shares inside it.
var narrowed = []struct {
	folder, why string
	// keep are the paths inside that stay readable, each with its source.
	keep []struct{ filter, why string }
	// stat says the folder itself may be stat'ed (not listed), as programs that read a kept
	// path do on the way.
	stat bool
}{
	{
		folder: "/Library/Preferences",
		why:    "the machine's settings: its network configuration\n; (SystemConfiguration), the login window's users, Bluetooth pairings, Time Machine's targets",
		keep: []struct{ filter, why string }{
			{`(literal "/Library/Preferences/com.apple.dt.Xcode.plist")`, "the Xcode licence check xcodebuild and the /usr/bin developer-tool shims make (tuist PR 7631; agent-safehouse xcode.sb)"},
			{`(literal "/Library/Preferences/.GlobalPreferences.plist")`, "machine-wide locale and defaults Foundation reads (agent-safehouse 10-system-runtime.sb)"},
			{`(subpath "/Library/Preferences/Logging")`, "os_log's configuration, read as every process starts logging (codex seatbelt_platform_defaults.sbpl; agent-safehouse)"},
			{`(literal "/Library/Preferences/com.apple.networkd.plist")`, "networkd's settings, read as a network client starts (agent-safehouse 10-system-runtime.sb)"},
		},
		stat: true,
	},
	{folder: "/opt/homebrew/var", why: "the data of Homebrew's services: PostgreSQL, MySQL\n; and Redis databases, their dumps and logs (its etc, with the CA bundles, stays readable)"},
	{folder: "/usr/local/var", why: "the same on Intel Macs"},
}

// Options are what a profile depends on besides the session's policy: what is known of the
// Mac it runs on.
type Options struct {
	// LinkChecks is what the link probe proved; the zero value is LinkChecksUnknown.
	LinkChecks LinkChecks
}

// Render renders p as a Seatbelt profile for a Mac nothing more is known of. It fails, rather
// than render a looser profile, when p is incomplete or inconsistent: no marker, a relative or
// uncleaned path, a session folder that is or contains the home folder, an allowlist without
// a proxy port.
func Render(p *policy.Policy) (*Profile, error) { return RenderWith(p, Options{}) }

// RenderWith is Render on a Mac of which o is known.
func RenderWith(p *policy.Policy, o Options) (*Profile, error) {
	if o.LinkChecks == "" {
		o.LinkChecks = LinkChecksUnknown
	}
	if _, err := ParseLinkChecks(string(o.LinkChecks)); err != nil {
		return nil, fmt.Errorf("seatbelt: %w", err)
	}
	if p == nil {
		return nil, errors.New("seatbelt: no policy to render")
	}
	if err := check(p); err != nil {
		return nil, err
	}
	r := &renderer{p: p, o: o, names: map[string]string{}}
	r.render()
	return &Profile{Text: r.b.String(), Params: r.params}, nil
}

func check(p *policy.Policy) error {
	if !validMarker(p.Marker) {
		return fmt.Errorf("seatbelt: the policy's marker %q is not 8-128 letters, digits, '.', '_' or '-'; build the policy with policy.New", p.Marker)
	}
	var bad []string
	checkPath := func(kind, s string) {
		// macOS's file systems keep names as UTF-8, so a path that is not cannot name a
		// folder there; and a writable folder's path is part of regular expressions.
		if s == "" || !path.IsAbs(s) || path.Clean(s) != s || strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
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
		if policy.Within(varFolders, p.PrivateTmp) {
			return fmt.Errorf("seatbelt: the private tmp folder %s lies in %s, whose per-user folders xcrun would then find and write its cache in; make it under /private/tmp", p.PrivateTmp, varFolders)
		}
	}
	for _, d := range p.System {
		checkPath("system path", d)
	}
	for _, d := range p.Toolchains {
		checkPath("toolchain folder", d)
	}
	for _, d := range p.RunnerFiles {
		checkPath("runner file", d)
		if why := runnerPlace(d); why != "" {
			return fmt.Errorf("seatbelt: %s", why)
		}
	}
	for _, d := range p.Hidden {
		checkPath("hidden file", d)
	}
	for _, d := range policy.Sources(p.Caches) {
		checkPath("cache folder", d)
	}
	for _, d := range policy.Sources(p.HostCaches) {
		checkPath("host cache folder", d)
	}
	if len(bad) > 0 {
		return fmt.Errorf("seatbelt: these paths are not absolute, clean, UTF-8 and without NUL: %s; the policy must resolve them first", strings.Join(bad, ", "))
	}
	shared := slices.Concat(p.Writable, p.ReadOnly, p.Toolchains, p.RunnerFiles, p.System, policy.Sources(p.Caches), policy.Sources(p.HostCaches))
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
	case policy.Open:
		if p.ProxyPort < 0 || p.ProxyPort > 65535 {
			return fmt.Errorf("seatbelt: the egress proxy's port %d is not 1-65535 (0 when open mode has no proxy)", p.ProxyPort)
		}
	case policy.None:
	default:
		return fmt.Errorf("seatbelt: network mode %q is not allowlist, open or none", p.Network)
	}
	return nil
}

type renderer struct {
	p      *policy.Policy
	o      Options
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
	r.rawRule(action, ops, filters)
}

// quietRule writes a deny the kernel does not log, (with no-report): for what programs try as
// they start and do without, never for what the wall holds back from a command. It carries
// no marker, which only finds logged denials, so that it has one modifier, as peers write it.
func (r *renderer) quietRule(ops string, filters []string) {
	r.rawRule("deny", ops, append(slices.Clone(filters), "(with no-report)"))
}

func (r *renderer) rawRule(action, ops string, filters []string) {
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
	for _, d := range policy.Sources(p.Caches) {
		out = append(out, r.param("CACHE", d))
	}
	for _, d := range policy.Sources(p.HostCaches) {
		out = append(out, r.param("HOST_CACHE", d))
	}
	return out
}

// all is every path readable() names, in its order.
func (r *renderer) all() []string {
	p := r.p
	all := slices.Concat(p.System, p.Toolchains, p.RunnerFiles, p.ReadOnly, p.Writable)
	if p.PrivateTmp != "" {
		all = append(all, p.PrivateTmp)
	}
	return slices.Concat(all, policy.Sources(p.Caches), policy.Sources(p.HostCaches))
}

func (r *renderer) writable() []string {
	var out []string
	for _, d := range r.p.Writable {
		out = append(out, r.param("WRITABLE", d))
	}
	if r.p.PrivateTmp != "" {
		out = append(out, r.param("PRIVATE_TMP", r.p.PrivateTmp))
	}
	for _, d := range policy.Sources(r.p.Caches) {
		out = append(out, r.param("CACHE", d))
	}
	return out
}

// ancestors returns the folders above the readable paths, "/" first, then those of system
// paths (inlined), then the others (parameters).
func (r *renderer) ancestors() []string {
	p := r.p
	seen := map[string]bool{"/": true}
	var system, session []string
	all := r.all()
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
	r.line("; listed at the end by `openworker sandbox profile`), so no folder name can change a rule;")
	r.line("; where a regular expression must name a folder, the name is quoted in it.")
	r.line("; When several rules match an operation, one that names the operation outranks one that")
	r.line("; names only its wildcard (file-read-data over file-read*), and among equals the last")
	r.line("; decides; so every deny names each operation it must hold against.")
	r.line("(version 1)")
	r.line("")
	r.line("; Everything not allowed below is denied, and every denial carries this run's marker so")
	r.line("; that it can be found in the unified log.")
	r.rule("deny", "default", nil)
	r.line("")

	r.line("; Processes: a command may start others (they inherit this profile) and signal or")
	r.line("; inspect only processes under this same sandbox. Other processes' information, and")
	r.line("; exec with no sandbox, are never allowed.")
	r.line("(allow process-fork)")
	r.line("(allow signal (target same-sandbox))")
	r.line("(allow process-info* (target same-sandbox))")
	r.line("")

	readable := r.readable()
	r.line("; Files it reads: the system, enabled toolchains, the runner's own files, the session's")
	r.line("; read-only and writable folders and its private tmp folder.")
	r.rule("allow", "file-read* file-test-existence", subpaths(readable))
	r.line("")
	r.line("; Programs it runs (and the interpreters of #! scripts) and libraries it maps: only")
	r.line("; readable ones.")
	r.rule("allow", "process-exec* file-map-executable", subpaths(readable))
	r.line("")

	r.line("; Program start. dyld reads the root folder itself, not only its metadata, in every")
	r.line("; process (fence allows it for that reason); `ls /` lists it. And:")
	var start []string
	for _, s := range programStart {
		start = append(start, s.filter+" ; "+s.why)
	}
	r.line(`(allow file-read-data file-read-metadata (literal "/"))`)
	r.ruleCommented("allow", "file-read* file-test-existence", start)
	r.line("")

	r.line("; Files it writes: the session's writable folders and its private tmp folder (which holds")
	r.line("; the sandbox's home and TMPDIR).")
	if w := r.writable(); len(w) > 0 {
		r.rule("allow", "file-write*", subpaths(w))
	} else {
		r.line("; (none in this session)")
	}
	r.line("")
	r.line("; Here-documents: bash, macOS's /bin/sh, writes them to /private/var/tmp/sh-thd* whatever")
	r.line("; TMPDIR says. Only those names, and only create, write, read and unlink.")
	r.rule("allow", "file-read-data file-read-metadata file-write-create file-write-data file-write-unlink", []string{hereDocuments})
	r.rule("allow", "file-read-metadata file-test-existence", []string{`(literal "/private/var/tmp")`})
	r.line("; xcrun's cache: the /usr/bin developer shims (git, make, cc, clang, python3) cannot find the")
	r.line("; person's per-user temp folder here, on purpose, and fall back to /tmp/xcrun_db; only that")
	r.line("; file and its temporary siblings, and only create, write, read and unlink.")
	r.rule("allow", "file-read-data file-read-metadata file-write-create file-write-data file-write-unlink", []string{xcrunCache})
	r.line("")
	if len(p.ReadOnly)+len(p.HostCaches) > 0 {
		r.line("; Read-only folders stay read-only, even inside a writable folder.")
		if len(p.HostCaches) > 0 {
			r.line("; So do the person's own caches that the session reads packages from.")
		}
		var ro []string
		for _, d := range p.ReadOnly {
			ro = append(ro, r.param("READ_ONLY", d))
		}
		for _, d := range policy.Sources(p.HostCaches) {
			ro = append(ro, r.param("HOST_CACHE", d))
		}
		r.rule("deny", writeOps, subpaths(ro))
		r.line("")
	}
	if !p.GitMetadataWritable && len(p.Writable) > 0 {
		r.line("; What the person's own git runs or obeys outside the wall in the repositories the session")
		r.line("; found when it started stays read-only: each one's settings (core.fsmonitor, core.hooksPath,")
		r.line("; filters, include.path, ...), per-worktree settings, commondir and .git files, which name the")
		r.line("; folder git takes them from, and hooks, in their worktrees and submodules too; and the hooks")
		r.line("; folders they name instead of .git/hooks (core.hooksPath), whose hooks the person's next commit")
		r.line("; runs. Each is matched in any letter case, as the volume finds it. A repository made during the")
		r.line("; session (git init, git clone, cargo new) is the command's own: what it plants there is moved")
		r.line("; aside as it is made, as on Linux. Links and clones are named too, so none of it gets a second,")
		r.line("; writable name.")
		var held, anchors []string
		for _, pr := range p.Protected {
			if pr.Anchor {
				anchors = append(anchors, r.caseless(pr.Path, false))
			} else {
				held = append(held, r.caseless(pr.Path, pr.Dir))
			}
		}
		if len(held) > 0 {
			r.rule("deny", writeOps+" file-link file-clone", held)
		}
		if len(anchors) > 0 {
			r.line("; The folders that hold them, from the writable folder down to each .git (and the worktrees' and")
			r.line("; submodules' own folders), stay writable inside but cannot be renamed or removed: moved aside,")
			r.line("; a repository could come back in their place with settings the command wrote.")
			r.rule("deny", "file-write-create file-write-unlink", anchors)
		}
		r.line("; At any depth, in a repository or not:")
		for _, g := range hostSettings {
			r.line(";   %s", g.why)
		}
		var hosts []string
		for _, w := range p.Writable {
			for _, g := range hostSettings {
				hosts = append(hosts, "(regex "+quote("^"+regexQuote(w)+g.suffix)+")")
			}
		}
		r.rule("deny", writeOps+" file-link file-clone", hosts)
		r.line("; Nor may a writable folder itself be renamed away and back (or removed and made again):")
		r.line("; a repository at its top would come back with settings written outside these rules.")
		var top []string
		for _, w := range p.Writable {
			top = append(top, "(literal "+r.param("WRITABLE", w)+")")
		}
		r.rule("deny", "file-write-create file-write-unlink", top)
		r.line("")
	}

	r.line("; The home folder: nothing in it, not even a listing or a stat, but the shared folders")
	r.line("; inside it. Every file operation is named, so no allow above (or added later) of one")
	r.line("; of them outranks this deny.")
	home := "(subpath " + r.param("USER_HOME", p.UserHome) + ")"
	var inside []string
	all := r.all()
	for i, d := range all { // in the order of readable()
		if policy.Within(p.UserHome, d) {
			inside = append(inside, "(subpath "+readable[i]+")")
		}
	}
	if len(inside) == 0 {
		r.rule("deny", fileOps+" "+execOps, []string{home})
	} else {
		guard := "(require-all\n    " + home + "\n    (require-not (require-any\n      " + strings.Join(inside, "\n      ") + ")))"
		r.rule("deny", fileOps+" "+execOps, []string{guard})
	}
	r.line("")
	r.line("; The data volume's own path, %s: every file of this Mac that is not on the", policy.DarwinDataVolume)
	r.line("; system volume has a second spelling below it, the home folder's included. Whether")
	r.line("; Seatbelt matches that spelling or the firmlinked one is not documented; denied whole,")
	r.line("; as the home folder is, it is no way around the denies above and below either way.")
	r.rule("deny", fileOps+" "+execOps, []string{"(subpath " + quote(policy.DarwinDataVolume) + ")"})
	r.line("")
	if len(p.Hidden) > 0 {
		r.line("; The files inside toolchains that hold logins (registry tokens) are out of reach.")
		var hidden []string
		for _, d := range p.Hidden {
			hidden = append(hidden, r.param("HIDDEN", d))
		}
		r.rule("deny", fileOps+" "+execOps, subpaths(hidden))
		r.line("")
	}
	var stat []string // narrowed folders, and folders on the way to session folders inside them
	for _, n := range narrowed {
		r.line("; Out of reach: %s, %s.", n.folder, n.why)
		keep, between := r.insideOf(n.folder, readable)
		if len(n.keep) > 0 {
			r.line("; Only what programs read stays readable:")
			for _, k := range n.keep {
				r.line(";   %s: %s", k.filter, k.why)
				keep = append(keep, k.filter)
			}
		}
		if len(keep) > len(n.keep) {
			r.line("; and the session folders the person shares inside it.")
		}
		in := "(subpath " + quote(n.folder) + ")"
		if len(keep) > 0 {
			in = "(require-all\n    " + in + "\n    (require-not (require-any\n      " + strings.Join(keep, "\n      ") + ")))"
		}
		r.rule("deny", fileOps+" "+execOps, []string{in})
		r.line("")
		if n.stat {
			stat = append(stat, "(literal "+quote(n.folder)+")")
		}
		for _, a := range between {
			stat = append(stat, "(literal "+r.param("ANCESTOR", a)+")")
		}
	}

	r.line("; Metadata (not contents) of the folders above those paths and of the /dev, /etc, /tmp,")
	r.line("; /var symlinks, so that paths resolve (realpath, getcwd). The home folder can then be")
	r.line("; stat'ed when a session folder lies in it, never listed; so can the folders narrowed above.")
	meta := r.ancestors()
	for _, s := range systemSymlinks {
		meta = append(meta, "(literal "+quote(s)+")")
	}
	meta = append(meta, stat...)
	meta = append(meta, `(literal "/private/var/db/os_eligibility")`)
	r.rule("allow", "file-read-metadata file-test-existence", meta)
	r.line("")

	r.line("; Devices: the null device and dyld's /dev/dtracehelper (read and write), the zero and")
	r.line("; random sources (read); and the standard streams through /dev/fd, which only duplicate")
	r.line("; descriptors the process already holds.")
	var devs, wdevs []string
	for _, d := range readableDevices {
		devs = append(devs, "(literal "+quote(d)+")")
	}
	for _, d := range writableDevices {
		wdevs = append(wdevs, "(literal "+quote(d)+")")
	}
	r.rule("allow", "file-read*", devs)
	r.rule("allow", "file-write-data", wdevs)
	r.rule("allow", "file-ioctl", devs)
	r.rule("allow", "file-read* file-write-data", standardStreams)
	r.line("")
	r.line("; Probed by nearly every program as it starts; read only:")
	for _, p := range startProbes {
		r.line("; %s", p.why)
		r.rule("allow", p.ops, []string{p.filter})
	}
	r.line("")

	r.line("; Terminals: no opening and no ioctl, not even on an inherited descriptor, so a command")
	r.line("; cannot push keystrokes into a person's shell or read what they type. No pseudo-tty")
	r.line("; either: the runner starts commands without a controlling terminal, and git is told")
	r.line("; not to prompt (GIT_TERMINAL_PROMPT=0).")
	r.rule("deny", readOps+" "+writeOps+" file-ioctl", terminalFilters)
	r.line("")

	r.line("; macOS services, by name. Each one's reason follows it; then those left out, and why.")
	var names []string
	for _, s := range machServices {
		if s.egress && p.Network == policy.None {
			continue
		}
		names = append(names, "(global-name "+quote(s.name)+") ; "+s.why)
	}
	r.ruleCommented("allow", "mach-lookup", names)
	if p.Network == policy.None {
		r.line("; Left out with no network: com.apple.trustd and com.apple.trustd.agent, which fetch")
		r.line("; certificate issuers and revocation lists outside the sandbox on a client's behalf.")
	}
	for _, s := range leftOutServices {
		r.line(";   not %s: %s", s.name, s.why)
	}
	r.line("; Nor IOKit (iokit-open) or pseudo-terminals (pseudo-tty): no rule allows them.")
	// Decided (each stays refused; what a command does without is not reported):
	//   - V8's write of kern.tcsm_enable: sandbox-runtime and fence allow it; V8 reads the
	//     value, tries to set it and goes on without it, and no kernel value but the JVM's
	//     CPU grade is written from a sandbox. Quiet in the profile.
	//   - forbidden-exec-sugid: the kernel refuses every set-user-ID program (ps, sudo, top)
	//     in any sandbox, whatever the profile says, and logs it without the run's marker,
	//     so no report takes it; README's known limits say ps does not run inside.
	//   - ~/.CFUserTextEncoding: refused with the rest of the home folder; with
	//     __CF_USER_TEXT_ENCODING passed in, CoreFoundation has no need of it, and a read
	//     that still comes is left out of the report (IsNoise) and kept in the violations file.
	//   - the OS's eligibility answers (programStart): readable; see its reason there.
	r.line("; Refused without a report: services Foundation-linked programs look up as they start and")
	r.line("; do without, user preferences (user-preference-read; CFFIXED_USER_HOME points Foundation")
	r.line("; at the sandbox home), and V8's write of kern.tcsm_enable (it reads it and goes on; no")
	r.line("; kernel value but the JVM's CPU grade is written from here).")
	var quiet []string
	for _, s := range quietServices {
		quiet = append(quiet, "(global-name "+quote(s.name)+") ; "+s.why)
	}
	r.ruleCommented("deny", "mach-lookup", append(quiet, "(with no-report)"))
	r.quietRule("user-preference-read", nil)
	r.quietRule("sysctl-write", []string{`(sysctl-name "kern.tcsm_enable")`})
	r.line("")

	r.line("; Kernel values runtimes ask about the machine and their own processes.")
	var sysctls []string
	for _, n := range sysctlNames {
		sysctls = append(sysctls, "(sysctl-name "+quote(n)+")")
	}
	for _, n := range sysctlPrefixes {
		sysctls = append(sysctls, "(sysctl-name-prefix "+quote(n.prefix)+") ; "+n.why)
	}
	r.ruleCommented("allow", "sysctl-read", sysctls)
	r.line("; The one kernel value a command may write: the JVM sets its process's CPU grade as it")
	r.line("; starts (codex).")
	r.line(`(allow sysctl-write (sysctl-name "kern.grade_cputype"))`)
	r.line("; Host processor information, which Node's os.cpus() (and so npm, yarn and node-gyp) reads")
	r.line("; through host_processor_info (codex).")
	r.line("(allow mach-host*)")
	r.line("; Named semaphores only under the names runtimes give their own; shared memory only under")
	r.line("; the names OpenMP and Python's shared_memory give it. Other names are the person's other")
	r.line("; programs', which a command could hold or remove.")
	var sems []string
	for _, s := range semaphores {
		sems = append(sems, s.filter+" ; "+s.why)
	}
	r.ruleCommented("allow", "ipc-posix-sem", sems)
	r.rule("allow", "ipc-posix-shm-read-data ipc-posix-shm-read-metadata ipc-posix-shm-write-create ipc-posix-shm-write-data ipc-posix-shm-write-unlink", sharedMemory)
	r.line("; Not SysV IPC (ipc-sysv-*): its keys are one namespace for all of the person's programs (a")
	r.line("; PostgreSQL server's shared memory, another program's semaphores), which no filter splits.")
	r.line("; LMDB (Parcel's cache) and PostgreSQL's initdb fail; the line after such a command says so.")
	r.line("")

	r.line("; Unix sockets: none (not Docker's, not ssh-agent's, not OpenWorker's, not one in a")
	r.line("; writable folder, where a host daemon's socket can lie) but those in the private tmp")
	r.line("; folder, where tsx, vite, esbuild, jest workers, dotnet build, Nx, turbo and Python's")
	r.line("; multiprocessing listen and connect. The runner talks over an inherited socket pair,")
	r.line("; which needs no rule.")
	r.rule("deny", socketOps, []string{`(subpath "/")`})
	if p.PrivateTmp != "" {
		tmp := r.param("PRIVATE_TMP", p.PrivateTmp)
		r.line("(allow system-socket (socket-domain AF_UNIX))")
		r.rule("allow", "network-bind network-inbound", []string{"(local unix-socket (subpath " + tmp + "))"})
		r.rule("allow", "network-outbound", []string{"(remote unix-socket (subpath " + tmp + "))"})
	}
	r.line("")
	switch p.Network {
	case policy.Allowlist:
		r.line("; Network: only the egress proxy, on its loopback port (localhost is 127.0.0.1 and ::1).")
		r.line("; A program that ignores HTTPS_PROXY has no network at all.")
		r.line("(allow network-outbound (remote ip %s))", quote("localhost:"+strconv.Itoa(p.ProxyPort)))
		r.forwards()
	case policy.Open:
		r.line("; Network: open means the internet. Any address and port, outbound only; files stay")
		r.line("; walled. Not this Mac's loopback, where its private services listen (databases without")
		r.line("; passwords, Ollama, Jupyter, Docker's API, a browser's debugging port): Seatbelt names")
		r.line("; loopback as localhost, 127.0.0.1 and ::1; it cannot name the rest of 127.0.0.0/8,")
		r.line("; ::ffff:127.0.0.1 or this Mac's own network addresses, which stay reachable.")
		r.line(`(allow network-outbound (remote ip "*:*"))`)
		r.rule("deny", "network-outbound", []string{`(remote ip "localhost:*")`})
		if p.ProxyPort > 0 {
			r.line("; The egress proxy, on its loopback port.")
			r.line("(allow network-outbound (remote ip %s))", quote("localhost:"+strconv.Itoa(p.ProxyPort)))
		}
		r.forwards()
		r.line("; Names are resolved by mDNSResponder, through its socket: the one Unix socket open")
		r.line("; mode allows.")
		r.line("(allow network-outbound (literal %s))", quote(mdnsResponder))
		r.line("; Tools that resolve names themselves (dig, Go built with netgo, c-ares in Node and curl)")
		r.line("; read the resolver's file; its folder may be stat'ed on the way, not listed.")
		r.rule("allow", "file-read*", []string{`(literal "/private/var/run/resolv.conf")`})
		r.rule("allow", "file-read-metadata", []string{`(literal "/private/var/run")`})
	case policy.None:
		r.line("; Network: none, not even the egress proxy.")
	}
	if p.LocalServers {
		r.line("; Local servers, which the person switched on for this session: a command's servers bind")
		r.line("; on any local address (Node's listen(port), Express, supertest and python3 -m http.server")
		r.line("; bind :: or 0.0.0.0), and take only connections that arrive at loopback (127.0.0.1 and")
		r.line("; ::1); its clients connect to any loopback port. Seatbelt cannot tell the session's own")
		r.line("; ports from those of this Mac's other programs, so those are reachable too. (codex's shape.)")
		r.line(`(allow network-bind (local ip "*:*"))`)
		r.line(`(allow network-inbound (local ip "localhost:*"))`)
		r.line(`(allow network-outbound (remote ip "localhost:*"))`)
	}
	r.line("")

	r.line("; Hard links and clones: Seatbelt checks them as operations of their own, which no read")
	r.line("; or write rule covers; denied by name, so a file the command may not read cannot get a")
	r.line("; second name or a copy in a folder it may.")
	if r.o.LinkChecks != LinkChecksBoth {
		r.line("; Tools copy instead. (Whether Seatbelt checks both ends of one is not proved on this Mac.)")
		r.rule("deny", "file-link file-clone", nil)
		return
	}
	r.links()
}

// links writes the rules of a Mac proved to check both ends of a link or clone: allowed when
// both lie in the writable folders or the private tmp (npm's cache moves entries with link,
// cargo and Rust's fs::copy clone), never onto or from repository metadata, read-only or
// hidden files.
func (r *renderer) links() {
	p := r.p
	r.line("; This Mac checks both ends of each (proved by the link probe), so links and clones whose")
	r.line("; both ends lie in the writable folders or the private tmp are allowed (npm's cache, cargo,")
	r.line("; Rust's fs::copy); none onto or from repository metadata, read-only or hidden files.")
	r.rule("deny", "file-link file-clone", nil)
	var in []string
	for _, w := range p.Writable {
		in = append(in, "(subpath "+r.param("WRITABLE", w)+")")
	}
	if p.PrivateTmp != "" {
		in = append(in, "(subpath "+r.param("PRIVATE_TMP", p.PrivateTmp)+")")
	}
	for _, d := range policy.Sources(p.Caches) {
		in = append(in, "(subpath "+r.param("CACHE", d)+")")
	}
	if len(in) == 0 {
		return
	}
	r.rule("allow", "file-link file-clone", in)
	var out []string
	for _, d := range p.ReadOnly {
		out = append(out, "(subpath "+r.param("READ_ONLY", d)+")")
	}
	for _, d := range policy.Sources(p.HostCaches) {
		out = append(out, "(subpath "+r.param("HOST_CACHE", d)+")")
	}
	for _, d := range p.Hidden {
		out = append(out, "(subpath "+r.param("HIDDEN", d)+")")
	}
	if !p.GitMetadataWritable {
		for _, w := range p.Writable {
			out = append(out, "(literal "+r.param("WRITABLE", w)+")")
			for _, g := range hostSettings {
				out = append(out, "(regex "+quote("^"+regexQuote(w)+g.suffix)+")")
			}
		}
		for _, pr := range p.Protected {
			out = append(out, r.caseless(pr.Path, pr.Dir && !pr.Anchor))
		}
	}
	if len(out) > 0 {
		r.rule("deny", "file-link file-clone", out)
	}
}

// forwards writes the loopback entries the person allowed: reachable directly, by programs
// that never use a proxy for loopback. Seatbelt names loopback only as localhost, both
// 127.0.0.1 and ::1, so an entry opens its port at both; an entry at another address cannot
// be named and is left out.
func (r *renderer) forwards() {
	var ports []int
	for _, f := range r.p.Forwards {
		a := f.Addr().Unmap()
		if a != netip.IPv6Loopback() && a != netip.AddrFrom4([4]byte{127, 0, 0, 1}) || f.Port() == 0 {
			continue
		}
		if port := int(f.Port()); port != r.p.ProxyPort && !slices.Contains(ports, port) {
			ports = append(ports, port)
		}
	}
	if len(ports) == 0 {
		return
	}
	r.line("; The loopback services the person allowed.")
	var ips []string
	for _, port := range ports {
		ips = append(ips, "(remote ip "+quote("localhost:"+strconv.Itoa(port))+")")
	}
	r.rule("allow", "network-outbound", ips)
}

// regexQuote quotes s for a regular expression of the profile: a backslash before each
// character that POSIX extended expressions (Seatbelt's) and Go's both read as an operator,
// so that s matches only itself. ']' and '}' are plain characters in both outside a bracket
// or a bound, and every other byte, newline and UTF-8 included, stands for itself.
func regexQuote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`.[\()*+?{|^$`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// insideOf returns, as (subpath ...) filters, the session's folders (not system paths) that
// are dir or lie inside it, with the folders between dir and each of them.
func (r *renderer) insideOf(dir string, readable []string) (inside, between []string) {
	p := r.p
	all := r.all()
	for i, d := range all { // in the order of readable()
		if i < len(p.System) || !policy.Within(dir, d) {
			continue
		}
		inside = append(inside, "(subpath "+readable[i]+")")
		for a := path.Dir(d); policy.Within(dir, a) && a != d; a = path.Dir(a) {
			if !slices.Contains(between, a) {
				between = append(between, a)
			}
		}
	}
	slices.Sort(between)
	return inside, between
}

// ruleCommented is rule with a trailing comment on each filter line.
func (r *renderer) ruleCommented(action, ops string, filters []string) {
	r.line("(%s %s", action, ops)
	for i, f := range filters {
		if i == len(filters)-1 {
			// The closing parenthesis goes before the comment, or the comment would eat it.
			if code, comment, ok := strings.Cut(f, " ; "); ok {
				r.line("  %s) ; %s", code, comment)
			} else {
				r.line("  %s)", f)
			}
			continue
		}
		r.line("  %s", f)
	}
}
