package session

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/dnsstub"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/termtext"
)

// Hints are lines the core adds to a command's error output about what the wall changed for
// it: said once a session, where it can tell, so that a person (or an agent) knows what to
// switch on instead of guessing.

// hints is what a session has to say, and what it has said.
type hints struct {
	// pending are said with the next command's result, then dropped.
	pending []string
	// dropped are the host's PATH entries that do not exist inside.
	dropped []string
	// kept are the PATH entries the sandbox has; order is the host's whole PATH.
	kept, order []string
	pathSaid    bool
	firstDone   bool
	gitSaid     bool
	// linksRefused says the wall refuses every hard link and clone (sandbox.LinkRefuser).
	linksRefused bool
	// enforcement is the session's wall; allowlist says the network is the proxy's alone.
	// toolSaid are the tool hints said (toolHints), by name.
	enforcement sandbox.Enforcement
	allowlist   bool
	toolSaid    map[string]bool
	// noRoute is the sandbox's count of direct attempts before the running command.
	noRoute    uint64
	noRouteSet bool
	// refused is the sandbox's count of refused loopback connections before the command.
	refused    uint64
	refusedSet bool
	// stderr is the end of the first command's streamed error output.
	stderr []byte
	stdout []byte // the same of standard output
	// nextCounts, when set, brings the counts the next command is compared with, read
	// after the last one succeeded: off the next command's way (see countDirect).
	nextCounts chan counts
	// oneShot says the session runs one command (openworker run): no counts are read for
	// a next one.
	oneShot bool
}

// counts are the sandbox's counts of direct attempts and of refused loopback connections,
// read at one moment; the Set fields say which could be read.
type counts struct {
	noRoute, refused       uint64
	noRouteSet, refusedSet bool
	// of is the sandbox they were read from.
	of sandbox.Process
}

// stderrTail bounds what is kept of the first command's streamed error output.
const stderrTail = 4 << 10

// tail passes chunks on to onChunk and keeps the end of the error output.
func (h *hints) tail(onChunk func(string, []byte)) func(string, []byte) {
	return func(stream string, data []byte) {
		switch stream {
		case "stderr":
			h.stderr = append(h.stderr, data...)
			if over := len(h.stderr) - stderrTail; over > 0 {
				h.stderr = append(h.stderr[:0], h.stderr[over:]...)
			}
		case "stdout":
			// git says on standard output which upstream it set up (see carryUpstreams).
			h.stdout = append(h.stdout, data...)
			if over := len(h.stdout) - stderrTail; over > 0 {
				h.stdout = append(h.stdout[:0], h.stdout[over:]...)
			}
		}
		onChunk(stream, data)
	}
}

// sayOnce queues a line for the next command's result.
func (h *hints) sayOnce(line string) { h.pending = append(h.pending, line) }

// notFound finds the names a shell said it could not find: bash's "x: command not found",
// dash's "sh: 1: x: not found", the runner's own "x: command not found in PATH".
// The hints' patterns are compiled on first use, not at start: every process of the CLI
// links this package, and `session exec`, run per command, never needs them.
var notFound = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)(?:^|: )([^\s:/'"]+): (?:command )?not found`) })

// pathHint is what the session says about a command that the host's PATH would have run
// from a folder that is not inside: it was not found, or another program of the same name
// ran. Only the session's first command is looked at.
func (h *hints) pathHint(a *runner.ExecArgs, res *runner.Result, userHome, goos string) string {
	if h.pathSaid || h.firstDone || len(h.dropped) == 0 || a == nil || res == nil {
		return ""
	}
	var names []string
	if res.ExitCode == 127 {
		// A streamed command's result may keep only part of its output.
		stderr := res.Stderr
		if len(h.stderr) > 0 {
			stderr = h.stderr
		}
		for _, m := range notFound().FindAllSubmatch(stderr, 8) {
			names = append(names, string(m[1]))
		}
	}
	first := ""
	if len(a.Argv) > 0 {
		first = a.Argv[0]
	} else if f := strings.Fields(a.Command); len(f) > 0 {
		first = f[0]
	}
	if first != "" && !strings.Contains(first, "/") && !slices.Contains(names, first) {
		names = append(names, first)
	}
	for _, name := range names {
		outside := lookIn(h.dropped, name)
		if outside == "" {
			continue
		}
		// Which the host's PATH finds first: a dropped folder before every kept one that
		// has it means a different program runs inside, or none.
		inside := lookIn(h.kept, name)
		if inside != "" && slices.Index(h.order, filepath.Dir(outside)) > slices.Index(h.order, filepath.Dir(inside)) {
			continue
		}
		h.pathSaid = true
		what := name + " was not found inside the sandbox"
		if inside != "" {
			what = name + " inside the sandbox is " + inside
		}
		return fmt.Sprintf("openworker: %s; outside it, PATH finds %s first, in %s, which is not inside: %s\n",
			what, outside, filepath.Dir(outside), ToolchainAdvice(filepath.Dir(outside), userHome, goos))
	}
	return ""
}

// settingsWhere says where a person changes a setting on goos: in the app's Settings ▸
// Sandbox on a Mac, in the settings file on Linux, which has no app.
func settingsWhere(goos string) string {
	if goos == "darwin" {
		return "(Settings ▸ Sandbox)"
	}
	return "file (openworker config path says where)"
}

// ToolchainAdvice says how a person makes dir, a folder a program was found in outside,
// readable inside on goos: a toolchain of the list switched on, or a folder of their own under
// userHome added, in Settings ▸ Sandbox on a Mac and in sandbox_toolchains of the settings
// file on Linux, which has no such screen.
func ToolchainAdvice(dir, userHome, goos string) string {
	where := `to sandbox_toolchains in the settings file (openworker config path says where)`
	if goos == "darwin" {
		where = "in Settings ▸ Sandbox ▸ Developer toolchains (or to sandbox_toolchains in config.toml)"
	}
	for _, t := range config.KnownToolchains() {
		if policy.Within(filepath.Join(userHome, t), dir) {
			if goos == "darwin" {
				return fmt.Sprintf("switch on the toolchain %s %s", t, where)
			}
			return fmt.Sprintf("switch on the toolchain %s: add %q %s", t, t, where)
		}
	}
	if policy.Within(userHome, dir) {
		rel, _ := filepath.Rel(userHome, dir)
		return fmt.Sprintf("add the folder %s %s", rel, where)
	}
	return "share that folder with --ro, or add it to the toolchains (sandbox_toolchains in the settings file)"
}

// lookIn is the first executable named name in dirs, or "".
func lookIn(dirs []string, name string) string {
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// gitMetadataRefused finds git's complaints when it could not write a repository's settings
// or hooks, which the wall keeps read-only: a settings file is bound over itself, so git's
// rename of its lock file onto it fails ("Device or resource busy"), and a hooks folder is
// a read-only mount.
var gitMetadataRefused = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`could not (?:write|lock|commit) config file \S*\.git\S*|\.git/(?:\S*/)?hooks/\S*: Read-only file system|\.git/(?:\S*/)?(?:config|hooks)\S*: (?:Device or resource busy|Read-only file system)`)
})

// gitMetadataHint says, once a session, that git failed because repository metadata is
// read-only inside, and which setting allows it. guarded says the session keeps it so.
func (h *hints) gitMetadataHint(res *runner.Result, guarded bool, goos string, carried ...string) string {
	if !guarded || res == nil {
		return ""
	}
	stderr := res.Stderr
	if len(h.stderr) > 0 {
		stderr = h.stderr
	}
	if !gitMetadataRefused().Match(stderr) {
		return ""
	}
	// What git did not record, where its words say (each time, whatever its status: git
	// push -u says it set up tracking and exits 0).
	stdout := res.Stdout
	if len(h.stdout) > 0 {
		stdout = h.stdout
	}
	lines := carried
	for _, m := range upstreamSet().FindAllSubmatch(append(stdout[:len(stdout):len(stdout)], stderr...), -1) {
		if len(carried) > 0 {
			break // OpenWorker set them (carryUpstreams), or said why not
		}
		branch, upstream := string(m[1]), string(m[2])
		lines = append(lines, fmt.Sprintf("openworker: git could not record branch.%s.remote and branch.%s.merge in .git/config, which is read-only here: "+
			"%s's upstream is not set, whatever git said; set it outside the sandbox (git branch --set-upstream-to=%s %s)\n",
			termtext.Escape(branch), termtext.Escape(branch), termtext.Escape(branch), termtext.Escape(upstream), termtext.Escape(branch)))
	}
	for _, m := range keyNotSet().FindAllSubmatch(stderr, -1) {
		lines = append(lines, fmt.Sprintf("openworker: git could not record %s in .git/config, which is read-only here: it is not set\n", termtext.Escape(string(m[1]))))
	}
	if len(lines) == 0 && res.ExitCode == 0 {
		lines = append(lines, "openworker: git could not write a repository's .git/config or hooks, which are read-only here: what it wrote there is not set, whatever git said\n")
	}
	if !h.gitSaid {
		h.gitSaid = true
		lines = append(lines, "openworker: each repository's .git/config and .git/hooks are read-only in this sandbox (sandbox_git_metadata = \"protected\"): "+
			"the person's own git runs and obeys them outside it. A person may allow writing them for one session with --git-metadata writable, "+
			"or for all with sandbox_git_metadata = \"writable\" in the settings "+settingsWhere(goos)+", which lets a command plant what git runs outside the sandbox\n")
	}
	return strings.Join(lines, "")
}

// upstreamSet finds git's "branch 'X' set up to track 'R/Y'." (push -u, branch -u, checkout
// -b X R/Y, switch), which it says even when its config write failed.
var upstreamSet = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)branch '([^'\n]+)' set up to track '([^'\n]+)'`)
})

// keyNotSet finds git's "could not set 'KEY' to 'VALUE'" (git config, remote add).
var keyNotSet = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`could not set '([a-zA-Z0-9._-]+)' to`)
})

// linkRefused finds a tool's words when a hard link or a clone it made was refused: cargo's
// "failed to link or copy", Node's "operation not permitted, link|copyfile" (npm's, whose
// syscall line names it too), ln's and cp -c's "Operation not permitted".
var linkRefused = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?im)failed to link or copy|operation not permitted, (?:link|copyfile|clonefile)|syscall (?:link|clonefile)|^ln: .*operation not permitted|clonefile failed`)
})

// toolHint is a line the session says once, after a command that failed with words matching
// re, where when says it holds for the session's wall.
type toolHint struct {
	name string
	re   func() *regexp.Regexp
	when func(h *hints) bool
	line string
}

var toolHintList = []toolHint{
	{
		// Where the wall refuses every hard link and clone (a Mac the link probe has not
		// proved): what still works, and what proves the Mac.
		name: "links",
		re:   linkRefused,
		when: func(h *hints) bool { return h.linksRefused },
		line: "openworker: hard links and clones are refused in this sandbox: that Seatbelt checks both ends of one is not proved on this Mac. " +
			"npm's links are made copies; cargo build, rustup and Rust's fs::copy fail until the person runs `openworker sandbox check` " +
			"(Check this Mac… in the app) and the session is started again\n",
	},
	{
		name: "sysv",
		// initdb's "could not create shared memory segment" / "semaphores" and its failed
		// system call; LMDB's mdb_env_open, which takes SysV semaphores on a Mac.
		re: sync.OnceValue(func() *regexp.Regexp {
			return regexp.MustCompile(`(?i)could not create (?:shared memory segment|semaphores)|(?:shmget|semget|msgget)|mdb_env_open: operation not permitted`)
		}),
		when: func(h *hints) bool { return h.enforcement == sandbox.Seatbelt },
		line: "openworker: SysV shared memory and semaphores are refused in this sandbox: their keys are one namespace for all of the person's programs " +
			"(a PostgreSQL server's among them). PostgreSQL's initdb and LMDB (Parcel's cache) cannot run here; use a database server outside the sandbox " +
			"that the person allows (an agent asks with request_site 127.0.0.1:5432), or the tool without LMDB's locking where it offers that\n",
	},
	{
		name: "urlsession",
		// SwiftPM's binary-target and registry downloads and xcodebuild's package resolution
		// go through URLSession, whose errors say the network is not there.
		re: sync.OnceValue(func() *regexp.Regexp {
			return regexp.MustCompile(`(?i)failed downloading '|Could not resolve package dependencies|The Internet connection appears to be offline|A server with the specified hostname could not be found|NSURLErrorDomain`)
		}),
		when: func(h *hints) bool { return h.enforcement == sandbox.Seatbelt && h.allowlist },
		line: "openworker: Swift Package Manager and xcodebuild download binary targets and registry packages with URLSession, which ignores the sandbox's proxy " +
			"(HTTPS_PROXY), so those downloads cannot reach the network here; packages they clone with git can. Resolve such packages outside the sandbox, " +
			"then build here with `swift build --disable-automatic-resolution` (xcodebuild: -disableAutomaticPackageResolution)\n",
	},
	{
		name: "git-https",
		re: sync.OnceValue(func() *regexp.Regexp {
			return regexp.MustCompile(`could not read (?:Username|Password) for 'https?://[^']*': terminal prompts disabled`)
		}),
		when: func(h *hints) bool { return h.enforcement != sandbox.Direct },
		line: "openworker: git has no login for https remotes in this sandbox: the person's saved logins (the macOS keychain, which git's osxkeychain helper reads) " +
			"are outside it, and git asks for no password here. A person can share a login on purpose (the GitHub CLI's, or SSH keys, in Settings ▸ Sandbox), " +
			"or the remote can be an SSH one\n",
	},
}

// toolHints are the lines toolHintList has for a command that failed, each said once a
// session.
func (h *hints) toolHints(res *runner.Result) []string {
	if res == nil || res.ExitCode == 0 {
		return nil
	}
	stderr := res.Stderr
	if len(h.stderr) > 0 {
		stderr = h.stderr
	}
	var lines []string
	for _, th := range toolHintList {
		if h.toolSaid[th.name] || !th.when(h) || !th.re().Match(stderr) {
			continue
		}
		if h.toolSaid == nil {
			h.toolSaid = map[string]bool{}
		}
		h.toolSaid[th.name] = true
		lines = append(lines, th.line)
	}
	return lines
}

// includePath is a path line of git's include and includeIf paths in a settings file.
var includePath = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*path\s*=\s*(.*?)\s*$`) })

// gitIncludeHints are the lines a session says about files the person's git settings include
// that are not readable inside: only the settings files themselves are.
func gitIncludeHints(p *policy.Policy) []string {
	readable := p.Readable()
	var lines []string
	for _, st := range p.Settings {
		f, err := os.Open(st.Src)
		if err != nil {
			continue
		}
		section := ""
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(line, "[") {
				section = strings.ToLower(strings.Fields(strings.Trim(line, "[]") + " ")[0])
				continue
			}
			m := includePath().FindStringSubmatch(line)
			if m == nil || section != "include" && section != "includeif" {
				continue
			}
			inc := strings.Trim(m[1], `"`)
			switch {
			case strings.HasPrefix(inc, "~/"):
				inc = filepath.Join(p.UserHome, inc[2:])
			case !filepath.IsAbs(inc):
				inc = filepath.Join(filepath.Dir(st.Src), inc)
			}
			inc = filepath.Clean(inc)
			if !policy.Within(p.UserHome, inc) {
				continue // outside the home folder: readable or not as the system paths say
			}
			if slices.ContainsFunc(p.Settings, func(o policy.Setting) bool { return o.Src == inc }) ||
				slices.ContainsFunc(readable, func(d string) bool { return policy.Within(d, inc) }) {
				continue
			}
			if _, err := os.Stat(inc); err != nil {
				continue // git skips a missing include outside too
			}
			lines = append(lines, fmt.Sprintf("openworker: git's settings %s include %s, which is not readable inside the sandbox "+
				"(only ~/.gitconfig and ~/.config/git/config, ignore and attributes are); git inside goes without it\n", tildeIn(p.UserHome, st.Src), tildeIn(p.UserHome, inc)))
		}
		f.Close()
	}
	return lines
}

func tildeIn(home, path string) string {
	if rel, err := filepath.Rel(home, path); err == nil && policy.Within(home, path) {
		return "~/" + rel
	}
	return path
}

// directAttempt is what the session says after a command that failed while a program in it
// tried to connect around the proxy, where the provider can count such attempts (see
// sandbox.EgressCounter: the Linux sandbox's network statistics, which count connections and
// datagrams to addresses it has no route to; they cannot say which program tried or where,
// nor see a connection refused on the sandbox's own loopback).
func (s *Session) directAttempt(res *runner.Result) string {
	ec, ok := s.proc.(sandbox.EgressCounter)
	if !ok || !s.hints.noRouteSet {
		return ""
	}
	if res != nil && res.ExitCode == 0 {
		// Nothing to say: the next command counts from its own start (countDirect), and
		// a command that was the last (openworker run) does not wait for the reads.
		s.hints.noRouteSet = false
		return ""
	}
	n, err := ec.NoRoute()
	before := s.hints.noRoute
	s.hints.noRoute, s.hints.noRouteSet = n, err == nil
	if err != nil || n <= before || res == nil || res.ExitCode == 0 {
		return ""
	}
	how := "only the proxy is reachable from inside, at HTTPS_PROXY and HTTP_PROXY: use a client that follows them " +
		"(Node's fetch does with NODE_USE_ENV_PROXY=1 from Node 22.21 and 24.5)"
	if s.proxy == nil {
		how = "only the proxy is reachable from inside, and this session has none (network " + string(s.Network) + ")"
	}
	return fmt.Sprintf("openworker: a program tried to connect directly to an address outside the sandbox (%d attempt%s); %s\n",
		n-before, plural(n-before), how)
}

// countDirect takes the counts the next command's attempts are compared with: read after the
// last command succeeded, while the caller was away (countNext), or now; directAttempt and
// loopbackRefused keep them after a command that failed.
func (s *Session) countDirect() {
	var c counts
	if ch := s.hints.nextCounts; ch != nil {
		s.hints.nextCounts = nil
		c = <-ch
	}
	if c.of != s.proc || s.proc == nil {
		// None read yet, or read from the sandbox before a restart (a folder added).
		c = readCounts(s.proc, s.Network)
	}
	s.hints.noRoute, s.hints.noRouteSet, s.hints.refused, s.hints.refusedSet = c.noRoute, c.noRouteSet, c.refused, c.refusedSet
}

// countNext starts reading the counts for the next command, once a command succeeded: the
// sandbox's network statistics take a few hundred microseconds to read, which the next
// command then need not wait for. A program the last command left running that tries
// meanwhile is counted before the next command, as it would be were they read at its start.
func (s *Session) countNext() {
	if s.hints.noRouteSet || s.hints.nextCounts != nil || s.hints.oneShot || s.Network == policy.Open {
		return
	}
	ch := make(chan counts, 1)
	s.hints.nextCounts = ch
	proc, network := s.proc, s.Network
	go func() { ch <- readCounts(proc, network) }()
}

// readCounts reads the counts of the sandbox proc (none in open mode: the host's own
// network's counts are everyone's).
func readCounts(proc sandbox.Process, network policy.Network) counts {
	c := counts{of: proc}
	if network == policy.Open {
		return c
	}
	if ec, ok := proc.(sandbox.EgressCounter); ok {
		if n, err := ec.NoRoute(); err == nil {
			c.noRoute, c.noRouteSet = n, true
		}
	}
	if lc, ok := proc.(sandbox.LoopbackCounter); ok {
		if n, err := lc.RefusedLoopback(); err == nil {
			c.refused, c.refusedSet = n, true
		}
	}
	return c
}

// loopbackAddr finds where a program said it could not connect on loopback: curl's
// "127.0.0.1 port 8080", Go's and Node's "127.0.0.1:8080", "[::1]:3000", "localhost:5432".
// connectRefused is how programs say a connection was refused: curl's "Couldn't connect",
// errno's "Connection refused", Node's ECONNREFUSED.
var connectRefused = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)connection refused|couldn't connect|econnrefused|failed to connect`)
})

var loopbackAddr = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(127\.0\.0\.1|localhost|\[::1\]|::1)(?::| port )([0-9]{1,5})\b`)
})

// loopbackRefused says, after a command whose programs' connections to the sandbox's own
// loopback were refused, that 127.0.0.1 inside is the sandbox's own, and how a service of
// this machine's is reached: in the words of the session's refusals (HowToAllow), so for
// whoever reads them and in the session's state (an agent is told it may ask with
// request_site; a person their own way, or after their Deny, where it is taken back). It is
// said whatever the exit status (curl … | head exits 0), once the program's own words name
// a refused loopback address; without them, after a command that succeeded, the counts are
// left for the next command to read off its way.
func (s *Session) loopbackRefused(res *runner.Result) string {
	lc, ok := s.proc.(sandbox.LoopbackCounter)
	if !ok || !s.hints.refusedSet || res == nil {
		return ""
	}
	// The count is the sandbox's whole network's: the program's own words must name the
	// refused loopback address too, or the line would follow anything else refused there.
	out := append(append([]byte(nil), res.Stderr...), s.hints.stderr...)
	m := loopbackAddr().FindSubmatch(out)
	named := m != nil && connectRefused().Match(out)
	if !named && res.ExitCode == 0 {
		s.hints.refusedSet = false // as in directAttempt
		return ""
	}
	n, err := lc.RefusedLoopback()
	before := s.hints.refused
	s.hints.refused, s.hints.refusedSet = n, err == nil
	if err != nil || n <= before || !named {
		return ""
	}
	host := string(m[1])
	if host == "::1" {
		host = "[::1]"
	}
	site := host + ":" + string(m[2])
	how := "only once the person allows it"
	if s.spec.HowToAllow != nil {
		how = "only once it is allowed: " + s.spec.HowToAllow(site)
	}
	return "openworker: a connection to the sandbox's own loopback was refused: nothing listens at " + site + " inside. 127.0.0.1 in the sandbox is its own; " +
		"a service of this machine's loopback is reached " + how + "\n"
}

func plural(n uint64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// commandWords are the words of the command a ran, as one line.
func commandWords(a *runner.ExecArgs) string {
	if a == nil {
		return ""
	}
	if len(a.Argv) > 0 {
		return strings.Join(a.Argv, " ")
	}
	return a.Command
}

// addHints adds to an exec's result what the session has to say about it.
func (s *Session) addHints(r *Result, a *runner.ExecArgs, onChunk func(string, []byte)) {
	lines := s.hints.pending
	s.hints.pending = nil
	lines = append(lines, s.publishNotes()...)
	s.fwdMu.Lock()
	lines = append(lines, s.lateHints...)
	s.lateHints = nil
	s.fwdMu.Unlock()
	if line := s.hints.pathHint(a, r.Result, s.m.opts.UserHome, s.m.opts.GOOS); line != "" {
		lines = append(lines, line)
	}
	var carried []string
	if s.guarding() {
		stderr := r.Stderr
		if len(s.hints.stderr) > 0 {
			stderr = s.hints.stderr
		}
		stdout := r.Stdout
		if len(s.hints.stdout) > 0 {
			stdout = s.hints.stdout
		}
		output := append(stdout[:len(stdout):len(stdout)], stderr...)
		carried = append(s.carryUpstreams(r.Dir, output, commandWords(a)), s.carrySubmodules(r.Dir, output)...)
	}
	if line := s.hints.gitMetadataHint(r.Result, s.guarding(), s.m.opts.GOOS, carried...); line != "" {
		lines = append(lines, line)
	}
	lines = append(lines, s.hints.toolHints(r.Result)...)
	if line := s.loopbackRefused(r.Result); line != "" {
		lines = append(lines, line)
	}
	s.hints.firstDone, s.hints.stderr, s.hints.stdout = true, nil, nil
	if line := s.directAttempt(r.Result); line != "" {
		lines = append(lines, line)
	}
	if line := s.stubRefused(); line != "" {
		lines = append(lines, line)
	}
	s.countNext()
	for _, line := range lines {
		if onChunk != nil {
			onChunk("stderr", []byte(line))
		}
		r.Stderr = append(r.Stderr, line...)
	}
}

// stubRefused says which names the session's DNS stub could not give an address since the
// last result: every one of its names was held by an open connection, so a program's lookup
// failed (SERVFAIL) for a reason it cannot tell. "" when there were none.
func (s *Session) stubRefused() string {
	if s.names == nil {
		return ""
	}
	names, total := s.names.TakeRefused()
	if total == 0 {
		return ""
	}
	shown := make([]string, len(names))
	for i, n := range names {
		shown[i] = termtext.Show(n, 100)
	}
	lookups := "1 lookup"
	if total > 1 {
		lookups = strconv.Itoa(total) + " lookups"
	}
	return fmt.Sprintf("openworker: the sandbox's DNS stub could not answer %s (of %s): all %d of the session's names are held by open connections; close some and look the names up again\n",
		lookups, strings.Join(shown, ", "), dnsstub.MaxNames)
}
