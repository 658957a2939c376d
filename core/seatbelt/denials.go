package seatbelt

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Denial is one operation Seatbelt refused, as the kernel logged it.
type Denial struct {
	Time      string `json:"time,omitempty"`
	Process   string `json:"process"`
	PID       int    `json:"pid"`
	Operation string `json:"operation"`
	// Target is what was refused: a path, host:port, a service name; empty when the kernel
	// logs none.
	Target string `json:"target,omitempty"`
	// Count is how many times the kernel saw it before logging (the N of deny(N)), times the
	// repeats a duplicates line stands for.
	Count int `json:"count"`
	// Repeats says it came as Seatbelt's "N duplicate reports for ..." line: the first report
	// of it may have gone to an earlier command.
	Repeats bool `json:"repeats,omitempty"`
	// Earlier says a process an earlier command left running made it, not this command.
	Earlier bool `json:"earlier,omitempty"`
	// From is who logged it: "" for the kernel, FromSandboxd for sandboxd's reports.
	From string `json:"from,omitempty"`
}

// SandboxdPath is sandboxd's image: the only sender believed in the sandbox's reporting
// subsystem, where it logs denials the kernel does not (mach-lookup, for one).
const SandboxdPath = "/usr/libexec/sandboxd"

// FromSandboxd is Denial.From for a report sandboxd logged.
const FromSandboxd = "sandboxd"

// reportingSubsystem is the unified log's subsystem of sandboxd's reports.
const reportingSubsystem = "com.apple.sandbox.reporting"

// logEvent is the part of a `log stream --style ndjson` line the parser reads.
type logEvent struct {
	EventMessage     string `json:"eventMessage"`
	ProcessImagePath string `json:"processImagePath"`
	ProcessID        *int   `json:"processID"`
	Subsystem        string `json:"subsystem"`
	Timestamp        string `json:"timestamp"`
}

// denyRE reads the kernel's message: "Sandbox: curl(4242) deny(1) network-outbound 1.2.3.4:443".
// A process name may hold spaces and parentheses, so the name runs up to the last "(PID) deny(".
var denyRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^Sandbox: (.+)\((\d+)\) deny\((\d+)\) ([a-z][a-z0-9*-]*)(?: (.*))?$`)
})

// duplicatesRE reads the line Seatbelt writes instead of repeating a report: "12 duplicate
// reports for Sandbox: go(9) deny(1) file-write-data /x".
var duplicatesRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\d+) duplicate reports? for (Sandbox: .*)$`)
})

// ParseLogLine reads one line of `log stream --style ndjson` and returns the denial it holds,
// if it is a Seatbelt denial carrying marker from a sender that is believed: the kernel, or
// sandboxd in its reporting subsystem. Other lines (the stream's header, other runs' denials,
// a message a process logged itself) give false, so that a sandboxed program cannot invent
// denials by writing to the log.
func ParseLogLine(line []byte, marker string) (Denial, bool) {
	if marker == "" {
		return Denial{}, false
	}
	ev, from, ok := trustedEvent(line)
	if !ok || !strings.Contains(ev.EventMessage, marker) {
		return Denial{}, false
	}
	return parseMessage(ev, from, marker)
}

// parseSandboxdLine reads a report of sandboxd's that carries no marker (whether its reports
// carry the profile's message is not documented): whose it is, only the process's PID says.
func parseSandboxdLine(line []byte) (Denial, bool) {
	ev, from, ok := trustedEvent(line)
	if !ok || from != FromSandboxd {
		return Denial{}, false
	}
	return parseMessage(ev, from, "")
}

// trustedEvent decodes a line logged by the kernel (process 0) or by sandboxd in its
// reporting subsystem, and says which.
func trustedEvent(line []byte) (logEvent, string, bool) {
	var ev logEvent
	if err := json.Unmarshal(line, &ev); err != nil || ev.ProcessID == nil {
		return ev, "", false
	}
	switch {
	case ev.ProcessImagePath == "/kernel" && *ev.ProcessID == 0:
		return ev, "", true
	case ev.ProcessImagePath == SandboxdPath && ev.Subsystem == reportingSubsystem:
		return ev, FromSandboxd, true
	}
	return ev, "", false
}

// parseMessage reads the denial in an event's message; the rule's message (marker) comes
// with it, on a line of its own or after it.
func parseMessage(ev logEvent, from, marker string) (Denial, bool) {
	for _, l := range strings.Split(ev.EventMessage, "\n") {
		if marker != "" {
			l = strings.ReplaceAll(l, marker, "")
		}
		l = strings.TrimSpace(l)
		repeats, dup := 1, false
		if m := duplicatesRE().FindStringSubmatch(l); m != nil {
			n, err := strconv.Atoi(m[1])
			if err != nil || n < 1 {
				return Denial{}, false
			}
			repeats, dup, l = n, true, m[2]
		}
		m := denyRE().FindStringSubmatch(l)
		if m == nil {
			continue
		}
		pid, err1 := strconv.Atoi(m[2])
		n, err2 := strconv.Atoi(m[3])
		if err1 != nil || err2 != nil {
			return Denial{}, false
		}
		return Denial{
			Time:      ev.Timestamp,
			Process:   strings.TrimSpace(m[1]),
			PID:       pid,
			Operation: m[4],
			Target:    strings.TrimSpace(m[5]),
			Count:     n * repeats,
			Repeats:   dup,
			From:      from,
		}, true
	}
	return Denial{}, false
}

// Egress is a direct connection around the egress proxy, reported like a host the proxy
// refused.
type Egress struct {
	// Host is the address connected to, or "*" when the log gives only the port.
	Host    string
	Port    int
	Process string
	Reason  string
}

// DirectConnectionReason is the reason of every Egress.
const DirectConnectionReason = "a direct connection, not through the egress proxy"

// MaxReported is how many denials a command's report lists.
const MaxReported = 100

// Summary is what a command's denials come to.
type Summary struct {
	// Egress are the direct connections, once per host and port.
	Egress []Egress
	// Text is appended to the command's error output; empty when there is nothing to say.
	Text string
	// All is every denial, noise and repeats included, for the violations file.
	All []Denial
}

// Run is what a command's report depends on besides its denials.
type Run struct {
	// UserHome is the real home folder, whose stats are folded (see SummarizeRun); empty
	// lists them one by one.
	UserHome string
	// Failed says the command exited non-zero, timed out or did not finish.
	Failed bool
	// LocalServers says the session's local-servers switch is on (policy.Policy.LocalServers).
	LocalServers bool
}

// Summarize turns a command's denials into its report as for a command that failed, with
// every denial listed on its own.
func Summarize(ds []Denial) Summary { return SummarizeRun(ds, Run{Failed: true}) }

// SummarizeRun turns a command's denials into its report: each operation and target once, at
// most MaxReported, leaving out what macOS's own programs try on every run and do without.
// Stats of paths in the home folder (Node stats node_modules and package.json in every folder
// above a project) are what programs look for and do without when the command succeeds: they
// are reported only when it failed, folded into one line.
func SummarizeRun(ds []Denial, run Run) Summary {
	s := Summary{All: ds}
	seenEgress := map[string]bool{}
	seen := map[string]bool{}
	// times is how often each listed operation and target was refused: repeats that
	// Seatbelt folded into a duplicates line are counted, not dropped.
	times := map[string]int{}
	var listed, homeStats []Denial
	for _, d := range ds {
		if e, ok := egress(d); ok {
			key := e.Host + ":" + strconv.Itoa(e.Port)
			if !seenEgress[key] {
				seenEgress[key] = true
				s.Egress = append(s.Egress, e)
			}
		}
		if IsNoise(d) {
			continue
		}
		key := reportKey(d)
		times[key] += max(d.Count, 1)
		if seen[key] {
			continue
		}
		seen[key] = true
		if isHomeStat(d, run.UserHome) {
			homeStats = append(homeStats, d)
			continue
		}
		listed = append(listed, d)
	}
	n := len(listed)
	fold := run.Failed && len(homeStats) > 0
	if fold {
		n++
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "openworker sandbox: Seatbelt denied %d operation(s) of this command:\n", n)
	hinted, bindHinted, linkHinted := false, false, false
	for i, d := range listed {
		if i == MaxReported {
			fmt.Fprintf(&b, "  ... %d more operation(s) are not reported here; the run's violations file has every denial\n", len(listed)-MaxReported)
			break
		}
		target := ""
		if d.Target != "" {
			target = " " + d.Target
		}
		who := d.Process
		if n := times[reportKey(d)]; n > 1 {
			who += fmt.Sprintf(", %d times", n)
		}
		if d.Earlier {
			who += ", from an earlier command"
		}
		fmt.Fprintf(&b, "  %s%s (%s)\n", d.Operation, target, who)
		if _, ok := egress(d); ok && !hinted {
			hinted = true
			b.WriteString("    (connections go through the egress proxy in HTTPS_PROXY, to the hosts on the allow list)\n")
		}
		if (d.Operation == "file-link" || d.Operation == "file-clone") && !linkHinted {
			linkHinted = true
			b.WriteString("    (hard links and clones are allowed only within the session's folders, and only once `openworker sandbox check` has proved on this Mac that Seatbelt checks both ends of each; until then npm's links are made copies, and cargo build, rustup and Rust's fs::copy fail: run it once (or Check this Mac… in the app), then start the session again)\n")
		}
		if isIPBind(d) && !run.LocalServers && !bindHinted {
			bindHinted = true
			b.WriteString("    (servers on loopback need the session's local-servers switch, which the person turns on for a session)\n")
		}
	}
	if fold {
		fmt.Fprintf(&b, "  stat of %d path(s) in the home folder, outside the session's folders, such as %s (%s)\n",
			len(homeStats), homeStats[0].Target, homeStats[0].Process)
	}
	s.Text = b.String()
	return s
}

// reportKey is what a report lists once: an operation on a target, by this command or by
// what an earlier one left running.
func reportKey(d Denial) string {
	return fmt.Sprintf("%s %s %v", d.Operation, d.Target, d.Earlier)
}

// Line is d as a result lists it: "OPERATION TARGET (PROCESS)", and whether a process an
// earlier command left running made it.
func (d Denial) Line() string {
	who := d.Process
	if d.Earlier {
		who += ", from an earlier command"
	}
	if d.From != "" {
		who += ", logged by " + d.From
	}
	if d.Target == "" {
		return fmt.Sprintf("%s (%s)", d.Operation, who)
	}
	return fmt.Sprintf("%s %s (%s)", d.Operation, d.Target, who)
}

// isIPBind says d is a refused bind or accept on an IP address (not a Unix socket's path).
func isIPBind(d Denial) bool {
	return (d.Operation == "network-bind" || d.Operation == "network-inbound") && d.Target != "" && !strings.HasPrefix(d.Target, "/")
}

// isHomeStat says d is a stat (or an existence check) of a path inside home.
func isHomeStat(d Denial, home string) bool {
	if home == "" || home == "/" || d.Operation != "file-read-metadata" && d.Operation != "file-test-existence" {
		return false
	}
	return strings.HasPrefix(d.Target, home+"/")
}

// egress reads a refused outbound IP connection; a Unix socket (a path) is not one.
func egress(d Denial) (Egress, bool) {
	if d.Operation != "network-outbound" || d.Target == "" || strings.HasPrefix(d.Target, "/") {
		return Egress{}, false
	}
	// Some macOS versions write "remote:HOST:PORT".
	t := strings.TrimPrefix(d.Target, "remote:")
	i := strings.LastIndexByte(t, ':')
	if i <= 0 {
		return Egress{}, false
	}
	host, portText := t[:i], t[i+1:]
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return Egress{}, false
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host != "*" {
		a, err := netip.ParseAddr(host)
		if err != nil {
			return Egress{}, false
		}
		host = a.Unmap().String()
	}
	return Egress{Host: host, Port: port, Process: d.Process, Reason: DirectConnectionReason}, true
}

// shells are the programs whose writes to the terminal are noise: an interactive-looking
// shell opens the terminal to print, and its output goes where OpenWorker sends it anyway.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "tcsh": true, "csh": true, "fish": true}

// The regular expressions are compiled at first use: every start of the binary (the CLI, and
// on Linux each sandbox's first process) would otherwise pay for them.
var (
	terminalRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^/dev/(tty|ttys[0-9]+|pts/[0-9]+)$`)
	})
	globalPrefsRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`/Library/Preferences/\.GlobalPreferences[^/]*\.plist$`)
	})
)

// IsNoise reports whether d is one of the denials macOS's own programs cause on every run and
// do without: DNS lookups through mDNSResponder (the egress proxy resolves names), a shell's
// write to the terminal, and CoreFoundation's reads of the account's text encoding and global
// preferences. They stay denied and stay in the violations file; they are left out of the
// report so that it shows what the command itself was refused.
func IsNoise(d Denial) bool {
	switch {
	case d.Operation == "network-outbound" && (d.Target == "/private/var/run/mDNSResponder" || d.Target == "/var/run/mDNSResponder"):
		return true
	case d.Operation == "mach-lookup" && d.Target == "com.apple.dnssd.service":
		return true
	case strings.HasPrefix(d.Operation, "file-write") && terminalRE().MatchString(d.Target) && shells[d.Process]:
		return true
	case strings.HasPrefix(d.Operation, "file-read") && path.Base(d.Target) == ".CFUserTextEncoding":
		return true
	case strings.HasPrefix(d.Operation, "file-read") && globalPrefsRE().MatchString(d.Target):
		return true
	}
	return false
}

// WriteViolations writes every denial to w, one JSON object a line: the run's violations file.
func WriteViolations(w io.Writer, ds []Denial) error {
	enc := json.NewEncoder(w)
	for _, d := range ds {
		if err := enc.Encode(d); err != nil {
			return fmt.Errorf("seatbelt: writing the violations file: %w", err)
		}
	}
	return nil
}
