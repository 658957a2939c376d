package sbpl

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Action is what a rule does when it matches.
type Action string

const (
	Allow Action = "allow"
	Deny  Action = "deny"
)

// Query is one operation on one target, as the kernel would check it.
type Query struct {
	// Op is a concrete operation: file-read-data, network-outbound, mach-lookup, ...
	Op string
	// Path is the resolved path of a file operation, the binary of process-exec, or the
	// socket file of a Unix-socket connection or bind.
	Path string
	// Addr is "host:port" (IPv6 as "[::1]:port") of an IP connection (network-outbound, the
	// remote address) or of a bind (network-bind, the local address).
	Addr string
	// Name is the service of mach-lookup, the sysctl of sysctl-read or sysctl-write, the name
	// of a POSIX semaphore or shared-memory object (ipc-posix-*), or the address family of
	// system-socket (AF_UNIX).
	Name string
	// SameSandbox says whether the target process of signal or process-info* runs under the
	// same sandbox.
	SameSandbox bool
}

func (q Query) String() string {
	switch {
	case q.Path != "":
		return q.Op + " " + q.Path
	case q.Addr != "":
		return q.Op + " " + q.Addr
	case q.Name != "":
		return q.Op + " " + q.Name
	case q.SameSandbox:
		return q.Op + " (same sandbox)"
	}
	return q.Op + " (other process)"
}

// Decision is the evaluator's answer to a Query.
type Decision struct {
	Allowed bool
	// Rule is the index of the deciding rule in Profile.Rules.
	Rule int
	// Message is the rule's `(with message ...)`, empty when it has none.
	Message string
	// Quiet says the deciding rule is a deny `(with no-report)`: the kernel refuses without
	// logging, so the refusal never reaches a command's report.
	Quiet bool
}

// Rule is one `(allow ...)` or `(deny ...)` of a profile.
type Rule struct {
	Action  Action
	Ops     []string
	filters []filter // any one matching makes the rule match; none means always
	Message string
	Quiet   bool   // (with no-report)
	Source  string // the rule as parsed, params bound
}

// Profile is a parsed, parameter-bound profile.
type Profile struct {
	Rules []Rule
}

// Precedence is how rules that all match one operation are ranked.
type Precedence int

const (
	// Specific is Seatbelt's: a rule naming the operation itself outranks one that names only
	// a wildcard parent of it (file-read-data over file-read*, file-read* over file*), which
	// outranks default; among rules of the same rank the last in the profile decides. See
	// testdata/SEMANTICS.md for the evidence.
	Specific Precedence = iota
	// LastMatch is the plain reading "the last matching rule decides", whatever operation name
	// it matched by. Seatbelt does not follow it; tests evaluate a profile under both to show
	// that its decisions do not rest on which reading is right.
	LastMatch
)

// knownOps are the operations this evaluator accepts in a profile. The list is the part of
// Seatbelt's operation table that OpenWorker's and its peers' profiles use; an operation
// outside it is almost certainly a typo, which the real compiler would reject.
var knownOps = []string{
	"default",
	"file*", "file-read*", "file-read-data", "file-read-metadata", "file-read-xattr",
	"file-write*", "file-write-create", "file-write-data", "file-write-unlink", "file-write-mode",
	"file-write-owner", "file-write-times", "file-write-xattr", "file-write-flags",
	"file-write-setugid", "file-write-acl", "file-link", "file-clone", "file-ioctl",
	"file-test-existence", "file-map-executable", "file-revoke",
	"network*", "network-outbound", "network-inbound", "network-bind",
	"mach*", "mach-lookup", "mach-register", "mach-host*",
	"process*", "process-exec", "process-exec*", "process-exec-interpreter", "process-fork",
	"process-info*", "process-info-pidinfo", "process-info-listpids", "process-info-setcontrol",
	"process-info-dirtycontrol", "process-info-rusage", "process-info-codesignature",
	"signal",
	"sysctl*", "sysctl-read", "sysctl-write",
	"ipc-posix-sem", "ipc-posix-shm*", "ipc-posix-shm-read*", "ipc-posix-shm-read-data",
	"ipc-posix-shm-read-metadata", "ipc-posix-shm-write*", "ipc-posix-shm-write-create",
	"ipc-posix-shm-write-data", "ipc-posix-shm-write-unlink",
	"ipc-sysv*", "ipc-sysv-msg", "ipc-sysv-sem", "ipc-sysv-shm",
	"mach-host-exception-port-set", "mach-host-special-port-set",
	"iokit-open", "pseudo-tty", "user-preference-read", "system-socket",
}

// Concrete returns the operations of the evaluator's table that op covers (op itself when it
// is concrete), in the table's order. A deny that must outrank every allow of those
// operations names them all.
func Concrete(op string) []string {
	var out []string
	for _, o := range knownOps {
		if o != "default" && !strings.HasSuffix(o, "*") && opMatches(op, o) {
			out = append(out, o)
		}
	}
	return out
}

// IsWildcard reports whether a rule's operation is default or ends in `*`.
func IsWildcard(op string) bool { return op == "default" || strings.HasSuffix(op, "*") }

// rank is how specifically ruleOp names op, which it covers: the operation itself ranks
// highest, a wildcard by the length of the prefix it names (file-read* above file*), default
// lowest.
func rank(ruleOp, op string) int {
	switch {
	case ruleOp == op:
		return len(op) + 1
	case ruleOp == "default":
		return 0
	}
	return len(ruleOp) - 1
}

// opMatches reports whether a rule's operation covers the concrete operation op. `default`
// covers every operation; `X*` covers every operation whose name starts with X.
func opMatches(ruleOp, op string) bool {
	if ruleOp == "default" || ruleOp == op {
		return true
	}
	if prefix, ok := strings.CutSuffix(ruleOp, "*"); ok {
		return strings.HasPrefix(op, prefix)
	}
	return false
}

// Parse parses src and binds params, as `sandbox-exec -p src -D NAME=VALUE ...` would.
func Parse(src string, params map[string]string) (*Profile, error) {
	nodes, err := parseSexprs(src)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 || nodes[0].String() != "(version 1)" {
		return nil, fmt.Errorf("sbpl: a profile starts with (version 1)")
	}
	c := compiler{params: params}
	p := &Profile{}
	hasDefault := false
	for _, n := range nodes[1:] {
		r, err := c.rule(n)
		if err != nil {
			return nil, err
		}
		if slices.Contains(r.Ops, "default") {
			hasDefault = true
		}
		p.Rules = append(p.Rules, r)
	}
	if !hasDefault {
		return nil, fmt.Errorf("sbpl: the profile sets no default; say (deny default) first")
	}
	return p, nil
}

// Eval answers q as Seatbelt would (Specific precedence).
func (p *Profile) Eval(q Query) (Decision, error) { return p.EvalAs(q, Specific) }

// EvalAs answers q under the given precedence: of the rules that name q.Op (directly, by a
// wildcard or as default) and whose filters match, the highest-ranked decides, and among
// those the last.
func (p *Profile) EvalAs(q Query, prec Precedence) (Decision, error) {
	if !slices.Contains(knownOps, q.Op) || IsWildcard(q.Op) {
		return Decision{}, fmt.Errorf("sbpl: %q is not a concrete operation", q.Op)
	}
	best, bestRank := -1, -1
	for i := len(p.Rules) - 1; i >= 0; i-- {
		r := p.Rules[i]
		rk := -1
		for _, o := range r.Ops {
			if opMatches(o, q.Op) {
				rk = max(rk, rank(o, q.Op))
			}
		}
		if rk < 0 {
			continue
		}
		if prec == LastMatch {
			rk = 0
		}
		if rk <= bestRank {
			continue // a later rule of at least this rank already decides
		}
		ok, err := anyMatch(r.filters, q)
		if err != nil {
			return Decision{}, fmt.Errorf("sbpl: rule %s: %w", r.Source, err)
		}
		if ok {
			best, bestRank = i, rk
		}
	}
	if best < 0 {
		// Parse refuses a profile without a default, so some rule always matches.
		return Decision{}, fmt.Errorf("sbpl: no rule decides %s", q)
	}
	r := p.Rules[best]
	return Decision{Allowed: r.Action == Allow, Rule: best, Message: r.Message, Quiet: r.Action == Deny && r.Quiet}, nil
}

// Shape is the profile's structure with every string value left out: the actions, operations,
// filter kinds and modifiers of each rule, in order. Two profiles of the same shape differ only
// in the paths and names they mention, never in what kinds of rules they have.
func (p *Profile) Shape() string {
	var b strings.Builder
	for _, r := range p.Rules {
		fmt.Fprintf(&b, "(%s %s", r.Action, strings.Join(r.Ops, " "))
		for _, f := range r.filters {
			b.WriteString(" " + f.shape())
		}
		if r.Message != "" {
			b.WriteString(" (with message)")
		}
		if r.Quiet {
			b.WriteString(" (with no-report)")
		}
		b.WriteString(")\n")
	}
	return b.String()
}

func anyMatch(fs []filter, q Query) (bool, error) {
	if len(fs) == 0 {
		return true, nil
	}
	for _, f := range fs {
		ok, err := f.match(q)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

type compiler struct {
	params map[string]string
}

func (c *compiler) rule(n node) (Rule, error) {
	if n.kind != kindList || len(n.list) < 2 || n.list[0].kind != kindSymbol {
		return Rule{}, fmt.Errorf("sbpl: %s is not a rule", n)
	}
	r := Rule{Action: Action(n.list[0].text)}
	if r.Action != Allow && r.Action != Deny {
		return Rule{}, fmt.Errorf("sbpl: %s: only allow and deny rules are supported", n)
	}
	args := n.list[1:]
	for len(args) > 0 && args[0].kind == kindSymbol {
		op := args[0].text
		if !slices.Contains(knownOps, op) {
			return Rule{}, fmt.Errorf("sbpl: %s: unknown operation %q", n, op)
		}
		r.Ops = append(r.Ops, op)
		args = args[1:]
	}
	if len(r.Ops) == 0 {
		return Rule{}, fmt.Errorf("sbpl: %s: a rule names at least one operation", n)
	}
	var bound []string
	for _, a := range args {
		if a.kind == kindList && len(a.list) > 0 && a.list[0].kind == kindSymbol && a.list[0].text == "with" {
			msg, quiet, err := c.modifier(a)
			if err != nil {
				return Rule{}, err
			}
			if msg != "" {
				r.Message = msg
			}
			r.Quiet = r.Quiet || quiet
			bound = append(bound, a.String())
			continue
		}
		f, err := c.filter(a)
		if err != nil {
			return Rule{}, fmt.Errorf("sbpl: %s: %w", n, err)
		}
		r.filters = append(r.filters, f)
		bound = append(bound, f.String())
	}
	r.Source = "(" + string(r.Action) + " " + strings.Join(r.Ops, " ")
	if len(bound) > 0 {
		r.Source += " " + strings.Join(bound, " ")
	}
	r.Source += ")"
	return r, nil
}

// modifier reads `(with message "...")`, `(with report)`, `(with no-log)` or
// `(with no-report)`; quiet says the last, which keeps a deny out of the log.
func (c *compiler) modifier(n node) (msg string, quiet bool, err error) {
	if len(n.list) >= 2 && n.list[1].kind == kindSymbol {
		switch n.list[1].text {
		case "message":
			if len(n.list) == 3 {
				s, err := c.str(n.list[2])
				return s, false, err
			}
		case "no-sandbox":
			// process-exec (with no-sandbox) starts a program outside every sandbox.
			return "", false, fmt.Errorf("sbpl: %s runs a program outside the sandbox; a profile of OpenWorker's never uses it", n)
		case "report", "no-log", "no-report":
			if len(n.list) == 2 {
				return "", n.list[1].text == "no-report", nil
			}
		}
	}
	return "", false, fmt.Errorf("sbpl: unknown modifier %s", n)
}

// str returns a string argument: a literal, or a bound `(param "NAME")`.
func (c *compiler) str(n node) (string, error) {
	switch {
	case n.kind == kindString:
		return n.text, nil
	case n.kind == kindList && len(n.list) == 2 && n.list[0].kind == kindSymbol && n.list[0].text == "param" && n.list[1].kind == kindString:
		v, ok := c.params[n.list[1].text]
		if !ok {
			return "", fmt.Errorf("parameter %q is not bound; pass -D %s=VALUE", n.list[1].text, n.list[1].text)
		}
		return v, nil
	}
	return "", fmt.Errorf("%s is not a string or (param \"NAME\")", n)
}

func (c *compiler) filter(n node) (filter, error) {
	if n.kind != kindList || len(n.list) == 0 || n.list[0].kind != kindSymbol {
		return nil, fmt.Errorf("%s is not a filter", n)
	}
	name, args := n.list[0].text, n.list[1:]
	one := func() (string, error) {
		if len(args) != 1 {
			return "", fmt.Errorf("(%s ...) takes one argument", name)
		}
		return c.str(args[0])
	}
	switch name {
	case "literal", "path", "subpath", "prefix":
		v, err := one()
		if err != nil {
			return nil, err
		}
		if name == "path" {
			name = "literal"
		}
		if !strings.HasPrefix(v, "/") {
			return nil, fmt.Errorf("(%s %q): a path filter needs an absolute path", name, v)
		}
		return pathFilter{kind: name, value: v}, nil
	case "regex":
		if len(args) != 1 {
			return nil, fmt.Errorf("(regex ...) takes one argument")
		}
		var src string
		if args[0].kind == kindRegex {
			src = args[0].text
		} else {
			s, err := c.str(args[0])
			if err != nil {
				return nil, err
			}
			src = s
		}
		re, err := regexp.Compile(src)
		if err != nil {
			return nil, fmt.Errorf("(regex %q): %w", src, err)
		}
		return regexFilter{re: re}, nil
	case "require-all", "require-any":
		g := group{all: name == "require-all"}
		for _, a := range args {
			f, err := c.filter(a)
			if err != nil {
				return nil, err
			}
			g.filters = append(g.filters, f)
		}
		return g, nil
	case "require-not":
		if len(args) != 1 {
			return nil, fmt.Errorf("(require-not ...) takes one filter")
		}
		f, err := c.filter(args[0])
		if err != nil {
			return nil, err
		}
		return not{f}, nil
	case "remote", "local":
		return c.socketFilter(name, args)
	case "ipc-posix-name-regex":
		if len(args) != 1 || args[0].kind != kindRegex {
			return nil, fmt.Errorf("(ipc-posix-name-regex #\"...\") takes one regular expression")
		}
		re, err := regexp.Compile(args[0].text)
		if err != nil {
			return nil, fmt.Errorf("(ipc-posix-name-regex %q): %w", args[0].text, err)
		}
		return ipcRegexFilter{re: re}, nil
	case "global-name", "local-name", "sysctl-name", "sysctl-name-prefix", "ipc-posix-name", "ipc-posix-name-prefix":
		v, err := one()
		if err != nil {
			return nil, err
		}
		return nameFilter{kind: name, value: v}, nil
	case "socket-domain":
		if len(args) != 1 || args[0].kind != kindSymbol || !strings.HasPrefix(args[0].text, "AF_") {
			return nil, fmt.Errorf("%s: (socket-domain AF_NAME) takes one address family", n)
		}
		return domainFilter{domain: args[0].text}, nil
	case "target":
		if len(args) != 1 || args[0].kind != kindSymbol || args[0].text != "same-sandbox" {
			return nil, fmt.Errorf("%s: only (target same-sandbox) is supported", n)
		}
		return targetFilter{}, nil
	}
	return nil, fmt.Errorf("unknown filter %s", n)
}

// socketFilter reads (remote ip|tcp|udp "HOST:PORT"), (local ip ...) and
// (remote unix-socket (path-literal "/path")).
func (c *compiler) socketFilter(side string, args []node) (filter, error) {
	if len(args) != 2 || args[0].kind != kindSymbol {
		return nil, fmt.Errorf("(%s ...) takes a kind and an address", side)
	}
	switch kind := args[0].text; kind {
	case "ip", "tcp", "udp":
		v, err := c.str(args[1])
		if err != nil {
			return nil, err
		}
		host, port, ok := strings.Cut(v, ":")
		if !ok {
			return nil, fmt.Errorf("(%s %s %q): an address is HOST:PORT", side, kind, v)
		}
		// The compiler takes only `*` and `localhost` as hosts: a profile cannot name an
		// address.
		if host != "*" && host != "localhost" {
			return nil, fmt.Errorf("(%s %s %q): the host must be * or localhost", side, kind, v)
		}
		if port != "*" {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("(%s %s %q): the port must be * or 1-65535", side, kind, v)
			}
		}
		return ipFilter{side: side, kind: kind, host: host, port: port}, nil
	case "unix-socket":
		// (path-literal P) as codex writes a socket's own path; (literal P) and (subpath P) as
		// codex, fence and agent-safehouse write a socket's file or the folder it lies in.
		a := args[1]
		if a.kind != kindList || len(a.list) != 2 || a.list[0].kind != kindSymbol {
			return nil, fmt.Errorf("(%s unix-socket ...) takes (path-literal \"/path\"), (literal ...) or (subpath ...)", side)
		}
		kind := a.list[0].text
		switch kind {
		case "path-literal", "literal":
			kind = "literal"
		case "subpath":
		default:
			return nil, fmt.Errorf("(%s unix-socket (%s ...)) is not supported", side, kind)
		}
		v, err := c.str(a.list[1])
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(v, "/") {
			return nil, fmt.Errorf("(%s unix-socket (%s %q)): a socket's path is absolute", side, kind, v)
		}
		return unixFilter{side: side, path: pathFilter{kind: kind, value: v}}, nil
	}
	return nil, fmt.Errorf("(%s %s ...) is not supported", side, args[0].text)
}

type filter interface {
	match(Query) (bool, error)
	String() string
	shape() string
}

type pathFilter struct{ kind, value string }

func (f pathFilter) String() string { return fmt.Sprintf("(%s %q)", f.kind, f.value) }
func (f pathFilter) shape() string  { return "(" + f.kind + ")" }

func (f pathFilter) match(q Query) (bool, error) {
	// Path filters match files and Unix sockets; an IP connection has no path.
	if q.Path == "" {
		return false, nil
	}
	switch f.kind {
	case "literal":
		return q.Path == f.value, nil
	case "prefix":
		return strings.HasPrefix(q.Path, f.value), nil
	default: // subpath: the folder itself and everything below it, on a component boundary
		dir := strings.TrimRight(f.value, "/")
		if dir == "" {
			return strings.HasPrefix(q.Path, "/"), nil
		}
		return q.Path == dir || strings.HasPrefix(q.Path, dir+"/"), nil
	}
}

type regexFilter struct{ re *regexp.Regexp }

func (f regexFilter) String() string { return fmt.Sprintf("(regex #%q)", f.re.String()) }
func (f regexFilter) shape() string  { return "(regex)" }
func (f regexFilter) match(q Query) (bool, error) {
	return q.Path != "" && f.re.MatchString(q.Path), nil
}

type group struct {
	all     bool
	filters []filter
}

func (g group) word() string {
	if g.all {
		return "require-all"
	}
	return "require-any"
}

func (g group) String() string {
	parts := []string{g.word()}
	for _, f := range g.filters {
		parts = append(parts, f.String())
	}
	return "(" + strings.Join(parts, " ") + ")"
}

func (g group) shape() string {
	parts := []string{g.word()}
	for _, f := range g.filters {
		parts = append(parts, f.shape())
	}
	return "(" + strings.Join(parts, " ") + ")"
}

func (g group) match(q Query) (bool, error) {
	for _, f := range g.filters {
		ok, err := f.match(q)
		if err != nil {
			return false, err
		}
		if g.all && !ok {
			return false, nil
		}
		if !g.all && ok {
			return true, nil
		}
	}
	return g.all, nil
}

type not struct{ f filter }

func (n not) String() string { return "(require-not " + n.f.String() + ")" }
func (n not) shape() string  { return "(require-not " + n.f.shape() + ")" }
func (n not) match(q Query) (bool, error) {
	ok, err := n.f.match(q)
	return !ok, err
}

// unixFilter is (local unix-socket ...) or (remote unix-socket ...): the socket file a
// bind or inbound connection is on (local) or an outbound connection goes to (remote).
type unixFilter struct {
	side string
	path pathFilter
}

func (f unixFilter) String() string {
	return fmt.Sprintf("(%s unix-socket %s)", f.side, f.path)
}
func (f unixFilter) shape() string { return "(" + f.side + " unix-socket " + f.path.shape() + ")" }

func (f unixFilter) match(q Query) (bool, error) {
	switch {
	case f.side == "local" && (q.Op == "network-bind" || q.Op == "network-inbound"),
		f.side == "remote" && q.Op == "network-outbound":
		return f.path.match(q)
	}
	return false, nil
}

// domainFilter is (socket-domain AF_NAME) of system-socket: the address family of a socket
// being created, given as the query's Name.
type domainFilter struct{ domain string }

func (f domainFilter) String() string { return "(socket-domain " + f.domain + ")" }
func (f domainFilter) shape() string  { return "(socket-domain)" }
func (f domainFilter) match(q Query) (bool, error) {
	return q.Op == "system-socket" && q.Name == f.domain, nil
}

type ipFilter struct{ side, kind, host, port string }

func (f ipFilter) String() string {
	return fmt.Sprintf("(%s %s %q)", f.side, f.kind, f.host+":"+f.port)
}
func (f ipFilter) shape() string { return "(" + f.side + " " + f.kind + ")" }

func (f ipFilter) match(q Query) (bool, error) {
	if q.Addr == "" {
		return false, nil // a Unix socket or a file: not an IP address
	}
	ap, err := netip.ParseAddrPort(q.Addr)
	if err != nil {
		return false, fmt.Errorf("query address %q: %w", q.Addr, err)
	}
	switch {
	case q.Op == "network-outbound" && f.side == "local":
		// An outbound socket is checked before it is bound, when its local address is the
		// any-address; a `local` filter then matches every connection.
		return true, nil
	case q.Op == "network-outbound" && f.side == "remote", q.Op == "network-bind" && f.side == "local",
		q.Op == "network-inbound" && f.side == "local":
	default:
		return false, nil
	}
	if f.port != "*" && strconv.Itoa(int(ap.Port())) != f.port {
		return false, nil
	}
	if f.host == "*" {
		return true, nil
	}
	// localhost is 127.0.0.1 and ::1 only: not the rest of 127/8, and not ::ffff:127.0.0.1.
	a := ap.Addr()
	return a == netip.MustParseAddr("127.0.0.1") || a == netip.IPv6Loopback(), nil
}

type nameFilter struct{ kind, value string }

func (f nameFilter) String() string { return fmt.Sprintf("(%s %q)", f.kind, f.value) }
func (f nameFilter) shape() string  { return "(" + f.kind + ")" }

func (f nameFilter) match(q Query) (bool, error) {
	switch f.kind {
	case "global-name", "local-name":
		return q.Op == "mach-lookup" && q.Name == f.value, nil
	case "sysctl-name":
		return strings.HasPrefix(q.Op, "sysctl") && q.Name == f.value, nil
	case "ipc-posix-name":
		return strings.HasPrefix(q.Op, "ipc-posix") && q.Name == f.value, nil
	case "ipc-posix-name-prefix":
		return strings.HasPrefix(q.Op, "ipc-posix") && q.Name != "" && strings.HasPrefix(q.Name, f.value), nil
	default: // sysctl-name-prefix
		return strings.HasPrefix(q.Op, "sysctl") && q.Name != "" && strings.HasPrefix(q.Name, f.value), nil
	}
}

// ipcRegexFilter is (ipc-posix-name-regex #"..."): the name of a POSIX semaphore or
// shared-memory object.
type ipcRegexFilter struct{ re *regexp.Regexp }

func (f ipcRegexFilter) String() string {
	return fmt.Sprintf("(ipc-posix-name-regex #%q)", f.re.String())
}
func (f ipcRegexFilter) shape() string { return "(ipc-posix-name-regex)" }
func (f ipcRegexFilter) match(q Query) (bool, error) {
	return strings.HasPrefix(q.Op, "ipc-posix") && q.Name != "" && f.re.MatchString(q.Name), nil
}

type targetFilter struct{}

func (targetFilter) String() string { return "(target same-sandbox)" }
func (targetFilter) shape() string  { return "(target)" }
func (targetFilter) match(q Query) (bool, error) {
	return (q.Op == "signal" || strings.HasPrefix(q.Op, "process-info")) && q.SameSandbox, nil
}
