package wallcheck

import (
	"fmt"
	"io"
	"strings"
)

// Report is what `openworker sandbox check --report FILE` writes for a person to attach to a
// bug report: which OpenWorker, on which system, what the battery ran and how each program
// did, the link probe's answer (a line of the battery, with each of its attempts) and every
// denial the wall reported.
// It holds no file contents and no environment values, and writes the home folder as "~".
type Report struct {
	Version     string // OpenWorker's
	System      string // "macOS 15.3.1", "Linux 6.8.0 (Ubuntu 24.04 LTS)"
	Arch        string // "arm64", "amd64"
	Enforcement string // "seatbelt", "linux"
	// Sandbox is the check's first line: the tier, or "not available: REASON".
	Sandbox string
	// Home is the person's home folder, written "~" wherever it appears.
	Home    string
	Results []Result
	// ReportsDenials says the wall reports what it refused (Seatbelt, when the log can be
	// read); otherwise each program's line alone says what went wrong.
	ReportsDenials bool
}

// WriteReport writes r as text a person reads and sends.
func WriteReport(w io.Writer, r Report) error {
	home := func(s string) string { return shortenHome(s, r.Home) }
	var b strings.Builder
	fmt.Fprintf(&b, "OpenWorker sandbox check\n")
	fmt.Fprintf(&b, "OpenWorker: %s\n", r.Version)
	fmt.Fprintf(&b, "System: %s (%s)\n", r.System, r.Arch)
	fmt.Fprintf(&b, "Sandbox: %s\n", home(r.Sandbox))
	if len(r.Results) == 0 {
		b.WriteString("\nNo programs were run: the sandbox could not start.\n")
	} else {
		works, broken, skipped := 0, 0, 0
		for _, res := range r.Results {
			switch {
			case res.Status == Skipped:
				skipped++
			case res.OK:
				works++
			default:
				broken++
			}
		}
		fmt.Fprintf(&b, "Programs: %d as they must be, %d not, %d skipped; the wall %s\n", works, broken, skipped,
			map[bool]string{true: "held", false: "let an escape through or could not run a command"}[Holds(r.Results)])
		b.WriteString("\nWhat ran, and how it went:\n")
		for _, res := range r.Results {
			line := "  " + res.Name + ": " + res.Status
			if res.Detail != "" && (!res.OK || res.Status == Skipped || res.Info) {
				if res.Private {
					line += " (its output is left out: it may hold the environment's values)"
				} else {
					line += ": " + res.Detail
				}
			}
			if res.Unreported {
				line += ", but its denial was missing from the command's report"
			}
			b.WriteString(home(line) + "\n")
			if !res.OK && res.Command != "" && !res.Private {
				b.WriteString(home("      ran: "+firstLine(res.Command)) + "\n")
			}
			for _, raw := range res.Raw {
				b.WriteString(home("      tried: "+raw) + "\n")
			}
		}
		var denied []string
		for _, res := range r.Results {
			for _, d := range res.Denials {
				denied = append(denied, home("  "+res.Name+": "+d))
			}
		}
		switch {
		case len(denied) > 0:
			b.WriteString("\nDenials the wall reported:\n" + strings.Join(denied, "\n") + "\n")
		case r.ReportsDenials:
			b.WriteString("\nThe wall reported no denials.\n")
		default:
			b.WriteString("\nThis wall does not report its denials; each program's line says what went wrong.\n")
		}
	}
	b.WriteString("\nThis report holds no file contents and no environment values; your home folder is written ~.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// firstLine is a command's first line, marked when more follow (a script's).
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// shortenHome writes home as "~" wherever it appears in s as a whole path ("/Users/meow" is
// not "/Users/me").
func shortenHome(s, home string) string {
	if home == "" || home == "/" {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, home)
		if i < 0 {
			break
		}
		rest := s[i+len(home):]
		b.WriteString(s[:i])
		if rest == "" || !isNameByte(rest[0]) {
			b.WriteString("~")
		} else {
			b.WriteString(home)
		}
		s = rest
	}
	return b.String() + s
}

func isNameByte(c byte) bool {
	return c == '.' || c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
