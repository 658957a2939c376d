// Package presenter is the menu-bar app's brain on every OS: it reads the backend's state
// (sessions, cards, the settings in force, the machine's wall), builds the view trees the
// person sees (package view), and turns the person's actions into backend calls.
//
// It decides what is shown and which call an action makes, nothing else: what a site card
// opens, what the settings file holds and whether a wall is up are the backend's. It imports
// no Cocoa and nothing of darwin; the shell in ui/cocoa renders its trees generically, and
// ui/preview draws the same trees as HTML on Linux.
package presenter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openworker/openworker/core/approvals"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
	"github.com/openworker/openworker/ui/view"
)

// Backend is what the presenter uses of core/backend.
type Backend interface {
	Sessions() []*session.Session
	Cards() []backend.CardInfo
	Answer(cardID, word string) (approvals.Effect, error)
	Access(id string) (backend.Access, error)
	AllowForSession(id, site string) error
	Revoke(id, site string) error
	SetLocalServers(id string, on bool) error
	SetPublish(id string, port int, on bool) error
	Sites() backend.Sites
	Tick(id string) error
	Untick(id string) error
	AddSite(site string) error
	RemoveSite(site string) error
	Settings() *config.InForce
	Subscribe(cards bool) (<-chan backend.Event, func())
}

var _ Backend = (*backend.Backend)(nil)

// SettingsEditor changes the machine's single-word settings and its toolchains.
type SettingsEditor interface {
	SetProvider(word string) error
	SetNetworkProfile(word string) error
	SetApprovals(word string) error
	SetGitMetadata(word string) error
	// SetToolchain switches a toolchain (a path relative to the home folder) on or off.
	SetToolchain(path string, on bool) error
}

// CatalogLogin is one CLI's login that "Add… ▸ A CLI's login" offers.
type CatalogLogin struct {
	Name   string // the catalog name in the settings file: "ssh", "gh", ...
	Title  string // "SSH keys"
	From   string // "~/.ssh"
	Kind   string // "folder, credential"
	Lets   string // what it lets the agent do
	Hosts  []string
	Found  bool   // the file or folder is on this machine and can be read
	Status string // "found", "not found", "found (token in the keychain)"
	Added  bool   // it has an entry already
	// StandIn says it can be a stand-in on this machine (its tokens stay outside); CopyOnly
	// says why it is always copied, for the others.
	StandIn  bool
	CopyOnly string
}

// AddedLogin is one entry of "Explicit config and keys exposed to Agent".
type AddedLogin struct {
	Key     string // the catalog name, or "~/" + the path
	Title   string // "SSH keys", or the path
	From    string // "~/.ssh"
	Kind    string // "folder, credential"
	Hosts   []string
	Enabled bool
	Status  string // found, not found, ...
	Problem string // why it cannot be copied, if it cannot
	// Keys, for the SSH keys, is how they are shared: "agent" or "copy".
	Keys string
	// Secrets, for another CLI's login, is how its tokens are shared: "stand-in" or "copy";
	// SecretsNote says why it is copied, where it is; StandIn says it can be a stand-in.
	Secrets     string
	SecretsNote string
	StandIn     bool
	// LeftOut are the files a session started now would not get, each with why (the SSH
	// keys' files when the keys stay outside).
	LeftOut []string
}

// LoginList is the shared logins: the entries added and the catalog.
type LoginList struct {
	Added   []AddedLogin
	Catalog []CatalogLogin
	// Note says when a change applies ("to sessions started afterwards").
	Note string
}

// Logins is what the presenter needs of the shared logins (the backend's Credentials,
// AddCredential, AddCredentialPath, SetCredentialEnabled and RemoveCredential).
type Logins interface {
	List() LoginList
	AddCatalog(name string) error
	// AddPath adds a file or folder under the home folder ("~/..."), labelled
	// config.LabelCredential or config.LabelConfiguration, with the hosts its tool needs.
	AddPath(path, label string, hosts []string) error
	SetEnabled(key string, on bool) error
	Remove(key string) error
}

// SSHKeys is Logins that can share the SSH keys either way: through OpenWorker's agent or
// copied. Logins without it add them the default way.
type SSHKeys interface {
	AddSSH(keys string) error
	SetSSHKeys(mode string) error
}

// Secrets is Logins that can share a CLI login's tokens either way: as stand-ins (the tokens
// stay outside) or copied. Logins without it add them the default way.
type Secrets interface {
	AddLoginSecrets(name, secrets string) error
	SetSecrets(name, mode string) error
}

// Options configure a Presenter.
type Options struct {
	Settings SettingsEditor
	Logins   Logins // nil: the section says shared logins are not available
	// Native is this OS's sandbox ("" none), and Wall whether it can run sessions here (its
	// provider's Status, taken at start: it may run a probe).
	Native sandbox.Enforcement
	Wall   sandbox.Status
	// Home is the person's home folder: toolchains are looked for there, and folders are
	// shown under "~".
	Home string
	// Exists says whether a path exists (os.Stat by default), for the toolchains offered.
	Exists func(path string) bool
	// AuditLog is the audit trail's file, for "Open audit log".
	AuditLog string
	// FirstLaunch is the app's first start on this machine (no settings file yet): the menu
	// offers "Turn on the macOS sandbox…" until the person chooses.
	FirstLaunch bool
	Now         func() time.Time
	// Links reads this Mac's link probe's answer; nil where there is none (not a Mac).
	Links func() *Links
	// CheckMachine runs the machine's check (sandbox check, with its report) for Check
	// this Mac…; nil: the app cannot.
	CheckMachine func(ctx context.Context) (Check, error)
}

// Presenter holds what the views show besides the backend's state: which windows are open,
// what the person has typed, the last error.
type Presenter struct {
	b    Backend
	opts Options

	mu      sync.Mutex
	ui      UI
	changed chan struct{}
}

// New returns a presenter of b. Without opts.Settings, the settings are changed through
// b's own calls when it has them (the backend's store: in force at once, then written).
func New(b Backend, opts Options) *Presenter {
	if e, ok := b.(SettingsEditor); ok && opts.Settings == nil {
		opts.Settings = backendSettings{e}
	}
	if opts.Exists == nil {
		opts.Exists = func(p string) bool { _, err := os.Stat(p); return err == nil }
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Presenter{b: b, opts: opts, ui: UI{FirstLaunch: opts.FirstLaunch, FileLabel: config.LabelCredential}, changed: make(chan struct{}, 1)}
}

// Watch shows the backend's cards to the person (the presenter is a card watcher) and
// returns a channel that receives whenever what the app shows may have changed: an event of
// the backend, or an action. Ticks coalesce; the shell rebuilds from View on each. It ends
// when ctx does.
func (p *Presenter) Watch(ctx context.Context) <-chan struct{} {
	events, cancel := p.b.Subscribe(true)
	go func() {
		defer cancel()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-events:
				if !ok {
					return
				}
				if e.Type == backend.CardPending && e.Card != nil {
					p.mu.Lock()
					p.ui.HiddenCards = nil // a new card brings the stack back
					p.mu.Unlock()
				}
				p.tick()
			}
		}
	}()
	return p.changed
}

func (p *Presenter) tick() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// SetWall replaces the machine's wall status (the app checks again after a change).
func (p *Presenter) SetWall(st sandbox.Status) {
	p.mu.Lock()
	p.opts.Wall = st
	p.mu.Unlock()
	p.tick()
}

// State reads everything the views show now.
func (p *Presenter) State() State {
	p.mu.Lock()
	ui := p.ui.clone()
	wall := p.opts.Wall
	p.mu.Unlock()
	s := State{
		Settings: p.b.Settings(), Native: p.opts.Native, Wall: wall, Cards: p.b.Cards(), Sites: p.b.Sites(),
		Home: p.opts.Home, AuditLog: p.opts.AuditLog, Now: p.opts.Now(), UI: ui,
	}
	for _, ss := range p.b.Sessions() {
		w, r := ss.Folders()
		info := Session{ID: ss.ID, Writable: w, ReadOnly: r, Enforcement: ss.Enforcement, Network: string(ss.Network), Started: ss.Started, LocalServers: ss.LocalServers()}
		info.Access, _ = p.b.Access(ss.ID)
		s.Sessions = append(s.Sessions, info)
	}
	s.Toolchains = toolchains(s.Settings.Settings, p.opts.Home, p.opts.Exists)
	if p.opts.Links != nil {
		s.Links = p.opts.Links()
	}
	if p.opts.Logins != nil {
		l := p.opts.Logins.List()
		s.Logins, s.Added, s.LoginsNote, s.HasLogins = l.Catalog, l.Added, l.Note, true
		_, s.SSHKeysChoice = p.opts.Logins.(SSHKeys)
		_, s.SecretsChoice = p.opts.Logins.(Secrets)
	}
	return s
}

// View is what the app shows now.
func (p *Presenter) View() view.App { return Build(p.State()) }

// toolchains are the known toolchains this machine has, and the folders the person added.
func toolchains(s *config.Settings, home string, exists func(string) bool) []Toolchain {
	var out []Toolchain
	for _, name := range config.KnownToolchains() {
		on := slices.Contains(s.Toolchains, name)
		if on || (home != "" && exists(filepath.Join(home, name))) {
			out = append(out, Toolchain{Path: name, On: on})
		}
	}
	for _, t := range s.Toolchains {
		if !slices.Contains(config.KnownToolchains(), t) {
			out = append(out, Toolchain{Path: t, On: true, Added: true})
		}
	}
	return out
}

// ErrNoLogins is an action on shared logins when the app has none.
var ErrNoLogins = errors.New("shared logins are not available in this build of the app")

// Dispatch carries out one action of the person's: the backend call it stands for, or a
// change of what the app shows. The error (also shown in the window it came from) says what
// went wrong in words the person can act on.
func (p *Presenter) Dispatch(a view.Action) error {
	err := p.dispatch(a)
	p.mu.Lock()
	p.ui.Error = ""
	if err != nil {
		p.ui.Error = err.Error()
	}
	p.mu.Unlock()
	p.tick()
	return err
}

func (p *Presenter) dispatch(a view.Action) error {
	switch a := a.(type) {
	case ShowWindow:
		p.mu.Lock()
		defer p.mu.Unlock()
		id := a.ID
		if a.ID == AllowWindow || a.ID == PublishWindow {
			id = a.ID + ":" + a.Session
		}
		if a.ID == SitesWindow {
			p.ui.SitesSession = a.Session
		}
		if a.ID == CardsWindow {
			p.ui.HiddenCards = nil
			return nil
		}
		if a.ID == AddFileWindow && !slices.Contains(p.ui.Open, id) {
			p.ui.FilePath, p.ui.FileHosts, p.ui.FileMessage, p.ui.FileLabel = "", "", "", config.LabelCredential
		}
		p.ui.Open = slices.DeleteFunc(p.ui.Open, func(o string) bool { return o == id })
		p.ui.Open = append(p.ui.Open, id)
		return nil
	case CloseWindow:
		p.mu.Lock()
		defer p.mu.Unlock()
		if a.ID == CardsWindow {
			p.ui.CardsFocused = false
			p.ui.HiddenCards = nil
			for _, c := range p.b.Cards() {
				p.ui.HiddenCards = append(p.ui.HiddenCards, c.ID)
			}
			return nil
		}
		p.ui.Open = slices.DeleteFunc(p.ui.Open, func(o string) bool { return o == a.ID })
		if strings.HasPrefix(a.ID, AllowWindow+":") {
			delete(p.ui.AllowText, strings.TrimPrefix(a.ID, AllowWindow+":"))
		}
		if strings.HasPrefix(a.ID, PublishWindow+":") {
			delete(p.ui.PublishText, strings.TrimPrefix(a.ID, PublishWindow+":"))
		}
		return nil
	case FocusCards:
		p.mu.Lock()
		p.ui.CardsFocused = true
		p.mu.Unlock()
		return nil
	case AnswerCard:
		_, err := p.b.Answer(a.ID, a.Answer)
		// The next card has no default button until the person clicks into the stack again:
		// a Return pressed twice answers one card, not two.
		p.mu.Lock()
		p.ui.CardsFocused = false
		p.mu.Unlock()
		return err
	case TickGroup:
		return p.b.Tick(a.ID)
	case UntickGroup:
		return p.b.Untick(a.ID)
	case EditSite:
		p.mu.Lock()
		p.ui.SiteText, p.ui.SiteMessage = a.Text, siteMessage(a.Text)
		p.mu.Unlock()
		return nil
	case AddSite:
		site := strings.TrimSpace(a.Site)
		if msg := siteMessage(site); msg != "" || site == "" {
			p.mu.Lock()
			p.ui.SiteText, p.ui.SiteMessage = a.Site, msg
			p.mu.Unlock()
			if site == "" {
				return nil
			}
			return errors.New(msg)
		}
		if err := p.b.AddSite(site); err != nil {
			return err
		}
		p.mu.Lock()
		p.ui.SiteText, p.ui.SiteMessage = "", ""
		p.mu.Unlock()
		return nil
	case RemoveSite:
		return p.b.RemoveSite(a.Site)
	case EditAllow:
		p.mu.Lock()
		if p.ui.AllowText == nil {
			p.ui.AllowText = map[string]string{}
		}
		p.ui.AllowText[a.Session] = a.Text
		p.mu.Unlock()
		return nil
	case AllowForSession:
		site := strings.TrimSpace(a.Site)
		if msg := siteMessage(site); msg != "" || site == "" {
			p.mu.Lock()
			if p.ui.AllowText == nil {
				p.ui.AllowText = map[string]string{}
			}
			p.ui.AllowText[a.Session] = a.Site
			p.mu.Unlock()
			if site == "" {
				return nil
			}
			return errors.New(msg)
		}
		if err := p.b.AllowForSession(a.Session, site); err != nil {
			return err
		}
		p.mu.Lock()
		delete(p.ui.AllowText, a.Session)
		p.ui.Open = slices.DeleteFunc(p.ui.Open, func(o string) bool { return o == AllowWindow+":"+a.Session })
		p.mu.Unlock()
		return nil
	case Revoke:
		return p.b.Revoke(a.Session, a.Site)
	case EditPublish:
		p.mu.Lock()
		if p.ui.PublishText == nil {
			p.ui.PublishText = map[string]string{}
		}
		p.ui.PublishText[a.Session] = a.Text
		p.mu.Unlock()
		return nil
	case PublishPort:
		port, msg := portOf(a.Port)
		if msg != "" {
			p.mu.Lock()
			if p.ui.PublishText == nil {
				p.ui.PublishText = map[string]string{}
			}
			p.ui.PublishText[a.Session] = a.Port
			p.mu.Unlock()
			if strings.TrimSpace(a.Port) == "" {
				return nil
			}
			return errors.New(msg)
		}
		if err := p.b.SetPublish(a.Session, port, true); err != nil {
			return err
		}
		p.mu.Lock()
		delete(p.ui.PublishText, a.Session)
		p.ui.Open = slices.DeleteFunc(p.ui.Open, func(o string) bool { return o == PublishWindow+":"+a.Session })
		p.mu.Unlock()
		return nil
	case Unpublish:
		return p.b.SetPublish(a.Session, a.Port, false)
	case SetLocalServers:
		return p.b.SetLocalServers(a.Session, a.On)
	case CheckMachine:
		return p.checkMachine()
	case SetProvider:
		p.mu.Lock()
		p.ui.FirstLaunch = false // the person chose
		p.mu.Unlock()
		return p.settings().SetProvider(a.Provider)
	case SetNetwork:
		return p.settings().SetNetworkProfile(a.Profile)
	case SetApprovals:
		return p.settings().SetApprovals(a.Mode)
	case SetGitMetadata:
		return p.settings().SetGitMetadata(a.Mode)
	case SetToolchain:
		return p.settings().SetToolchain(a.Path, a.On)
	case AddToolchain:
		rel, err := underHome(p.opts.Home, a.Path)
		if err != nil {
			return err
		}
		return p.settings().SetToolchain(rel, true)
	case AddLogin:
		if p.opts.Logins == nil {
			return ErrNoLogins
		}
		return p.opts.Logins.AddCatalog(a.Name)
	case SetLoginEnabled:
		if p.opts.Logins == nil {
			return ErrNoLogins
		}
		return p.opts.Logins.SetEnabled(a.Key, a.On)
	case RemoveLogin:
		if p.opts.Logins == nil {
			return ErrNoLogins
		}
		return p.opts.Logins.Remove(a.Key)
	case AddSSHLogin:
		k, ok := p.opts.Logins.(SSHKeys)
		if !ok {
			return ErrNoLogins
		}
		return k.AddSSH(a.Keys)
	case SetSSHKeys:
		k, ok := p.opts.Logins.(SSHKeys)
		if !ok {
			return ErrNoLogins
		}
		return k.SetSSHKeys(a.Mode)
	case AddLoginSecrets:
		k, ok := p.opts.Logins.(Secrets)
		if !ok {
			return ErrNoLogins
		}
		return k.AddLoginSecrets(a.Name, a.Secrets)
	case SetSecrets:
		k, ok := p.opts.Logins.(Secrets)
		if !ok {
			return ErrNoLogins
		}
		return k.SetSecrets(a.Name, a.Mode)
	case SetFilePath:
		rel, err := underHome(p.opts.Home, a.Path)
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			p.ui.FilePath, p.ui.FileMessage = "", err.Error()
			return err
		}
		p.ui.FilePath, p.ui.FileMessage = "~/"+rel, ""
		return nil
	case SetFileLabel:
		p.mu.Lock()
		p.ui.FileLabel = a.Label
		p.mu.Unlock()
		return nil
	case EditFileHost:
		p.mu.Lock()
		p.ui.FileHosts = a.Text
		_, p.ui.FileMessage = parseHostList(a.Text)
		p.mu.Unlock()
		return nil
	case AddFile:
		return p.addFile()
	case nil:
		return nil
	case view.Quit, view.OpenPath, view.OpenURL, view.PickPath, view.CopyText:
		return fmt.Errorf("%T is the shell's to carry out, not the presenter's", a)
	}
	return fmt.Errorf("the app does not know the action %T", a)
}

// checkMachine opens Check this Mac… and runs the check in the background; the window shows
// it running, then its lines. A check already running is not started twice.
func (p *Presenter) checkMachine() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ui.Open = slices.DeleteFunc(p.ui.Open, func(o string) bool { return o == CheckWindow })
	p.ui.Open = append(p.ui.Open, CheckWindow)
	if p.ui.Check.Running {
		return nil
	}
	if p.opts.CheckMachine == nil {
		p.ui.Check = Check{Error: "this build of the app cannot check the machine; run openworker sandbox check --report FILE in a terminal"}
		return nil
	}
	p.ui.Check = Check{Running: true}
	run := p.opts.CheckMachine
	go func() {
		// The check takes a few minutes at most (its own timeout); the app waits for it.
		c, err := run(context.Background())
		if err != nil {
			c = Check{Error: err.Error(), Report: c.Report, ReportPath: c.ReportPath, Lines: c.Lines}
		}
		c.Running = false
		p.mu.Lock()
		p.ui.Check = c
		p.mu.Unlock()
		p.tick()
	}()
	return nil
}

func (p *Presenter) addFile() error {
	if p.opts.Logins == nil {
		return ErrNoLogins
	}
	p.mu.Lock()
	path, label, text := p.ui.FilePath, p.ui.FileLabel, p.ui.FileHosts
	p.mu.Unlock()
	if path == "" {
		return errors.New("choose a file or folder under your home folder first")
	}
	list, msg := parseHostList(text)
	if msg != "" {
		return errors.New(msg)
	}
	if err := p.opts.Logins.AddPath(path, label, list); err != nil {
		p.mu.Lock()
		p.ui.FileMessage = err.Error()
		p.mu.Unlock()
		return err
	}
	p.mu.Lock()
	p.ui.Open = slices.DeleteFunc(p.ui.Open, func(o string) bool { return o == AddFileWindow })
	p.ui.FilePath, p.ui.FileHosts, p.ui.FileMessage = "", "", ""
	p.mu.Unlock()
	return nil
}

func (p *Presenter) settings() SettingsEditor {
	if p.opts.Settings == nil {
		return noEditor{}
	}
	return p.opts.Settings
}

type noEditor struct{}

var errNoEditor = errors.New("this build of the app cannot change the settings; edit the settings file instead (openworker config show says where)")

func (noEditor) SetProvider(string) error        { return errNoEditor }
func (noEditor) SetNetworkProfile(string) error  { return errNoEditor }
func (noEditor) SetApprovals(string) error       { return errNoEditor }
func (noEditor) SetGitMetadata(string) error     { return errNoEditor }
func (noEditor) SetToolchain(string, bool) error { return errNoEditor }

// siteMessage is what is wrong with a site as typed: the settings file's rules and words
// (hosts.Parse, which the file's sandbox_network_hosts uses too); "" when nothing is wrong or
// nothing is typed yet.
func siteMessage(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	if _, err := hosts.Parse(text); err != nil {
		return err.Error()
	}
	return ""
}

// parseHostList reads hosts typed with commas or spaces between them.
func parseHostList(text string) ([]string, string) {
	var out []string
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		e, err := hosts.Parse(f)
		if err != nil {
			return nil, err.Error()
		}
		out = append(out, e.String())
	}
	return out, ""
}

// underHome is path relative to the home folder, or why it cannot be shared.
func underHome(home, path string) (string, error) {
	if home == "" {
		return "", errors.New("the home folder is not known, so no folder of it can be added")
	}
	p := filepath.Clean(path)
	if strings.HasPrefix(path, "~/") {
		p = filepath.Join(home, path[2:])
	}
	rel, err := filepath.Rel(home, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%s is not inside your home folder (%s); only files and folders under it can be added", path, home)
	}
	return filepath.ToSlash(rel), nil
}
