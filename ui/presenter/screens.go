package presenter

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openworker/openworker/core/approvals"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tcc"
	"github.com/openworker/openworker/ui/view"
)

// The status icon's states.
const (
	IconOff       = "off"
	IconAllowList = "allowlist"
	IconOpen      = "open"
	IconRefused   = "refused"
	IconAttention = "attention"
)

// BundledIcon is the template image in the app's Resources, for when an SF Symbol is missing.
const BundledIcon = "StatusIconTemplate"

// Build is what the app shows in state s.
func Build(s State) view.App {
	return view.App{Icon: Icon(s), Menu: Menu(s), Windows: Windows(s), Busy: busy(s)}
}

// busy is why the app must keep working at full speed in the background, for its whole life:
// a running session's commands go through its proxy and its agent waits on its API, and with
// none running, the CLI, an MCP server's attach and the first session start wait on the local
// API, which a napping app answers late.
func busy(s State) string {
	switch n := len(s.Sessions); n {
	case 0:
		return "OpenWorker serves the local API that the CLI and agents' MCP servers start sessions through"
	case 1:
		return "OpenWorker is the proxy and API of a running session"
	default:
		return fmt.Sprintf("OpenWorker is the proxy and API of %d running sessions", n)
	}
}

// machine says how the machine's sessions are walled in: one of the icon states but
// attention, and why sessions are refused.
func machine(s State) (state, why string) {
	in := s.Settings
	if in.NoLastGood {
		return IconRefused, "the settings file has problems and no earlier version of it was valid, so which sandbox this machine uses is not known"
	}
	switch p := sandbox.Enforcement(in.Settings.Provider); {
	case p == sandbox.Direct || p == "":
		return IconOff, ""
	case p != s.Native:
		return IconRefused, fmt.Sprintf("sandbox_provider is %q, which is not a sandbox on this machine", p)
	case !s.Wall.OK:
		why = s.Wall.Reason
		if why == "" {
			why = "the sandbox cannot start here"
		}
		return IconRefused, why
	case in.Settings.NetworkProfile == config.NetworkOpen:
		return IconOpen, ""
	}
	return IconAllowList, ""
}

// shortReason is the first clause of a refusal's reason, for a tooltip or a menu line.
func shortReason(why string) string {
	if i := strings.Index(why, ": "); i > 0 {
		why = why[:i]
	}
	if i := strings.Index(why, "; "); i > 0 {
		why = why[:i]
	}
	return upperFirst(why)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// statusLine is the menu's first line , which says how the machine's sessions are walled in.
func statusLine(s State) string {
	switch st, _ := machine(s); st {
	case IconOff:
		return "Sandbox off — commands run directly"
	case IconOpen:
		return "Sandbox on — any site (network open)"
	case IconAllowList:
		return "Sandbox on — only the sites you allow"
	default:
		return "Sessions are refused — the sandbox cannot start"
	}
}

// menuReason is a refusal's reason short enough for one menu line.
func menuReason(why string) string {
	why = shortReason(why)
	if i := strings.Index(why, ", "); i > 0 {
		why = why[:i]
	}
	return why
}

// Icon is the status item in state s.
func Icon(s State) view.StatusIcon {
	st, why := machine(s)
	icon := view.StatusIcon{State: st, Image: BundledIcon}
	switch st {
	case IconOff:
		icon.Symbol = "shield.slash"
		icon.Tooltip = "OpenWorker: sandbox off, commands run directly as they always have. Nothing changes until you choose."
	case IconAllowList:
		icon.Symbol = "lock.shield"
		icon.Tooltip = "OpenWorker: sandbox on. Commands reach only their session's folders and " + plural(len(s.Settings.Settings.NetworkHosts), "site you allow", "sites you allow") + "."
	case IconOpen:
		icon.Symbol = "shield.lefthalf.fill"
		icon.Tooltip = "OpenWorker: sandbox on. Commands reach only their session's folders; the network is open."
	case IconRefused:
		icon.Symbol = "exclamationmark.shield"
		icon.Tooltip = "OpenWorker: sessions are refused. " + shortReason(why) + "."
	}
	if n := len(s.Cards); n > 0 {
		icon.State, icon.Symbol, icon.Badge = IconAttention, "hand.raised.fill", n
		icon.Tooltip = "OpenWorker: " + plural(n, "site is", "sites are") + " waiting for your answer. " + upperFirst(icon.Tooltip[len("OpenWorker: "):])
	}
	return icon
}

func nativeName(n sandbox.Enforcement) string {
	switch n {
	case sandbox.Seatbelt:
		return "macOS sandbox"
	case sandbox.Linux:
		return "Linux sandbox"
	}
	return "sandbox"
}

func enforcementName(e sandbox.Enforcement) string {
	if e == sandbox.Direct {
		return "no sandbox (direct)"
	}
	return nativeName(e)
}

// home writes a path under the home folder with "~".
func (s State) home(p string) string {
	if s.Home != "" {
		if rel, err := filepath.Rel(s.Home, p); err == nil && !strings.HasPrefix(rel, "..") {
			if rel == "." {
				return "~"
			}
			return "~/" + filepath.ToSlash(rel)
		}
	}
	return p
}

// homeText writes the home folder in a text as "~".
func (s State) homeText(text string) string {
	if s.Home == "" {
		return text
	}
	return strings.ReplaceAll(text, s.Home+"/", "~/")
}

func (s State) session(id string) (Session, bool) {
	for _, ss := range s.Sessions {
		if ss.ID == id {
			return ss, true
		}
	}
	return Session{}, false
}

// sessionName is what the person calls a session: its first folder's name.
func (s State) sessionName(id string) string {
	if ss, ok := s.session(id); ok && len(ss.Writable) > 0 {
		return filepath.Base(ss.Writable[0])
	}
	if ss, ok := s.session(id); ok && len(ss.ReadOnly) > 0 {
		return filepath.Base(ss.ReadOnly[0])
	}
	return "session " + id
}

// Menu is the status item's menu.
func Menu(s State) view.Menu {
	var m view.Menu
	add := func(items ...view.MenuItem) { m.Items = append(m.Items, items...) }
	sep := view.MenuItem{Separator: true}
	st, why := machine(s)
	add(view.MenuItem{Title: statusLine(s), Disabled: true})
	if st == IconRefused {
		add(view.MenuItem{Title: menuReason(why), Disabled: true, Indent: 1})
	}
	if s.Settings.Problems != nil {
		add(view.MenuItem{Title: "The settings file has problems: see Settings…", Disabled: true, Indent: 1})
	}
	if s.UI.FirstLaunch && st == IconOff && s.Native != "" {
		add(view.MenuItem{Title: "Turn on the " + nativeName(s.Native) + "…", Action: ShowWindow{ID: SettingsWindow}})
	}
	add(sep)
	if len(s.Sessions) == 0 {
		add(view.MenuItem{Title: "No sessions running", Disabled: true})
	} else {
		add(view.MenuItem{Title: "Sessions", Disabled: true})
		for _, ss := range s.Sessions {
			sub := s.sessionMenu(ss)
			title := s.sessionName(ss.ID)
			if len(ss.Access.FoldersRefused) > 0 {
				title += " — macOS refuses a folder"
			}
			add(view.MenuItem{Title: title, Submenu: &sub})
		}
	}
	if len(s.Cards) > 0 {
		add(sep, view.MenuItem{Title: "Waiting for your answer", Disabled: true})
		for _, c := range s.Cards {
			add(view.MenuItem{Title: c.Site + " — " + s.sessionName(c.Session), Action: ShowWindow{ID: CardsWindow}})
		}
	}
	add(sep, view.MenuItem{Title: "Settings…", Action: ShowWindow{ID: SettingsWindow}})
	audit := view.MenuItem{Title: "Open audit log", Disabled: s.AuditLog == ""}
	if s.AuditLog != "" {
		audit.Action = view.OpenPath{Path: s.AuditLog}
	}
	add(audit, sep, view.MenuItem{Title: "Quit OpenWorker", Action: view.Quit{}})
	return m
}

func (s State) networkWords(network string) string {
	if network == string(policy.Open) {
		return "any site (network open)"
	}
	return "only the sites allowed"
}

// tccWhere is where a guarded folder is allowed, short enough for a menu line (System
// Settings is understood); the tooltip and the session's notice say it in full.
const tccWhere = "Privacy & Security ▸ Files and Folders"

func (s State) sessionMenu(ss Session) view.Menu {
	var m view.Menu
	add := func(items ...view.MenuItem) { m.Items = append(m.Items, items...) }
	add(view.MenuItem{Title: "Folders", Disabled: true})
	// A folder macOS guards (Documents, Desktop, Downloads, iCloud Drive) that the person has
	// not allowed OpenWorker: its commands fail there with no report of the wall's. The
	// folder's line says so, or, for a guarded folder inside a session folder, a line of its
	// own; under it, where to allow it.
	refused := map[string]tcc.Refusal{}
	for _, r := range ss.Access.FoldersRefused {
		refused[r.Folder] = r
	}
	folder := func(f, how string) {
		r, ok := refused[f]
		if !ok {
			add(view.MenuItem{Title: s.home(f) + " — " + how, Disabled: true, Indent: 1})
			return
		}
		delete(refused, f)
		add(view.MenuItem{Title: s.home(f) + " — " + how + ", refused by macOS", Disabled: true, Indent: 1, Tooltip: r.Message},
			view.MenuItem{Title: "Allow it in " + tccWhere, Disabled: true, Indent: 2, Tooltip: r.Message})
	}
	for _, f := range ss.Writable {
		folder(f, "read and write")
	}
	for _, f := range ss.ReadOnly {
		folder(f, "read only")
	}
	for _, r := range ss.Access.FoldersRefused {
		if _, ok := refused[r.Folder]; ok {
			add(view.MenuItem{Title: s.home(r.Folder) + " — refused by macOS", Disabled: true, Indent: 1, Tooltip: r.Message},
				view.MenuItem{Title: "Allow it in " + tccWhere, Disabled: true, Indent: 2, Tooltip: r.Message})
		}
	}
	enf := enforcementName(ss.Enforcement)
	if ss.Enforcement != sandbox.Direct {
		enf += ", " + s.networkWords(ss.Network)
	}
	add(view.MenuItem{Separator: true}, view.MenuItem{Title: "Enforcement: " + enf, Disabled: true})
	if ss.Enforcement == sandbox.Seatbelt {
		// Seatbelt cannot tell a port the session opened from another program's: serving
		// on loopback opens them all, so it is the person's choice, per session.
		add(view.MenuItem{Title: "Local servers", Checked: ss.LocalServers, Action: SetLocalServers{Session: ss.ID, On: !ss.LocalServers}, Tooltip: localServersTip})
		if ss.LocalServers {
			add(view.MenuItem{Title: "Open: this Mac's loopback ports, other programs' too", Disabled: true, Indent: 1, Tooltip: localServersTip})
		}
		if s.Links != nil {
			// npm install and cargo build need them: say whether they work here.
			title := "Hard links and clones: denied (not proved on this Mac)"
			if s.Links.Probed && s.Links.Both {
				title = "Hard links and clones: allowed in its folders"
			}
			add(view.MenuItem{Title: title, Disabled: true, Tooltip: LinksLine(*s.Links) + "."})
		}
	}
	if ss.Enforcement == sandbox.Linux {
		// The sandbox has a loopback of its own: the switch publishes its servers' ports on
		// this machine's, and nothing in the wall changes.
		add(view.MenuItem{Title: "Local servers", Checked: ss.LocalServers, Action: SetLocalServers{Session: ss.ID, On: !ss.LocalServers}, Tooltip: publishTip})
	}
	add(publishedItems(ss.Access.Published)...)
	if !ss.Started.IsZero() {
		add(view.MenuItem{Title: "Started " + ago(s.Now, ss.Started), Disabled: true})
	}
	access := s.accessMenu(ss)
	add(view.MenuItem{Title: "Access", Submenu: &access})
	return m
}

// publishTip says what the local-servers switch does where the sandbox has a loopback of its
// own.
const publishTip = "Publishes each port a server in the session listens on, on this machine's 127.0.0.1 (the same port, or the next free one) while it listens, " +
	"so that your browser reaches it. Only this machine's loopback can connect in; nothing inside reaches this machine through it."

// publishedItems are the session's servers this machine reaches, each opened in the browser
// from its item, and the ports asked for that nothing listens at yet. The address is made
// of port numbers only: nothing a command wrote.
func publishedItems(ps []backend.Published) []view.MenuItem {
	var items []view.MenuItem
	for _, p := range ps {
		if p.HostPort == 0 {
			items = append(items, view.MenuItem{Title: fmt.Sprintf("Port %d: nothing listens there yet", p.Port), Disabled: true, Indent: 1,
				Tooltip: fmt.Sprintf("Port %d is published on this machine's 127.0.0.1 once a server in the session listens there.", p.Port)})
			continue
		}
		title := fmt.Sprintf("Open 127.0.0.1:%d", p.HostPort)
		tip := fmt.Sprintf("A server in the session listens on port %d; this machine reaches it at 127.0.0.1:%d while it listens.", p.Port, p.HostPort)
		if p.HostPort != p.Port {
			title += fmt.Sprintf(" (port %d inside)", p.Port)
			tip += fmt.Sprintf(" Port %d was taken here.", p.Port)
		}
		items = append(items, view.MenuItem{Title: title, Indent: 1, Tooltip: tip, Action: view.OpenURL{URL: fmt.Sprintf("http://127.0.0.1:%d/", p.HostPort)}})
	}
	return items
}

// localServersTip says what the local-servers switch opens, and what turning it costs.
const localServersTip = "Lets the session's commands run servers (go test with httptest, dev servers) and connect to loopback ports. " +
	"A server may listen on every address, but it takes only connections made on this Mac's loopback, none from the network. " +
	"macOS cannot tell the session's ports from other programs', so it also reaches your own local services (databases, dev servers) on this Mac. " +
	"Switching restarts the session's shell."

func (s State) accessMenu(ss Session) view.Menu {
	var m view.Menu
	add := func(items ...view.MenuItem) { m.Items = append(m.Items, items...) }
	if ss.Enforcement == sandbox.Direct {
		// A direct session's commands get the proxy too, but nothing holds them to it.
		add(view.MenuItem{Title: "No wall: only programs that use the proxy keep to this list", Disabled: true})
	} else if ss.Network == string(policy.Open) {
		add(view.MenuItem{Title: "Every site: the network is open", Disabled: true})
	}
	if len(ss.Access.Sites) == 0 && ss.Network != string(policy.Open) {
		add(view.MenuItem{Title: "No sites yet", Disabled: true})
	}
	// Sites from Settings and from shared logins are changed there: they are listed under a
	// header, greyed; Session only sites carry the mark and can be revoked here.
	for _, from := range []struct{ source, header, tip string }{
		{backend.FromSettings, "From Settings", "The machine's sites: change them in Settings ▸ Sandbox ▸ Choose sites…"},
		{backend.FromLogin, "From shared logins", "The hosts of a shared login: switch the login off in Settings ▸ Sandbox"},
	} {
		first := true
		for _, site := range ss.Access.Sites {
			if site.Source != from.source {
				continue
			}
			if first {
				add(view.MenuItem{Title: from.header, Disabled: true, Tooltip: from.tip})
				first = false
			}
			add(view.MenuItem{Title: site.Site, Disabled: true, Indent: 1, Tooltip: from.tip})
		}
	}
	for _, site := range ss.Access.Sites {
		if site.Source == backend.SessionOnly {
			sub := view.Menu{Items: []view.MenuItem{{Title: "Revoke", Action: Revoke{Session: ss.ID, Site: site.Site}}}}
			add(view.MenuItem{Title: site.Site + " — Session only", Submenu: &sub, Tooltip: "Allowed for this session only; it ends with the session"})
		}
	}
	for _, d := range ss.Access.Denied {
		sub := view.Menu{Items: []view.MenuItem{{Title: "Allow for this session", Action: AllowForSession{Session: ss.ID, Site: d}}}}
		add(view.MenuItem{Title: d + " — denied", Submenu: &sub})
	}
	// SSH answers, each for its kind of signature: the session's, then those always allowed
	// (changed with the ssh login in Settings ▸ Sandbox).
	for i, a := range ss.Access.SSH {
		if i == 0 {
			add(view.MenuItem{Title: "SSH signatures allowed", Disabled: true})
		}
		mark := " — Session only"
		if a.Source != backend.SessionOnly {
			mark = " — always"
		}
		add(view.MenuItem{Title: "SSH " + a.String() + mark, Disabled: true, Indent: 1})
	}
	add(view.MenuItem{Separator: true},
		view.MenuItem{Title: "Allow another site…", Action: ShowWindow{ID: AllowWindow, Session: ss.ID}},
		view.MenuItem{Title: "Choose sites…", Action: ShowWindow{ID: SitesWindow, Session: ss.ID}})
	if ss.Enforcement == sandbox.Linux {
		// Its servers are on a loopback of its own: a port is published on this machine's.
		add(view.MenuItem{Separator: true})
		for _, p := range ss.Access.Published {
			if !p.Asked {
				continue
			}
			sub := view.Menu{Items: []view.MenuItem{{Title: "Stop publishing", Action: Unpublish{Session: ss.ID, Port: p.Port}}}}
			add(view.MenuItem{Title: fmt.Sprintf("Port %d — published", p.Port), Submenu: &sub, Tooltip: "Published on this machine's 127.0.0.1 while a server in the session listens there"})
		}
		add(view.MenuItem{Title: "Publish a port…", Action: ShowWindow{ID: PublishWindow, Session: ss.ID},
			Tooltip: "Publishes one port of the session's own loopback on this machine's 127.0.0.1 while a server listens there, with local servers off too."})
	}
	return m
}

// Windows are the app's windows in state s: the card stack while cards wait (unless the
// person closed it), then the windows the person opened.
func Windows(s State) []view.Window {
	var out []view.Window
	visible := false
	for _, c := range s.Cards {
		if !slices.Contains(s.UI.HiddenCards, c.ID) {
			visible = true
		}
	}
	if visible {
		out = append(out, CardStack(s))
	}
	for _, id := range s.UI.Open {
		switch {
		case id == SettingsWindow:
			out = append(out, SettingsSandbox(s))
		case id == SitesWindow:
			out = append(out, ChooseSites(s))
		case id == AddFileWindow:
			out = append(out, AddFileForm(s))
		case id == CheckWindow:
			out = append(out, CheckMachineWindow(s))
		case strings.HasPrefix(id, AllowWindow+":"):
			out = append(out, AllowAnother(s, strings.TrimPrefix(id, AllowWindow+":")))
		case strings.HasPrefix(id, PublishWindow+":"):
			out = append(out, PublishAnother(s, strings.TrimPrefix(id, PublishWindow+":")))
		}
	}
	if s.UI.Error != "" && len(out) > 0 {
		// What went wrong shows in the window in front, where the person just acted.
		w := &out[len(out)-1]
		w.Body = view.Stack{Children: []view.Node{w.Body, view.Label{Text: s.UI.Error, Style: view.Secondary}}}
	}
	return out
}

// answerOrder is the buttons of a card from left to right: Deny apart at the left, the
// least-opening answer at the right, where the default button sits on a Mac.
var answerOrder = []approvals.Answer{approvals.Deny, approvals.Always, approvals.Session, approvals.Once}

func answerTitle(kind string, a approvals.Answer) string {
	switch a {
	case approvals.Once:
		return "Once"
	case approvals.Session:
		if kind == string(approvals.Fetch) {
			return "This session"
		}
		return "Allow for this session"
	case approvals.Always:
		return "Always allow"
	case approvals.Deny:
		return "Deny"
	}
	return string(a)
}

// CardStack is every pending card in one floating panel, oldest first.
func CardStack(s State) view.Window {
	n := len(s.Cards)
	title := "A site is waiting for your answer"
	if n == 1 && approvals.Kind(s.Cards[0].Kind).SSH() {
		title = "A signature with your SSH key is waiting for your answer"
	}
	if n > 1 {
		title = fmt.Sprintf("%d sites are waiting for your answer", n)
	}
	var body []view.Node
	for i, c := range s.Cards {
		if i > 0 {
			body = append(body, view.Separator{})
		}
		body = append(body, s.card(c, i == 0 && s.UI.CardsFocused))
	}
	return view.Window{ID: CardsWindow, Kind: view.Card, Title: title, Width: 460,
		Body: view.Stack{Children: body}, OnClose: CloseWindow{ID: CardsWindow}, OnFocus: FocusCards{}}
}

func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return plural(int(d/time.Minute), "minute", "minutes") + " ago"
	}
	return plural(int(d/time.Hour), "hour", "hours") + " ago"
}

func (s State) card(c backend.CardInfo, focused bool) view.Node {
	what := "A command in the sandbox"
	if c.Kind == string(approvals.Fetch) {
		what = "The coworker's web fetch"
	}
	ss, _ := s.session(c.Session)
	sessionLine := "Session: " + s.sessionName(c.Session)
	if ss.Enforcement != "" {
		sessionLine += " (" + enforcementName(ss.Enforcement) + ")"
	}
	reason := "The coworker gave no reason."
	if r := strings.TrimSpace(c.Reason); r != "" {
		reason = "“" + r + "”"
	}
	var blocked string
	switch {
	case !c.Blocked.IsZero():
		blocked = "The sandbox blocked it at " + c.Blocked.In(s.Now.Location()).Format("15:04") + " (" + ago(s.Now, c.Blocked) + ")"
		if c.BlockedCommand != "" {
			blocked += ", while running “" + c.BlockedCommand + "”"
		}
		blocked += "."
	case c.Kind == string(approvals.Fetch):
		blocked = "Web fetches run in OpenWorker and follow the same list. Once is this fetch only; This session and Always allow also open the site to the session's commands."
	default:
		blocked = "The sandbox has not blocked it yet: the coworker asks ahead."
	}
	children := []view.Node{
		view.Label{Text: what + " wants to reach", Style: view.Secondary},
		view.Label{Text: c.Site, Style: view.Headline},
		view.Label{Text: reason},
		view.Label{Text: blocked, Style: view.Secondary},
	}
	if approvals.Kind(c.Kind).SSH() {
		// The card's text is the agent's question, not a coworker's reason. An answer holds
		// for its kind of signature only, which the card says.
		asks, holds := "OpenWorker's SSH agent asks to sign in to a server", "An answer holds for logins to this server only, never for signing data."
		if approvals.Kind(c.Kind) == approvals.SSHSigning {
			asks, holds = "OpenWorker's SSH agent asks to sign data for", "An answer holds for signatures for this only, never for a login to a server."
		}
		children = []view.Node{
			view.Label{Text: asks, Style: view.Secondary},
			view.Label{Text: c.Site, Style: view.Headline},
			view.Label{Text: c.Reason},
			view.Label{Text: "Your key stays outside the sandbox; this allows its signature, not a copy. " + holds + " The allow list still decides where the connection may go.", Style: view.Secondary},
		}
		if c.BlockedCommand != "" {
			children = append(children, view.Label{Text: "Asked while running “" + c.BlockedCommand + "”.", Style: view.Secondary})
		}
	}
	if c.Askers > 1 {
		children = append(children, view.Label{Text: fmt.Sprintf("Asked %d times; one answer serves them all.", c.Askers), Style: view.Secondary})
	}
	children = append(children, view.Label{Text: sessionLine, Style: view.Secondary})
	var buttons []view.Node
	primary := approvals.Session
	if c.Kind == string(approvals.Fetch) {
		primary = approvals.Once
	}
	for _, a := range answerOrder {
		if !slices.Contains(c.Answers, string(a)) {
			continue
		}
		b := view.Button{Title: answerTitle(c.Kind, a), Action: AnswerCard{ID: c.ID, Answer: string(a)}}
		switch a {
		case approvals.Deny:
			b.Role = view.Destructive
		case primary:
			b.Role = view.Primary
			if focused {
				b.Default, b.Key = true, view.KeyReturn
			}
		}
		buttons = append(buttons, b)
	}
	children = append(children, view.Stack{Axis: view.Horizontal, Align: view.Trailing, Children: buttons})
	return view.Stack{Children: children}
}

// SettingsSandbox is Settings ▸ Sandbox.
func SettingsSandbox(s State) view.Window {
	set := s.Settings.Settings
	st, why := machine(s)
	var body []view.Node
	if s.Settings.Problems != nil {
		msg := "The settings file has problems, so the last good settings are in force; changes made here wait until it is fixed."
		if s.Settings.NoLastGood {
			msg = "The settings file has problems and was never valid, so sessions that follow it are refused until it is fixed."
		}
		body = append(body, view.Label{Text: msg}, view.Label{Text: s.homeText(s.Settings.Problems.Error()), Style: view.Monospace})
	}

	native := view.RadioOption{Title: nativeName(s.Native), Selected: set.Provider == string(s.Native) && s.Native != "",
		Detail: "Commands reach only their session's folders, and the network as chosen below.", Action: SetProvider{Provider: string(s.Native)}}
	if s.Native == "" {
		native.Title, native.Disabled, native.Detail, native.Action = "Sandbox", true, "There is no sandbox on this system.", nil
	}
	provider := []view.Node{view.Radio{Options: []view.RadioOption{
		native,
		{Title: "Run commands directly", Selected: set.Provider == string(sandbox.Direct) || set.Provider == "",
			Detail: "As OpenWorker always has, with your files and network. This is the default.", Action: SetProvider{Provider: string(sandbox.Direct)}},
	}}}
	if st == IconRefused {
		// Body, not secondary: it is why nothing runs, and the person must not miss it.
		provider = append(provider, view.Label{Text: "Sessions are refused: " + upperFirst(why) + "."})
	}
	body = append(body, view.Section{Title: "Commands", Children: provider})

	chosen := "No sites chosen yet: commands have no network."
	if n := len(set.NetworkHosts); n > 0 {
		chosen = plural(n, "site", "sites") + " chosen."
	}
	body = append(body, view.Section{Title: "Network", Children: []view.Node{
		view.Radio{Options: []view.RadioOption{
			{Title: "Only the sites you allow", Detail: "Commands reach only the sites you choose; the proxy refuses any other and names it.", Selected: set.NetworkProfile != config.NetworkOpen, Action: SetNetwork{Profile: config.NetworkAllowlist}},
			{Title: "Allow everything", Detail: "Any site, with no proxy. The files are still the wall.", Selected: set.NetworkProfile == config.NetworkOpen, Action: SetNetwork{Profile: config.NetworkOpen}},
		}},
		view.Stack{Axis: view.Horizontal, Children: []view.Node{
			view.Button{Title: "Choose sites…", Action: ShowWindow{ID: SitesWindow}},
			view.Label{Text: chosen, Style: view.Secondary},
		}},
	}})

	body = append(body, view.Section{Title: "Approvals", Children: []view.Node{view.Radio{Options: []view.RadioOption{
		{Title: "Ask me", Detail: "A site that is not allowed asks you first, on a card.", Selected: set.Approvals != config.ApprovalsFullAccess, Action: SetApprovals{Mode: config.ApprovalsAsk}},
		{Title: "Full access", Detail: "No cards: a site that is not allowed is refused, and you add it here yourself.", Selected: set.Approvals == config.ApprovalsFullAccess, Action: SetApprovals{Mode: config.ApprovalsFullAccess}},
	}}}})

	writable := set.GitMetadata == config.GitMetadataWritable
	mode := config.GitMetadataWritable
	if writable {
		mode = config.GitMetadataProtected
	}
	body = append(body, view.Section{Title: "Repositories", Children: []view.Node{
		view.Switch{Title: "Let commands change git hooks and repository settings", On: writable, Action: SetGitMetadata{Mode: mode}},
	}, Footer: "Off: each repository's .git/hooks and .git/config stay read-only inside, because your own git runs and obeys them outside the sandbox. " +
		"On, a command can plant a hook or a setting such as core.fsmonitor that runs the next time you use git there."})

	var tools []view.Node
	for _, t := range s.Toolchains {
		tools = append(tools, view.Switch{Title: "~/" + t.Path, On: t.On, Action: SetToolchain{Path: t.Path, On: !t.On}})
	}
	if len(s.Toolchains) == 0 {
		tools = append(tools, view.Label{Text: "None of the known toolchains is in your home folder.", Style: view.Secondary})
	}
	tools = append(tools, view.Stack{Axis: view.Horizontal, Children: []view.Node{view.Button{Title: "Add a folder…",
		Action: view.PickPath{Prompt: "Make readable", Folders: true, Then: AddToolchain{}}}}})
	body = append(body, view.Section{Title: "Developer toolchains", Children: tools,
		Footer: "Read only inside the sandbox. Offered when they are in your home folder; all off until you switch one on. Git's settings (~/.gitconfig, ~/.config/git) are always readable."})

	if s.Native != "" {
		body = append(body, machineSection(s))
	}
	body = append(body, loginsSection(s))
	return view.Window{ID: SettingsWindow, Title: "Sandbox", Width: 580, Body: view.Stack{Children: body}, OnClose: CloseWindow{ID: SettingsWindow}}
}

// machineWord is what the person calls this machine: "this Mac" where the sandbox is macOS's.
func (s State) machineWord() string {
	if s.Native == sandbox.Seatbelt {
		return "this Mac"
	}
	return "this machine"
}

// checkTitle is the check's menu and button title.
func (s State) checkTitle() string { return "Check " + s.machineWord() + "…" }

// LinksLine is the link probe's answer as one line.
func LinksLine(l Links) string {
	switch {
	case l.Probed && l.Both:
		return "Hard links and clones: allowed inside the session's folders (checked on this Mac)"
	case l.Probed:
		return "Hard links and clones: denied: " + l.Why + ". npm's links are made copies; cargo build fails"
	}
	return "Hard links and clones: denied until Check this Mac… proves that macOS checks both ends of each. npm's links are made copies meanwhile; cargo build fails"
}

// machineSection is Settings ▸ Sandbox's part about what this machine's sandbox does: on a
// Mac the link probe's answer and each running session's local-servers switch; and the
// check, which runs real programs behind the wall and makes a report to send.
func machineSection(s State) view.Node {
	var rows []view.Node
	if s.Links != nil {
		rows = append(rows, view.Label{Text: LinksLine(*s.Links)})
	}
	footer := "The check runs real programs behind the sandbox, as a session gets it, and says which work; its report holds no file contents and no environment values."
	if s.Native == sandbox.Seatbelt {
		running := false
		for _, ss := range s.Sessions {
			if ss.Enforcement != sandbox.Seatbelt {
				continue
			}
			running = true
			rows = append(rows, view.Switch{Title: "Local servers for " + s.sessionName(ss.ID), On: ss.LocalServers,
				Action: SetLocalServers{Session: ss.ID, On: !ss.LocalServers}})
		}
		if !running {
			rows = append(rows, view.Label{Text: "Local servers are off in every session until you switch them on in its menu.", Style: view.Secondary})
		}
		footer = "Local servers let a session's commands serve and connect on loopback (go test, dev servers): a server may listen on every address, but takes connections made on this Mac's loopback only; macOS cannot tell their ports from other programs', so they reach your own local services too. " + footer
	}
	rows = append(rows, view.Stack{Axis: view.Horizontal, Children: []view.Node{view.Button{Title: s.checkTitle(), Action: CheckMachine{}}}})
	return view.Section{Title: upperFirst(s.machineWord()), Children: rows, Footer: footer}
}

// CheckMachineWindow is Check this Mac…: the check running, or each of its programs' lines,
// with the report to copy or show.
func CheckMachineWindow(s State) view.Window {
	c := s.UI.Check
	var body []view.Node
	switch {
	case c.Running:
		body = append(body, view.Label{Text: "Checking " + s.machineWord() + ": running real programs behind the sandbox, as a session gets it. This takes a minute or two."})
	case c.Error != "" && len(c.Lines) == 0:
		body = append(body, view.Label{Text: "The check could not run: " + s.homeText(c.Error)})
	default:
		if c.Summary != "" {
			body = append(body, view.Label{Text: c.Summary})
		}
		if c.Error != "" {
			body = append(body, view.Label{Text: s.homeText(c.Error), Style: view.Secondary})
		}
		var rows []view.Row
		for _, l := range c.Lines {
			// The name and its status on a line, what went wrong under it: a long detail
			// beside the name would squeeze the name into a narrow column.
			line := []view.Node{view.Label{Text: s.homeText(l.Name) + " — " + l.Status}}
			if l.Detail != "" && (!l.OK || l.Status == "skipped" || l.Info) {
				line = append(line, view.Label{Text: s.homeText(l.Detail), Style: view.Secondary})
			}
			rows = append(rows, view.Row{Items: []view.Node{view.Stack{Children: line}}})
		}
		body = append(body, view.List{Rows: rows, Empty: "No programs were run."})
	}
	var buttons []view.Node
	if c.Report != "" && !c.Running {
		buttons = append(buttons, view.Button{Title: "Copy report", Action: view.CopyText{Text: c.Report}})
		if c.ReportPath != "" {
			buttons = append(buttons, view.Button{Title: "Show report file", Action: view.OpenPath{Path: c.ReportPath}})
		}
	}
	if !c.Running {
		buttons = append(buttons, view.Button{Title: "Check again", Action: CheckMachine{}})
	}
	if len(buttons) > 0 {
		body = append(body, view.Stack{Axis: view.Horizontal, Children: buttons})
	}
	return view.Window{ID: CheckWindow, Title: upperFirst(strings.TrimSuffix(s.checkTitle(), "…")), Width: 620, Body: view.Stack{Children: body}, OnClose: CloseWindow{ID: CheckWindow}}
}

func loginsSection(s State) view.Node {
	const title = "Explicit config and keys exposed to Agent"
	if !s.HasLogins {
		return view.Section{Title: title, Children: []view.Node{view.Label{Text: "Shared logins are not available in this build.", Style: view.Secondary}}}
	}
	var rows []view.Row
	for _, a := range s.Added {
		detail := a.From
		if a.Kind != "" {
			detail += " · " + a.Kind
		}
		if len(a.Hosts) > 0 {
			detail += " · " + strings.Join(a.Hosts, ", ")
		}
		if a.Problem != "" {
			detail += " · " + a.Problem
		} else if a.Status != "" && a.Status != "found" {
			detail += " · " + a.Status
		}
		if a.Secrets == config.SecretsCopy && !a.StandIn && a.SecretsNote != "" {
			detail += " · copied: " + a.SecretsNote
		}
		var sw view.Node = view.Switch{Title: a.Title, Detail: detail, On: a.Enabled, Action: SetLoginEnabled{Key: a.Key, On: !a.Enabled}}
		if len(a.LeftOut) > 0 {
			// What a session would not get, and why: a key file kept outside, a link that
			// leads out of the home folder.
			lines := []view.Node{sw}
			for _, l := range a.LeftOut {
				lines = append(lines, view.Label{Text: "Left out: " + l, Style: view.Secondary})
			}
			sw = view.Stack{Children: lines}
		}
		rows = append(rows, view.Row{Items: []view.Node{sw, view.Button{Title: "Remove", Action: RemoveLogin{Key: a.Key}}}})
	}
	var cli view.Menu
	for _, c := range s.Logins {
		added := c.Added || slices.ContainsFunc(s.Added, func(a AddedLogin) bool { return a.Key == c.Name })
		status := c.Status
		if status == "" {
			status = map[bool]string{true: "found", false: "not found"}[c.Found]
		}
		tip := upperFirst(c.Lets) + "; " + c.Kind + "; hosts: " + hostsOrNone(c.Hosts)
		if c.CopyOnly != "" && c.Name != "ssh" {
			tip += "; copied into the sandbox: " + c.CopyOnly
		}
		it := view.MenuItem{Title: c.Title + " (" + c.From + ") — " + status, Checked: added, Disabled: added || !c.Found, Tooltip: tip}
		if !it.Disabled {
			it.Action = AddLogin{Name: c.Name}
			if c.Name == "ssh" && s.SSHKeysChoice {
				// The choice is made as it is added.
				it.Action = nil
				it.Submenu = &view.Menu{Items: []view.MenuItem{
					{Title: sshAgentTitle, Tooltip: sshAgentDetail, Action: AddSSHLogin{Keys: config.SSHKeysAgent}},
					{Title: sshCopyTitle, Tooltip: sshCopyDetail, Action: AddSSHLogin{Keys: config.SSHKeysCopy}},
				}}
			}
			if c.StandIn && s.SecretsChoice {
				it.Action = nil
				it.Submenu = &view.Menu{Items: []view.MenuItem{
					{Title: standInTitle, Tooltip: standInDetail, Action: AddLoginSecrets{Name: c.Name, Secrets: config.SecretsStandIn}},
					{Title: tokensCopyTitle, Tooltip: tokensCopyDetail, Action: AddLoginSecrets{Name: c.Name, Secrets: config.SecretsCopy}},
				}}
			}
		}
		cli.Items = append(cli.Items, it)
	}
	footer := "Nothing is copied until you add it. An entry that is on is copied into the sandbox's private home when a session starts, owner-only, and deleted with it; your own files are never opened for writing. Its hosts join the allow list."
	if s.LoginsNote != "" {
		footer += " " + upperFirst(s.LoginsNote) + "."
	}
	add := view.MenuButton{Title: "Add…", Menu: view.Menu{Items: []view.MenuItem{
		{Title: "A CLI's login", Submenu: &cli},
		{Title: "A file or folder…", Action: ShowWindow{ID: AddFileWindow}},
	}}}
	children := []view.Node{view.List{Rows: rows, Empty: "Nothing is shared: the sandbox has none of your logins."}}
	for _, a := range s.Added {
		if a.Key == "ssh" && a.Keys != "" {
			children = append(children, sshKeysChoice(a.Keys))
		}
		if a.StandIn && a.Secrets != "" && s.SecretsChoice {
			children = append(children, secretsChoice(a))
		}
	}
	children = append(children, view.Stack{Axis: view.Horizontal, Children: []view.Node{add}})
	return view.Section{Title: title, Children: children, Footer: footer}
}

// The two ways to share SSH keys, as the entry's choice and the Add… menu say them.
const (
	sshAgentTitle  = "Use them through OpenWorker"
	sshAgentDetail = "The keys stay outside. Before a key signs in to a host, a card asks you."
	sshCopyTitle   = "Copy the keys"
	sshCopyDetail  = "Copied into the sandbox: any command there can read them and use them with any site you allow."
)

// sshKeysChoice is the SSH keys entry's choice of how its keys are shared.
func sshKeysChoice(keys string) view.Node {
	return view.Radio{Title: "SSH keys", Options: []view.RadioOption{
		{Title: sshAgentTitle, Detail: sshAgentDetail, Selected: keys == config.SSHKeysAgent, Action: SetSSHKeys{Mode: config.SSHKeysAgent}},
		{Title: sshCopyTitle, Detail: sshCopyDetail, Selected: keys == config.SSHKeysCopy, Action: SetSSHKeys{Mode: config.SSHKeysCopy}},
	}}
}

// The two ways to share a CLI login's tokens, as the entry's choice and the Add… menu say them.
const (
	standInTitle     = "Stand-ins inside"
	standInDetail    = "The tokens stay outside. The sandbox gets stand-ins, worthless anywhere; OpenWorker puts the real token on requests to the login's own hosts and nowhere else."
	tokensCopyTitle  = "Copy the tokens"
	tokensCopyDetail = "Copied into the sandbox: any command there can read them and send them to any site you allow."
)

// secretsChoice is a CLI login's choice of how its tokens are shared.
func secretsChoice(a AddedLogin) view.Node {
	return view.Radio{Title: a.Title + " tokens", Options: []view.RadioOption{
		{Title: standInTitle, Detail: standInDetail, Selected: a.Secrets == config.SecretsStandIn, Action: SetSecrets{Name: a.Key, Mode: config.SecretsStandIn}},
		{Title: tokensCopyTitle, Detail: tokensCopyDetail, Selected: a.Secrets == config.SecretsCopy, Action: SetSecrets{Name: a.Key, Mode: config.SecretsCopy}},
	}}
}

func hostsOrNone(hs []string) string {
	if len(hs) == 0 {
		return "the servers named in the file"
	}
	return strings.Join(hs, ", ")
}

// ChooseSites is the "Choose sites…" window.
func ChooseSites(s State) view.Window {
	var body []view.Node
	body = append(body, view.Label{Text: "Commands in the sandbox reach only the sites ticked here. Ticking a service allows every site its tools need.", Style: view.Secondary})
	if s.Settings.Settings.NetworkProfile == config.NetworkOpen {
		body = append(body, view.Label{Text: "The network is open (Allow everything), so this list is not in use until you choose “Only the sites you allow”."})
	}
	var kinds []string
	groups := map[string][]view.Node{}
	for _, g := range s.Sites.Groups {
		if !slices.Contains(kinds, g.Kind) {
			kinds = append(kinds, g.Kind)
		}
		var a view.Action = TickGroup{ID: g.ID}
		if g.Ticked {
			a = UntickGroup{ID: g.ID}
		}
		groups[g.Kind] = append(groups[g.Kind], view.Checkbox{Title: g.Name, Detail: strings.Join(g.Sites, ", "), Checked: g.Ticked, Mixed: g.Partial, Action: a})
	}
	for _, k := range kinds {
		body = append(body, view.Section{Title: k, Children: groups[k]})
	}

	var rows []view.Row
	for _, c := range s.Sites.Custom {
		rows = append(rows, view.Row{Items: []view.Node{view.Label{Text: c, Style: view.Monospace}, view.Button{Title: "Remove", Action: RemoveSite{Site: c}}}})
	}
	msg := s.UI.SiteMessage
	if msg == "" {
		msg = siteMessage(s.UI.SiteText)
	}
	text := strings.TrimSpace(s.UI.SiteText)
	body = append(body, view.Section{Title: "Your sites", Children: []view.Node{
		view.List{Rows: rows, Empty: "No sites of your own yet."},
		view.Stack{Axis: view.Horizontal, Children: []view.Node{
			view.TextField{Title: "Add a site", Placeholder: "example.com:443 or *.example.com", Text: s.UI.SiteText, Message: msg, OnChange: EditSite{}, OnSubmit: AddSite{}},
			view.Button{Title: "Add", Disabled: text == "" || msg != "", Action: AddSite{Site: s.UI.SiteText}},
		}},
	}, Footer: "A site without a port means port 443."})
	if len(s.Sites.Pending) > 0 {
		body = append(body, view.Label{Text: "In force, but not yet written to the settings file, which has problems: " + strings.Join(s.Sites.Pending, "; ") + ".", Style: view.Secondary})
	}

	if len(s.Sessions) > 0 {
		// Which session's Session only sites are shown: the one whose Access menu opened the
		// window, or the one the person picks here.
		title := "Show a session's sites"
		var pick view.Menu
		for _, ss := range s.Sessions {
			chosen := ss.ID == s.UI.SitesSession
			if chosen {
				title = "Session: " + s.sessionName(ss.ID)
			}
			pick.Items = append(pick.Items, view.MenuItem{Title: s.sessionName(ss.ID), Checked: chosen, Action: ShowWindow{ID: SitesWindow, Session: ss.ID}})
		}
		pick.Items = append(pick.Items, view.MenuItem{Separator: true},
			view.MenuItem{Title: "None", Checked: s.UI.SitesSession == "", Action: ShowWindow{ID: SitesWindow}})
		body = append(body, view.Stack{Axis: view.Horizontal, Children: []view.Node{view.MenuButton{Title: title, Menu: pick}}})
	}
	if ss, ok := s.session(s.UI.SitesSession); ok {
		var rows []view.Row
		for _, site := range ss.Access.Sites {
			if site.Source == backend.SessionOnly {
				rows = append(rows, view.Row{Items: []view.Node{view.Label{Text: site.Site, Style: view.Monospace}, view.Button{Title: "Revoke", Action: Revoke{Session: ss.ID, Site: site.Site}}}})
			}
		}
		body = append(body, view.Section{Title: "Session only — " + s.sessionName(ss.ID), Children: []view.Node{
			view.List{Rows: rows, Empty: "No sites allowed for this session only."},
		}, Footer: "These end with the session. Allow another from the session's Access menu."})
	}
	body = append(body, view.Stack{Axis: view.Horizontal, Align: view.Trailing, Children: []view.Node{
		view.Button{Title: "Done", Action: CloseWindow{ID: SitesWindow}},
	}})
	return view.Window{ID: SitesWindow, Title: "Choose sites", Width: 540, Body: view.Stack{Children: body}, OnClose: CloseWindow{ID: SitesWindow}}
}

// AddFileForm is "Add… ▸ A file or folder…".
func AddFileForm(s State) view.Window {
	path := view.Node(view.Label{Text: "Nothing chosen yet", Style: view.Secondary})
	if s.UI.FilePath != "" {
		path = view.Label{Text: s.UI.FilePath, Style: view.Monospace}
	}
	label := s.UI.FileLabel
	_, hostMsg := parseHostList(s.UI.FileHosts)
	msg := s.UI.FileMessage
	if msg == "" {
		msg = hostMsg
	}
	body := []view.Node{
		view.Label{Text: "Share one file or folder under your home folder with the sandbox. It is copied into the sandbox's private home when a session starts, and deleted with it."},
		view.Stack{Axis: view.Horizontal, Children: []view.Node{path,
			view.Button{Title: "Choose…", Action: view.PickPath{Prompt: "Share", Then: SetFilePath{}}}}},
		view.Radio{Title: "It holds", Options: []view.RadioOption{
			{Title: "A credential", Detail: "A secret: a key, a token, a password.", Selected: label == config.LabelCredential, Action: SetFileLabel{Label: config.LabelCredential}},
			{Title: "Configuration", Detail: "Host names, profiles, options; no secret.", Selected: label == config.LabelConfiguration, Action: SetFileLabel{Label: config.LabelConfiguration}},
		}},
		view.TextField{Title: "Hosts its tool needs", Placeholder: "api.example.com:443, *.example.com", Text: s.UI.FileHosts, Message: msg, OnChange: EditFileHost{}},
		view.Stack{Axis: view.Horizontal, Align: view.Trailing, Children: []view.Node{
			view.Button{Title: "Cancel", Role: view.Cancel, Key: view.KeyEscape, Action: CloseWindow{ID: AddFileWindow}},
			view.Button{Title: "Add", Role: view.Primary, Default: true, Key: view.KeyReturn, Disabled: s.UI.FilePath == "" || msg != "", Action: AddFile{}},
		}},
	}
	return view.Window{ID: AddFileWindow, Title: "Add a file or folder", Width: 480, Body: view.Stack{Children: body}, OnClose: CloseWindow{ID: AddFileWindow}}
}

// PublishAnother is a Linux session's "Publish a port…".
func PublishAnother(s State, id string) view.Window {
	text := s.UI.PublishText[id]
	_, msg := portOf(text)
	if strings.TrimSpace(text) == "" {
		msg = ""
	}
	return oneFieldWindow(PublishWindow+":"+id, "Publish a port of "+s.sessionName(id),
		"While a server in "+s.sessionName(id)+" listens on this port, this machine's 127.0.0.1 reaches it: at the same port, or the next free one. Nothing inside reaches this machine through it.",
		view.TextField{Title: "Port", Placeholder: "3000", Text: text, Message: msg, OnChange: EditPublish{Session: id}},
		"Publish", PublishPort{Session: id, Port: text})
}

// portOf reads a port the person typed, or says what is wrong with it.
func portOf(text string) (int, string) {
	p, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil || p < 1 || p > 65535 {
		return 0, "A port is a number from 1 to 65535."
	}
	return p, ""
}

// AllowAnother is a session's "Allow another site…".
func AllowAnother(s State, id string) view.Window {
	text := s.UI.AllowText[id]
	return oneFieldWindow(AllowWindow+":"+id, "Allow a site for "+s.sessionName(id),
		"The site opens for "+s.sessionName(id)+"'s commands at once, and closes when the session ends.",
		view.TextField{Title: "Site", Placeholder: "example.com:443", Text: text, Message: siteMessage(text), OnChange: EditAllow{Session: id}},
		"Allow for this session", AllowForSession{Session: id, Site: text})
}

// oneFieldWindow is a session's small form: what it does, one field, Cancel and the button
// that does it with the field's text (disabled while the field is empty or wrong).
func oneFieldWindow(wid, title, about string, field view.TextField, button string, do view.Action) view.Window {
	body := []view.Node{
		view.Label{Text: about},
		field,
		view.Stack{Axis: view.Horizontal, Align: view.Trailing, Children: []view.Node{
			view.Button{Title: "Cancel", Role: view.Cancel, Key: view.KeyEscape, Action: CloseWindow{ID: wid}},
			view.Button{Title: button, Role: view.Primary, Default: true, Key: view.KeyReturn,
				Disabled: strings.TrimSpace(field.Text) == "" || field.Message != "", Action: do},
		}},
	}
	return view.Window{ID: wid, Title: title, Width: 440, Body: view.Stack{Children: body}, OnClose: CloseWindow{ID: wid}}
}
