package seatbelt

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LinkChecks is what is known of this Mac's Seatbelt about hard links (file-link) and clones
// (file-clone): whether it checks both ends of one against the profile. Only then may a
// profile allow them by path: were only the new name checked, a file the command may not
// read or write could be given a second name in a folder it may; were only the existing
// file checked, a file could be cloned out of a writable folder into ~/Library/LaunchAgents.
type LinkChecks string

const (
	// LinkChecksUnknown: not proved; every link and clone is denied.
	LinkChecksUnknown LinkChecks = "unknown"
	// LinkChecksBoth: proved on this Mac (LinkProbes); links and clones with both ends in
	// the writable folders or the private tmp are allowed.
	LinkChecksBoth LinkChecks = "both"
)

// ParseLinkChecks reads --link-checks.
func ParseLinkChecks(s string) (LinkChecks, error) {
	switch c := LinkChecks(s); c {
	case LinkChecksUnknown, LinkChecksBoth:
		return c, nil
	}
	return "", fmt.Errorf("link checks %q is not unknown or both", s)
}

// LinkProbe is one attempt of the probe: a link or a clone from a file in one folder to a
// new name in another, under ProbeProfile. Allowed is the folder the profile lets links and
// clones touch; Denied is one it does not.
type LinkProbe struct {
	Op       string // file-link or file-clone
	FromDeny bool   // the existing file lies in the denied folder
	ToDeny   bool   // the new name lies in the denied folder
}

func (lp LinkProbe) String() string {
	where := func(deny bool) string {
		if deny {
			return "denied"
		}
		return "allowed"
	}
	return fmt.Sprintf("%s from the %s folder into the %s one", strings.TrimPrefix(lp.Op, "file-"), where(lp.FromDeny), where(lp.ToDeny))
}

// Want says what the probe must see for Seatbelt to be proved to check both ends: refused
// whenever an end lies in the denied folder, done within the allowed one.
func (lp LinkProbe) Want() bool { return !lp.FromDeny && !lp.ToDeny }

// LinkProbes are the probe's attempts, for links and clones each: into the allowed folder
// from the denied one (refused only if the existing file is checked), out of the allowed one
// into the denied one (refused only if the new name is checked), and within the allowed one
// (done, or the probe proves nothing: the tool failed or the disk cannot clone).
var LinkProbes = []LinkProbe{
	{"file-link", true, false}, {"file-link", false, true}, {"file-link", false, false},
	{"file-clone", true, false}, {"file-clone", false, true}, {"file-clone", false, false},
}

// ProbeProfile is the profile the probe runs each attempt under: everything allowed but links
// and clones, which are allowed only in the allowed folder, and writes in the denied folder.
// So it proves what a session's profile relies on: no link or clone lands where writes are
// denied (a session's profile denies writes wherever it denies links), whether Seatbelt
// checks the new name as a link or as the create it makes, and none takes its source where
// links are denied, which only the link check itself can refuse (reads stay allowed). It must
// be given the folders' resolved paths as the parameters ALLOWED and DENIED.
const ProbeProfile = `(version 1)
(allow default)
(deny file-link file-clone)
(allow file-link file-clone (subpath (param "ALLOWED")))
(deny ` + writeOps + ` (subpath (param "DENIED")))
`

// LinkResult is what one attempt did.
type LinkResult struct {
	Probe LinkProbe
	Done  bool   // the link or clone exists
	Err   string // the tool's error, when it failed
}

// String is the attempt as a report lists it: "link from the denied folder into the allowed
// one: refused (ln: …: Operation not permitted)".
func (r LinkResult) String() string {
	if r.Done {
		return r.Probe.String() + ": made"
	}
	if r.Err == "" {
		return r.Probe.String() + ": not made"
	}
	return r.Probe.String() + ": refused (" + r.Err + ")"
}

// LinkAnswer is what the link probe found on this Mac: its answer, why, and each attempt as
// it went, for the check's report.
type LinkAnswer struct {
	Checks  LinkChecks
	Why     string
	Results []LinkResult
}

// RefusesLinks says whether the walls this provider starts now refuse every hard link and
// clone: the link probe has not proved, on this macOS version, that Seatbelt checks what a
// profile that allows them relies on.
func (pr *Provider) RefusesLinks() bool {
	return LoadLinkChecks(pr.StateDir, osVersion()) != LinkChecksBoth
}

// DecideLinkChecks turns the probe's results into what is known, and says why. Every attempt
// must have run and come out as Want says; anything else (an attempt missing, the tool failing
// within the allowed folder, a link made out of or into the denied folder) leaves it unknown.
func DecideLinkChecks(results []LinkResult) (LinkChecks, string) {
	for _, lp := range LinkProbes {
		var got *LinkResult
		for i := range results {
			if results[i].Probe == lp {
				got = &results[i]
			}
		}
		switch {
		case got == nil:
			return LinkChecksUnknown, "the " + lp.String() + " was not tried"
		case got.Done && !lp.Want():
			what := "Seatbelt checks the new name neither as a link nor as the create it makes"
			if lp.FromDeny {
				what = "Seatbelt does not check the existing file"
			}
			return LinkChecksUnknown, fmt.Sprintf("the %s was made: %s", lp, what)
		case !got.Done && lp.Want():
			why := "the " + lp.String() + " failed"
			if got.Err != "" {
				why += " (" + got.Err + ")"
			}
			return LinkChecksUnknown, why + ", so the probe proves nothing"
		}
	}
	return LinkChecksBoth, "Seatbelt refused every link and clone with an end outside the allowed folder and made those within it"
}

// linkChecksFile is the probe's answer in the state folder, outside every wall.
const linkChecksFile = "link-checks.json"

type linkChecksRecord struct {
	Answer    LinkChecks `json:"answer"`
	Why       string     `json:"why,omitempty"`
	OSVersion string     `json:"os_version"`
}

// SaveLinkChecks records the probe's answer on this macOS version in the state folder.
func SaveLinkChecks(stateDir, osVersion string, c LinkChecks, why string) error {
	b, err := json.Marshal(linkChecksRecord{Answer: c, Why: why, OSVersion: osVersion})
	if err != nil {
		return err
	}
	tmp := filepath.Join(stateDir, linkChecksFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("seatbelt: recording the link probe's answer: %w", err)
	}
	return os.Rename(tmp, filepath.Join(stateDir, linkChecksFile))
}

// LoadLinkChecks is the answer recorded on this macOS version, or LinkChecksUnknown: no
// record, one of another version (an update may change what Seatbelt checks), or one that
// cannot be read.
func LoadLinkChecks(stateDir, osVersion string) LinkChecks {
	if stateDir == "" || osVersion == "" {
		return LinkChecksUnknown
	}
	b, err := os.ReadFile(filepath.Join(stateDir, linkChecksFile))
	if err != nil {
		return LinkChecksUnknown
	}
	var rec linkChecksRecord
	if json.Unmarshal(b, &rec) != nil || rec.OSVersion != osVersion {
		return LinkChecksUnknown
	}
	if c, err := ParseLinkChecks(string(rec.Answer)); err == nil {
		return c
	}
	return LinkChecksUnknown
}

// RecordedLinkChecks is the link probe's answer recorded in the state folder for this Mac's
// macOS version, for the app to show: probed says there is one; both that it proved both
// ends checked; why is what the probe found.
func RecordedLinkChecks(stateDir string) (probed, both bool, why string) {
	return recordedLinkChecks(stateDir, osVersion())
}

func recordedLinkChecks(stateDir, osVersion string) (probed, both bool, why string) {
	if stateDir == "" || osVersion == "" {
		return false, false, ""
	}
	b, err := os.ReadFile(filepath.Join(stateDir, linkChecksFile))
	if err != nil {
		return false, false, ""
	}
	var rec linkChecksRecord
	if json.Unmarshal(b, &rec) != nil || rec.OSVersion != osVersion {
		return false, false, ""
	}
	c, err := ParseLinkChecks(string(rec.Answer))
	if err != nil {
		return false, false, ""
	}
	return true, c == LinkChecksBoth, rec.Why
}
