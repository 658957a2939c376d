package agentshell

import "strings"

// Site refusals as a model reads them: the site, and that it may ask the person with
// request_site and a reason. Never the person's ways to open a site, which only the person
// uses (the app, openworker access, the settings).

// deniedReason is how the proxy's reason says the person denied the site for the session.
const deniedReason = "was denied for this session"

// BlockedNote is what a model reads of the sites the proxy blocked while its command ran:
// sites is each blocked site as host:port, and denied says which the person denied (asking
// again is no use). "" when there are none.
func BlockedNote(sites []string, denied []bool) string {
	var ask, no []string
	for i, s := range sites {
		if i < len(denied) && denied[i] {
			no = append(no, s)
		} else {
			ask = append(ask, s)
		}
	}
	var notes []string
	if len(ask) > 0 {
		notes = append(notes, "The sandbox's proxy blocked "+strings.Join(ask, ", ")+" while this command ran. If the task needs a site, ask the person with request_site and a reason; do not try to get around the proxy.")
	}
	if len(no) > 0 {
		notes = append(notes, "The person denied "+strings.Join(no, ", ")+" for this session: do not ask for it again, and do not try to get around the proxy.")
	}
	return strings.Join(notes, " ")
}

// Denied says whether a proxy's refusal reason says the person denied the site.
func Denied(reason string) bool { return strings.Contains(reason, deniedReason) }
