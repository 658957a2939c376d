package presenter

import "github.com/openworker/openworker/ui/view"

// Window IDs. A window of a session adds ":" and the session's ID.
const (
	CardsWindow    = "cards"
	SettingsWindow = "settings"
	SitesWindow    = "sites"
	AddFileWindow  = "add-file"
	AllowWindow    = "allow"
	PublishWindow  = "publish"
	CheckWindow    = "check"
)

// The actions the presenter's views send. Each is a plain value; Dispatch carries it out.
type (
	// ShowWindow opens (or brings forward) one of the app's windows; Session is the session a
	// window concerns (Choose sites… of a session's Access menu, Allow another site…).
	ShowWindow struct {
		ID      string
		Session string
	}
	// CloseWindow is the person closing a window. Closing the cards leaves them pending; they
	// come back with the next card and stay listed in the menu.
	CloseWindow struct{ ID string }
	// FocusCards is the person clicking into the card stack: its first card gets its
	// default button and keyboard shortcuts from then on.
	FocusCards struct{}

	// AnswerCard answers a site card with one of its answers (session, always, deny, once).
	AnswerCard struct{ ID, Answer string }

	// TickGroup and UntickGroup put all of a catalog group's sites on the machine's list, or
	// take them off.
	TickGroup   struct{ ID string }
	UntickGroup struct{ ID string }
	// EditSite is the "Add a site" field's text as the person types.
	EditSite struct{ Text string }
	// AddSite puts a site of the person's own on the machine's list.
	AddSite struct{ Site string }
	// RemoveSite takes a custom site off the machine's list.
	RemoveSite struct{ Site string }

	// AllowForSession allows a site for one session only; EditAllow is its field's text.
	AllowForSession struct{ Session, Site string }
	EditAllow       struct{ Session, Text string }
	// Revoke takes back a session-only site.
	Revoke struct{ Session, Site string }
	// PublishPort publishes a port of a session's sandbox loopback on this machine's
	// 127.0.0.1 while a server listens there (Port as the person typed it); EditPublish is
	// its field's text; Unpublish takes a port asked for back.
	PublishPort struct{ Session, Port string }
	EditPublish struct{ Session, Text string }
	Unpublish   struct {
		Session string
		Port    int
	}
	// SetLocalServers switches a session's local servers on or off: on a Mac its runner
	// restarts; on Linux its servers' ports are published, or taken back, at once.
	SetLocalServers struct {
		Session string
		On      bool
	}
	// CheckMachine opens Check this Mac… and runs the check (sandbox check --report).
	CheckMachine struct{}

	// SetProvider, SetNetwork and SetApprovals set the machine's sandbox_provider,
	// sandbox_network_profile and sandbox_approvals.
	SetProvider  struct{ Provider string }
	SetNetwork   struct{ Profile string }
	SetApprovals struct{ Mode string }
	// SetGitMetadata sets sandbox_git_metadata ("protected" or "writable").
	SetGitMetadata struct{ Mode string }
	// SetToolchain switches a home-folder toolchain on or off; AddToolchain adds a folder the
	// person chose (its path as the open panel gave it).
	SetToolchain struct {
		Path string
		On   bool
	}
	AddToolchain struct{ Path string }

	// AddLogin adds a CLI's login from the catalog (switched on).
	AddLogin struct{ Name string }
	// SetLoginEnabled switches an added entry on or off; RemoveLogin removes it.
	SetLoginEnabled struct {
		Key string
		On  bool
	}
	RemoveLogin struct{ Key string }
	// AddSSHLogin adds the SSH keys with their keys shared as Keys ("agent" or "copy");
	// SetSSHKeys switches the added entry.
	AddSSHLogin struct{ Keys string }
	SetSSHKeys  struct{ Mode string }
	// AddLoginSecrets adds a CLI's login with its tokens shared as Secrets ("stand-in" or
	// "copy"); SetSecrets switches the added entry.
	AddLoginSecrets struct{ Name, Secrets string }
	SetSecrets      struct{ Name, Mode string }

	// The "A file or folder…" form: the chosen path, its label, the hosts as typed, and Add.
	SetFilePath  struct{ Path string }
	SetFileLabel struct{ Label string }
	EditFileHost struct{ Text string }
	AddFile      struct{}
)

func (EditSite) WithText(s string) view.Action    { return EditSite{Text: s} }
func (AddSite) WithText(s string) view.Action     { return AddSite{Site: s} }
func (a EditAllow) WithText(s string) view.Action { return EditAllow{Session: a.Session, Text: s} }
func (a AllowForSession) WithText(s string) view.Action {
	return AllowForSession{Session: a.Session, Site: s}
}
func (a EditPublish) WithText(s string) view.Action { return EditPublish{Session: a.Session, Text: s} }
func (a PublishPort) WithText(s string) view.Action { return PublishPort{Session: a.Session, Port: s} }
func (AddToolchain) WithText(s string) view.Action  { return AddToolchain{Path: s} }
func (SetFilePath) WithText(s string) view.Action   { return SetFilePath{Path: s} }
func (EditFileHost) WithText(s string) view.Action  { return EditFileHost{Text: s} }
