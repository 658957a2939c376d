package presenter

import (
	"maps"
	"slices"
	"time"

	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/sandbox"
)

// State is everything the views are built from: the backend's state at one moment and the
// presenter's own. Build is a pure function of it, so previews and tests make one by hand.
type State struct {
	Settings *config.InForce
	Native   sandbox.Enforcement
	Wall     sandbox.Status
	Sessions []Session
	Cards    []backend.CardInfo
	Sites    backend.Sites
	// Toolchains are those this machine has, and those the settings switch on.
	Toolchains []Toolchain
	// Logins are the catalog's CLI logins and Added the entries the person added; HasLogins
	// says the app has shared logins at all.
	Logins     []CatalogLogin
	Added      []AddedLogin
	LoginsNote string
	HasLogins  bool
	// Links is the link probe's answer on this Mac; nil where there is no such probe.
	Links *Links
	// SSHKeysChoice says the logins can share the SSH keys either way (see SSHKeys).
	SSHKeysChoice bool
	// SecretsChoice says the logins can share a CLI login's tokens either way (see Secrets).
	SecretsChoice bool
	Home          string
	AuditLog      string
	Now           time.Time
	UI            UI
}

// Session is one running session as the menu shows it.
type Session struct {
	ID                 string
	Writable, ReadOnly []string
	Enforcement        sandbox.Enforcement
	Network            string
	Started            time.Time
	Access             backend.Access
	// LocalServers: its commands may serve and connect on this machine's loopback.
	LocalServers bool
}

// Links is what this Mac's link probe found: whether Seatbelt checks both ends of a hard
// link and of a clone, which is what lets sessions link and clone within their folders.
type Links struct {
	// Probed says the probe ran on this macOS version; Both that it proved both ends
	// checked; Why is what it found.
	Probed, Both bool
	Why          string
}

// Check is the person's check of this machine (Check this Mac…): running, or its outcome.
type Check struct {
	Running bool
	// Lines are the check's programs, as its battery printed them.
	Lines []CheckLine
	// Summary is the check's verdict in a sentence; Error why it could not run.
	Summary, Error string
	// Report is the report's text (what Copy report copies) and ReportPath its file.
	Report, ReportPath string
}

// CheckLine is one program of the check.
type CheckLine struct {
	Name, Status, Detail string
	OK                   bool
	// Info says Detail is what the program found, shown however it went.
	Info bool
}

// Toolchain is one home-folder toolchain of Settings ▸ Sandbox.
type Toolchain struct {
	Path  string // relative to the home folder
	On    bool
	Added bool // a folder the person added, not one of the known names
}

// UI is the presenter's own state: what is open and what the person has typed.
type UI struct {
	FirstLaunch bool
	// Open are the windows open besides the cards, oldest first.
	Open []string
	// CardsFocused: the person clicked into the card stack, so it has a default button.
	CardsFocused bool
	// HiddenCards are the cards pending when the person closed the stack; it comes back
	// when another card arrives.
	HiddenCards []string
	// SiteText is the "Add a site" field, SiteMessage what is wrong with it.
	SiteText, SiteMessage string
	// SitesSession is the session whose Session only sites Choose sites… shows.
	SitesSession string
	// AllowText is each session's "Allow another site" field; PublishText its "Publish a
	// port" field.
	AllowText, PublishText map[string]string
	// The "A file or folder…" form.
	FilePath, FileLabel, FileHosts, FileMessage string
	// Error is what went wrong with the person's last action.
	Error string
	// Check is the last Check this Mac….
	Check Check
}

func (u UI) clone() UI {
	u.Open = slices.Clone(u.Open)
	u.HiddenCards = slices.Clone(u.HiddenCards)
	u.AllowText = maps.Clone(u.AllowText)
	u.PublishText = maps.Clone(u.PublishText)
	u.Check.Lines = slices.Clone(u.Check.Lines)
	return u
}
