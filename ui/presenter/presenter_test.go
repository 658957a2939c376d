package presenter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/apitype"
	"github.com/openworker/openworker/core/approvals"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
	"github.com/openworker/openworker/core/tcc"
	"github.com/openworker/openworker/core/tstest"
	"github.com/openworker/openworker/ui/view"
)

// The test binary doubles as the tool runner, as the openworker binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == session.RunnerArg {
		if err := runner.Main(); err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type fixture struct {
	b        *backend.Backend
	p        *Presenter
	logins   *fakeLogins
	settings string
	project  string
	home     string
}

// newFixture is a real backend with the direct provider and a watched settings file, and a
// presenter of it that edits the file for the settings the backend has no call for.
func newFixture(t testing.TB, settings string, opts Options) *fixture {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	f := &fixture{settings: filepath.Join(root, "config", "config.toml"), project: filepath.Join(root, "home", "project"), home: filepath.Join(root, "home")}
	state, tmp := filepath.Join(root, "state"), filepath.Join(root, "tmp")
	for _, d := range []string{f.project, f.home, tmp, filepath.Dir(f.settings)} {
		os.MkdirAll(d, 0o700)
	}
	if settings != "" {
		os.WriteFile(f.settings, []byte(settings), 0o600)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	store, err := backend.OpenStore(ctx, f.settings, state, "linux", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	exe, _ := os.Executable()
	f.b, err = backend.New(backend.Options{Settings: store, GOOS: "linux", Native: sandbox.Linux, Session: session.Options{
		Providers: map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}},
		UserHome:  f.home, StateDir: state, TmpRoot: tmp, GOOS: "linux", RunnerPath: exe, HostEnv: []string{"PATH=" + os.Getenv("PATH")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.b.EndAll)
	if opts.Logins == nil {
		f.logins = newFakeLogins()
		opts.Logins = f.logins
	}
	if opts.Home == "" {
		opts.Home = f.home
	}
	if opts.Native == "" {
		opts.Native, opts.Wall = sandbox.Linux, sandbox.Status{Provider: sandbox.Linux, OK: true}
	}
	f.p = New(f.b, opts)
	return f
}

func (f *fixture) start(t testing.TB) *session.Session {
	t.Helper()
	s, err := f.b.Start(context.Background(), backend.Request{Writable: []string{f.project}, Provider: string(sandbox.Direct)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ask asks for site on a card and waits until the card is up.
func (f *fixture) ask(t testing.TB, s *session.Session, site, reason string, kind approvals.Kind) chan backend.SiteAnswer {
	t.Helper()
	n := len(f.b.Cards())
	out := make(chan backend.SiteAnswer, 1)
	go func() {
		a, _ := f.b.RequestSite(context.Background(), backend.SiteRequest{Session: s.ID, Site: site, Reason: reason, Kind: kind, Wait: time.Minute})
		out <- a
	}()
	tstest.WaitFor(t, 5*time.Second, func() error {
		if len(f.b.Cards()) <= n {
			return errors.New("no new card")
		}
		return nil
	})
	return out
}

func (f *fixture) dispatch(t testing.TB, a view.Action) {
	t.Helper()
	if err := f.p.Dispatch(a); err != nil {
		t.Fatalf("Dispatch(%#v): %v", a, err)
	}
}

// lastMenuButton is the last menu button in w (the Settings window's Add…, the Sites
// window's session picker).
func lastMenuButton(w view.Window) view.MenuButton {
	var out view.MenuButton
	view.Walk(w.Body, func(n view.Node) {
		if m, ok := n.(view.MenuButton); ok {
			out = m
		}
	})
	return out
}

// radioTitled is the radio group of w titled title; the zero Radio when there is none.
func radioTitled(w view.Window, title string) view.Radio {
	var out view.Radio
	view.Walk(w.Body, func(n view.Node) {
		if r, ok := n.(view.Radio); ok && r.Title == title {
			out = r
		}
	})
	return out
}

// window finds an open window by ID.
func window(a view.App, id string) (view.Window, bool) {
	for _, w := range a.Windows {
		if w.ID == id {
			return w, true
		}
	}
	return view.Window{}, false
}

func buttons(n view.Node) []view.Button {
	var out []view.Button
	view.Walk(n, func(n view.Node) {
		if b, ok := n.(view.Button); ok {
			out = append(out, b)
		}
	})
	return out
}

func checkbox(n view.Node, title string) (view.Checkbox, bool) {
	var out view.Checkbox
	found := false
	view.Walk(n, func(n view.Node) {
		if c, ok := n.(view.Checkbox); ok && c.Title == title {
			out, found = c, true
		}
	})
	return out, found
}

func menuItem(m view.Menu, path ...string) (view.MenuItem, bool) {
	for _, it := range m.Items {
		if it.Title == path[0] || strings.HasPrefix(it.Title, path[0]) {
			if len(path) == 1 {
				return it, true
			}
			if it.Submenu != nil {
				return menuItem(*it.Submenu, path[1:]...)
			}
		}
	}
	return view.MenuItem{}, false
}

// Ticking a group puts every one of its sites on the machine's list and in the file, and
// the box shows ticked; unticking takes them all off.
func TestTickGroup(t *testing.T) {
	f := newFixture(t, "", Options{})
	f.dispatch(t, ShowWindow{ID: SitesWindow})
	w, _ := window(f.p.View(), SitesWindow)
	if c, ok := checkbox(w.Body, "GitHub"); !ok || c.Checked || c.Action != (TickGroup{ID: "github"}) {
		t.Fatalf("before: %+v %v", c, ok)
	}
	f.dispatch(t, TickGroup{ID: "github"})
	g, _ := hosts.CatalogGroup("github")
	file, _ := os.ReadFile(f.settings)
	for _, e := range g.Entries {
		if !slices.Contains(f.b.Settings().Settings.NetworkHosts, e) {
			t.Errorf("%s is not in the settings in force", e)
		}
		if !strings.Contains(string(file), `"`+e.String()+`"`) {
			t.Errorf("%s is not in the settings file:\n%s", e, file)
		}
	}
	w, _ = window(f.p.View(), SitesWindow)
	if c, _ := checkbox(w.Body, "GitHub"); !c.Checked || c.Mixed || c.Action != (UntickGroup{ID: "github"}) {
		t.Fatalf("after ticking: %+v", c)
	}
	if icon := f.p.View().Icon; icon.State != IconOff {
		t.Fatalf("ticking sites turned the sandbox on: %+v", icon)
	}
	f.dispatch(t, UntickGroup{ID: "github"})
	if n := len(f.b.Settings().Settings.NetworkHosts); n != 0 {
		t.Fatalf("after unticking, %d sites are left", n)
	}
	w, _ = window(f.p.View(), SitesWindow)
	if c, _ := checkbox(w.Body, "GitHub"); c.Checked {
		t.Fatalf("after unticking: %+v", c)
	}
}

// A group with some of its sites on the list shows mixed, and ticking it adds the rest.
func TestPartialGroup(t *testing.T) {
	f := newFixture(t, "sandbox_network_hosts = [\"pypi.org:443\"]\n", Options{})
	c, _ := checkbox(ChooseSites(f.p.State()).Body, "PyPI")
	if !c.Mixed || c.Checked || c.Action != (TickGroup{ID: "pypi"}) {
		t.Fatalf("a half-ticked group: %+v", c)
	}
}

// The "Add a site" field says what is wrong in the settings file's words, and Add makes the
// backend call only for a good site.
func TestAddSite(t *testing.T) {
	f := newFixture(t, "", Options{})
	f.dispatch(t, ShowWindow{ID: SitesWindow})
	for _, bad := range []string{"https://example.com", "example.com:99999", "*", "a b"} {
		t.Run(bad, func(t *testing.T) {
			f.dispatch(t, EditSite{Text: bad})
			w, _ := window(f.p.View(), SitesWindow)
			var field view.TextField
			view.Walk(w.Body, func(n view.Node) {
				if tf, ok := n.(view.TextField); ok {
					field = tf
				}
			})
			_, problems := config.Parse("config.toml", []byte(fmt.Sprintf("sandbox_network_hosts = [%q]\n", bad)), "linux")
			if len(problems) != 1 || field.Message == "" || !strings.Contains(problems[0].Msg, field.Message) {
				t.Fatalf("the field says %q; the settings file says %v", field.Message, problems)
			}
			for _, b := range buttons(w.Body) {
				if b.Title == "Add" && !b.Disabled {
					t.Fatalf("Add is enabled for %q", bad)
				}
			}
			if err := f.p.Dispatch(AddSite{Site: bad}); err == nil {
				t.Fatalf("adding %q did not fail", bad)
			}
			if n := len(f.b.Settings().Settings.NetworkHosts); n != 0 {
				t.Fatalf("%q reached the settings", bad)
			}
		})
	}
	f.dispatch(t, EditSite{Text: "example.com:8443"})
	f.dispatch(t, AddSite{Site: "example.com:8443"})
	if !slices.Contains(f.b.Sites().Custom, "example.com:8443") {
		t.Fatalf("custom sites: %v", f.b.Sites().Custom)
	}
	w, _ := window(f.p.View(), SitesWindow)
	var removes []view.Action
	for _, b := range buttons(w.Body) {
		if b.Title == "Remove" {
			removes = append(removes, b.Action)
		}
	}
	if !slices.Contains(removes, view.Action(RemoveSite{Site: "example.com:8443"})) {
		t.Fatalf("no Remove for the custom site: %v", removes)
	}
	if f.p.State().UI.SiteText != "" {
		t.Fatal("the field kept the added site")
	}
	f.dispatch(t, RemoveSite{Site: "example.com:8443"})
	if len(f.b.Sites().Custom) != 0 {
		t.Fatalf("after Remove: %v", f.b.Sites().Custom)
	}
}

// Answering a card takes it away and the session's Access list shows the site, marked
// Session only, with Revoke; Revoke takes it back.
func TestAnswerCard(t *testing.T) {
	f := newFixture(t, "", Options{})
	s := f.start(t)
	asked := f.ask(t, s, "pypi.org:443", "install requests", approvals.Command)
	app := f.p.View()
	w, ok := window(app, CardsWindow)
	if !ok || w.Kind != view.Card {
		t.Fatalf("no card panel: %s", view.Dump(app))
	}
	if app.Icon.State != IconAttention || app.Icon.Badge != 1 {
		t.Fatalf("icon while a card waits: %+v", app.Icon)
	}
	var answer view.Action
	for _, b := range buttons(w.Body) {
		if b.Title == "Allow for this session" {
			answer = b.Action
		}
	}
	if answer == nil {
		t.Fatalf("no Allow for this session: %s", view.DumpWindow(w))
	}
	f.dispatch(t, answer)
	if a := <-asked; a.Outcome != approvals.Outcome(approvals.Session) {
		t.Fatalf("the coworker got %+v", a)
	}
	app = f.p.View()
	if _, ok := window(app, CardsWindow); ok || len(f.b.Cards()) != 0 {
		t.Fatalf("the card is still up: %s", view.Dump(app))
	}
	if app.Icon.State == IconAttention {
		t.Fatalf("icon after the answer: %+v", app.Icon)
	}
	it, ok := menuItem(app.Menu, "project", "Access", "pypi.org:443")
	if !ok || it.Title != "pypi.org:443 — Session only" || it.Submenu == nil || it.Submenu.Items[0].Action != (Revoke{Session: s.ID, Site: "pypi.org:443"}) {
		t.Fatalf("the Access menu: %+v\n%s", it, view.Dump(app))
	}
	f.dispatch(t, it.Submenu.Items[0].Action)
	a, _ := f.b.Access(s.ID)
	if len(a.Sites) != 0 {
		t.Fatalf("after Revoke: %+v", a)
	}
	if _, ok := menuItem(f.p.View().Menu, "project", "Access", "pypi.org:443"); ok {
		t.Fatal("the revoked site is still in the menu")
	}
}

// Always allow puts the site in the settings; Deny is shown in the Access list.
func TestAlwaysAndDeny(t *testing.T) {
	f := newFixture(t, "", Options{})
	s := f.start(t)
	f.ask(t, s, "pypi.org:443", "", approvals.Command)
	f.dispatch(t, AnswerCard{ID: f.b.Cards()[0].ID, Answer: "always"})
	if !slices.Contains(f.b.Settings().Settings.NetworkHostsRaw, "pypi.org:443") {
		t.Fatalf("always did not reach the settings: %v", f.b.Settings().Settings.NetworkHostsRaw)
	}
	if it, ok := menuItem(f.p.View().Menu, "project", "Access", "pypi.org:443"); !ok || it.Title != "pypi.org:443" || !it.Disabled {
		t.Fatalf("an always-allowed site in the Access menu: %+v", it)
	}
	f.ask(t, s, "evil.example:443", "", approvals.Command)
	f.dispatch(t, AnswerCard{ID: f.b.Cards()[0].ID, Answer: "deny"})
	it, ok := menuItem(f.p.View().Menu, "project", "Access", "evil.example:443")
	if !ok || it.Submenu == nil || it.Submenu.Items[0].Action != (AllowForSession{Session: s.ID, Site: "evil.example:443"}) {
		t.Fatalf("a denied site in the Access menu: %+v", it)
	}
}

// Allow another site… from the Access menu opens the site for the session only.
func TestAllowAnother(t *testing.T) {
	f := newFixture(t, "", Options{})
	s := f.start(t)
	it, _ := menuItem(f.p.View().Menu, "project", "Access", "Allow another site…")
	f.dispatch(t, it.Action)
	id := AllowWindow + ":" + s.ID
	f.dispatch(t, EditAllow{Session: s.ID, Text: "http://x"})
	w, ok := window(f.p.View(), id)
	if !ok {
		t.Fatalf("no window %s", id)
	}
	for _, b := range buttons(w.Body) {
		if b.Role == view.Primary && !b.Disabled {
			t.Fatalf("Allow is enabled for a bad site: %+v", b)
		}
	}
	f.dispatch(t, EditAllow{Session: s.ID, Text: "example.com:443"})
	w, _ = window(f.p.View(), id)
	var allow view.Action
	for _, b := range buttons(w.Body) {
		if b.Role == view.Primary {
			allow = b.Action
		}
	}
	f.dispatch(t, allow)
	a, _ := f.b.Access(s.ID)
	if len(a.Sites) != 1 || a.Sites[0] != (backend.AccessSite{Site: "example.com:443", Source: backend.SessionOnly}) {
		t.Fatalf("access: %+v", a)
	}
	if _, ok := window(f.p.View(), id); ok {
		t.Fatal("the window stayed open")
	}
	// Choose sites… of the session shows its Session only sites.
	it, _ = menuItem(f.p.View().Menu, "project", "Access", "Choose sites…")
	f.dispatch(t, it.Action)
	w, _ = window(f.p.View(), SitesWindow)
	if !slices.ContainsFunc(buttons(w.Body), func(b view.Button) bool { return b.Action == Revoke{Session: s.ID, Site: "example.com:443"} }) {
		t.Fatalf("Choose sites… of the session: %s", view.DumpWindow(w))
	}
	// Opened from Settings, it shows no session's sites until the person picks one.
	f.dispatch(t, CloseWindow{ID: SitesWindow})
	f.dispatch(t, ShowWindow{ID: SitesWindow})
	w, _ = window(f.p.View(), SitesWindow)
	if strings.Contains(view.DumpWindow(w), "Session only — ") {
		t.Fatalf("a session's sites without a session chosen: %s", view.DumpWindow(w))
	}
	pick := lastMenuButton(w)
	it, ok = menuItem(pick.Menu, "project")
	if !ok {
		t.Fatalf("no session to pick: %+v", pick)
	}
	f.dispatch(t, it.Action)
	w, _ = window(f.p.View(), SitesWindow)
	if !strings.Contains(view.DumpWindow(w), `"Session only — project"`) {
		t.Fatalf("the picked session's sites: %s", view.DumpWindow(w))
	}
}

// With full access there is no card: the ask is refused and nothing waits.
func TestFullAccessNoCard(t *testing.T) {
	f := newFixture(t, "sandbox_approvals = \"full-access\"\n", Options{})
	s := f.start(t)
	a, err := f.b.RequestSite(context.Background(), backend.SiteRequest{Session: s.ID, Site: "pypi.org:443", Wait: time.Second})
	if err != nil || a.Outcome != approvals.RefusedFull {
		t.Fatalf("%+v %v", a, err)
	}
	app := f.p.View()
	if _, ok := window(app, CardsWindow); ok || app.Icon.State == IconAttention {
		t.Fatalf("a card with full access: %s", view.Dump(app))
	}
	w := SettingsSandbox(f.p.State())
	var full view.RadioOption
	view.Walk(w.Body, func(n view.Node) {
		if r, ok := n.(view.Radio); ok {
			for _, o := range r.Options {
				if o.Title == "Full access" {
					full = o
				}
			}
		}
	})
	if !full.Selected {
		t.Fatalf("Full access is not shown selected: %s", view.DumpWindow(w))
	}
}

// Three pending asks are one panel of three cards; two identical asks are one card.
func TestThreeCardsOneStack(t *testing.T) {
	f := newFixture(t, "", Options{})
	s := f.start(t)
	f.ask(t, s, "pypi.org:443", "a", approvals.Command)
	f.ask(t, s, "registry.npmjs.org:443", "b", approvals.Command)
	f.ask(t, s, "docs.example.com:443", "c", approvals.Fetch)
	go f.b.RequestSite(context.Background(), backend.SiteRequest{Session: s.ID, Site: "pypi.org:443", Reason: "again", Wait: time.Minute})
	tstest.WaitFor(t, 5*time.Second, func() error {
		if c := f.b.Cards(); len(c) != 3 || c[0].Askers != 2 {
			return fmt.Errorf("cards: %+v", c)
		}
		return nil
	})
	app := f.p.View()
	var panels []view.Window
	for _, w := range app.Windows {
		if w.Kind == view.Card {
			panels = append(panels, w)
		}
	}
	if len(panels) != 1 {
		t.Fatalf("%d card panels, want one stack", len(panels))
	}
	if n := len(buttons(panels[0].Body)); n != 3+3+4 {
		t.Fatalf("%d buttons in the stack, want 10:\n%s", n, view.DumpWindow(panels[0]))
	}
	if app.Icon.Badge != 3 || !strings.Contains(app.Icon.Tooltip, "3 sites are waiting") {
		t.Fatalf("icon: %+v", app.Icon)
	}
	if !strings.Contains(view.DumpWindow(panels[0]), "Asked 2 times") {
		t.Fatalf("the repeated ask is not one card:\n%s", view.DumpWindow(panels[0]))
	}
}

// No button of a card fires by itself: none is the default until the person clicks into the
// stack, and then only the first card's least-opening answer is.
func TestNoDefaultButtonUntilFocused(t *testing.T) {
	f := newFixture(t, "", Options{})
	s := f.start(t)
	f.ask(t, s, "pypi.org:443", "", approvals.Command)
	f.ask(t, s, "docs.example.com:443", "", approvals.Fetch)
	w, _ := window(f.p.View(), CardsWindow)
	for _, b := range buttons(w.Body) {
		if b.Default || b.Key != "" {
			t.Fatalf("before the person clicked in, %q is the default", b.Title)
		}
	}
	f.dispatch(t, w.OnFocus)
	w, _ = window(f.p.View(), CardsWindow)
	var defaults []string
	for _, b := range buttons(w.Body) {
		if b.Default {
			defaults = append(defaults, b.Title)
			if b.Key != view.KeyReturn || b.Role != view.Primary {
				t.Fatalf("the default button: %+v", b)
			}
		}
		if b.Role == view.Destructive && (b.Default || b.Key != "") {
			t.Fatalf("Deny has a key: %+v", b)
		}
	}
	if !slices.Equal(defaults, []string{"Allow for this session"}) {
		t.Fatalf("default buttons after focus: %v", defaults)
	}
	// An answer ends the focus: the next card has no default until the person clicks in
	// again, so a Return pressed twice answers one card, not two.
	f.dispatch(t, AnswerCard{ID: f.b.Cards()[0].ID, Answer: "deny"})
	w, _ = window(f.p.View(), CardsWindow)
	for _, b := range buttons(w.Body) {
		if b.Default {
			t.Fatalf("after an answer, the next card has a default button: %q", b.Title)
		}
	}
	f.dispatch(t, AnswerCard{ID: f.b.Cards()[0].ID, Answer: "deny"})
	f.ask(t, s, "crates.io:443", "", approvals.Command)
	w, _ = window(f.p.View(), CardsWindow)
	for _, b := range buttons(w.Body) {
		if b.Default {
			t.Fatalf("a new stack has a default button: %q", b.Title)
		}
	}
}

// A web fetch's card offers Once, This session, Always allow and Deny; a command's site
// card offers Allow for this session, Always allow and Deny. Deny sits apart at the left.
func TestCardButtons(t *testing.T) {
	f := newFixture(t, "", Options{})
	s := f.start(t)
	for _, tc := range []struct {
		kind approvals.Kind
		want []string
	}{
		{approvals.Command, []string{"Deny", "Always allow", "Allow for this session"}},
		{approvals.Fetch, []string{"Deny", "Always allow", "This session", "Once"}},
	} {
		f.ask(t, s, "x-"+string(tc.kind)+".example:443", "", tc.kind)
		c := f.b.Cards()[len(f.b.Cards())-1]
		var got []string
		for _, b := range buttons(f.p.State().card(c, false)) {
			got = append(got, b.Title)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s card: %v, want %v", tc.kind, got, tc.want)
		}
	}
}

// Closing the stack leaves the cards pending and in the menu; the next card brings it back.
func TestCloseCards(t *testing.T) {
	f := newFixture(t, "", Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changed := f.p.Watch(ctx)
	s := f.start(t)
	f.ask(t, s, "pypi.org:443", "", approvals.Command)
	f.dispatch(t, CloseWindow{ID: CardsWindow})
	app := f.p.View()
	if _, ok := window(app, CardsWindow); ok {
		t.Fatal("the stack did not close")
	}
	it, ok := menuItem(app.Menu, "pypi.org:443")
	if !ok || it.Action != (ShowWindow{ID: CardsWindow}) {
		t.Fatalf("the waiting card is not in the menu: %s", view.Dump(app))
	}
	f.ask(t, s, "crates.io:443", "", approvals.Command)
	tstest.WaitFor(t, 5*time.Second, func() error {
		select {
		case <-changed:
		default:
		}
		if _, ok := window(f.p.View(), CardsWindow); !ok {
			return errors.New("the stack did not come back")
		}
		return nil
	})
}

// The settings file edited by hand: the icon, the menu and Settings ▸ Sandbox follow.
func TestSettingsEditedByHand(t *testing.T) {
	f := newFixture(t, "", Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changed := f.p.Watch(ctx)
	if st := f.p.View().Icon.State; st != IconOff {
		t.Fatalf("icon with no settings: %s", st)
	}
	os.WriteFile(f.settings, []byte("sandbox_provider = \"linux\"\nsandbox_network_profile = \"open\"\n"), 0o600)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the presenter was not told of the reload")
	}
	tstest.WaitFor(t, 5*time.Second, func() error {
		if st := f.p.View().Icon.State; st != IconOpen {
			return fmt.Errorf("icon %s", st)
		}
		return nil
	})
	if line := f.p.View().Menu.Items[0].Title; line != "Sandbox on — any site (network open)" {
		t.Fatalf("status line: %q", line)
	}
	os.WriteFile(f.settings, []byte("sandbox_provider = \"linux\"\nsandbox_network_hosts = [\"github.com:443\"]\n"), 0o600)
	tstest.WaitFor(t, 5*time.Second, func() error {
		icon := f.p.View().Icon
		if icon.State != IconAllowList || !strings.Contains(icon.Tooltip, "1 site you allow") {
			return fmt.Errorf("icon %+v", icon)
		}
		return nil
	})
	// A broken save keeps the last good settings in force, and Settings says so.
	os.WriteFile(f.settings, []byte("sandbox_provider = \"linux\"\nsandbox_network_hosts = [\n"), 0o600)
	tstest.WaitFor(t, 5*time.Second, func() error {
		if f.b.Settings().Problems == nil {
			return errors.New("not reloaded")
		}
		return nil
	})
	app := f.p.View()
	if app.Icon.State != IconAllowList || !strings.Contains(view.Dump(app), "The settings file has problems") ||
		!strings.Contains(view.DumpWindow(SettingsSandbox(f.p.State())), "the last good settings are in force") {
		t.Fatalf("with a broken file: %s", view.Dump(app))
	}
}

// The radio buttons of Settings ▸ Sandbox write the file and the view follows.
func TestSettingsRadios(t *testing.T) {
	f := newFixture(t, "", Options{FirstLaunch: true})
	if it, ok := menuItem(f.p.View().Menu, "Turn on the Linux sandbox…"); !ok || it.Action != (ShowWindow{ID: SettingsWindow}) {
		t.Fatalf("first launch: %s", view.Dump(f.p.View()))
	}
	f.dispatch(t, ShowWindow{ID: SettingsWindow})
	for _, a := range []view.Action{SetProvider{Provider: "linux"}, SetNetwork{Profile: "open"}, SetApprovals{Mode: "full-access"}} {
		f.dispatch(t, a)
	}
	tstest.WaitFor(t, 5*time.Second, func() error {
		s := f.b.Settings().Settings
		if s.Provider != "linux" || s.NetworkProfile != "open" || s.Approvals != "full-access" {
			return fmt.Errorf("settings in force: %+v", s)
		}
		return nil
	})
	app := f.p.View()
	if app.Icon.State != IconOpen {
		t.Fatalf("icon: %+v", app.Icon)
	}
	if _, ok := menuItem(app.Menu, "Turn on the"); ok {
		t.Fatal("Turn on the sandbox… stays after the person chose")
	}
	w, _ := window(app, SettingsWindow)
	selected := map[string]bool{}
	view.Walk(w.Body, func(n view.Node) {
		if r, ok := n.(view.Radio); ok {
			for _, o := range r.Options {
				selected[o.Title] = o.Selected
			}
		}
	})
	want := map[string]bool{"Linux sandbox": true, "Run commands directly": false, "Only the sites you allow": false, "Allow everything": true, "Ask me": false, "Full access": true}
	for k, v := range want {
		if selected[k] != v {
			t.Errorf("%q selected=%v, want %v", k, selected[k], v)
		}
	}
}

// A wall that cannot go up: the icon says sessions are refused, and why.
func TestRefusedWall(t *testing.T) {
	reason := "OpenWorker is already running inside another sandbox, and macOS does not nest them: sandbox-exec could not apply even an allow-everything profile (exit 65); run OpenWorker outside that sandbox"
	f := newFixture(t, "sandbox_provider = \"linux\"\n", Options{Native: sandbox.Linux, Wall: sandbox.Status{Provider: sandbox.Linux, Reason: reason}})
	app := f.p.View()
	if app.Icon.State != IconRefused || app.Icon.Symbol != "exclamationmark.shield" ||
		app.Icon.Tooltip != "OpenWorker: sessions are refused. OpenWorker is already running inside another sandbox, and macOS does not nest them." {
		t.Fatalf("icon: %+v", app.Icon)
	}
	f.p.SetWall(sandbox.Status{Provider: sandbox.Linux, OK: true})
	if st := f.p.View().Icon.State; st != IconAllowList {
		t.Fatalf("after the wall came up: %s", st)
	}
}

// Toolchains are offered only when the home folder has them; a switch writes the file.
func TestToolchains(t *testing.T) {
	f := newFixture(t, "", Options{})
	os.MkdirAll(filepath.Join(f.home, ".cargo"), 0o700)
	os.MkdirAll(filepath.Join(f.home, "go"), 0o700)
	var offered []string
	for _, tc := range f.p.State().Toolchains {
		offered = append(offered, tc.Path)
	}
	if !slices.Equal(offered, []string{".cargo", "go"}) {
		t.Fatalf("offered: %v", offered)
	}
	f.dispatch(t, SetToolchain{Path: ".cargo", On: true})
	f.dispatch(t, AddToolchain{Path: filepath.Join(f.home, "tools", "flutter")})
	if err := f.p.Dispatch(AddToolchain{Path: "/opt/elsewhere"}); err == nil {
		t.Fatal("a folder outside the home folder was added")
	}
	tstest.WaitFor(t, 5*time.Second, func() error {
		if got := f.b.Settings().Settings.Toolchains; !slices.Equal(got, []string{".cargo", "tools/flutter"}) {
			return fmt.Errorf("toolchains in force: %v", got)
		}
		return nil
	})
	w := SettingsSandbox(f.p.State())
	var sw []string
	view.Walk(w.Body, func(n view.Node) {
		if s, ok := n.(view.Switch); ok && strings.HasPrefix(s.Title, "~/") {
			sw = append(sw, fmt.Sprintf("%s=%v", s.Title, s.On))
		}
	})
	if !slices.Equal(sw, []string{"~/.cargo=true", "~/go=false", "~/tools/flutter=true"}) {
		t.Fatalf("switches: %v", sw)
	}
}

// Shared logins: the catalog entries are marked found or not found, and adding, switching
// and removing call the logins; "A file or folder…" checks its hosts the file's way.
func TestLogins(t *testing.T) {
	f := newFixture(t, "", Options{})
	f.dispatch(t, ShowWindow{ID: SettingsWindow})
	w, _ := window(f.p.View(), SettingsWindow)
	add := lastMenuButton(w)
	ssh, ok := menuItem(add.Menu, "A CLI's login", "SSH keys")
	if !ok || ssh.Title != "SSH keys (~/.ssh) — found" || ssh.Disabled || ssh.Action != (AddLogin{Name: "ssh"}) {
		t.Fatalf("ssh: %+v", ssh)
	}
	gh, _ := menuItem(add.Menu, "A CLI's login", "GitHub CLI")
	if gh.Title != "GitHub CLI (~/.config/gh) — not found" || !gh.Disabled || gh.Action != nil {
		t.Fatalf("gh: %+v", gh)
	}
	f.dispatch(t, ssh.Action)
	f.dispatch(t, SetLoginEnabled{Key: "ssh", On: false})
	if got := f.logins.calls; !slices.Equal(got, []string{"add ssh", "enable ssh false"}) {
		t.Fatalf("calls: %v", got)
	}
	w, _ = window(f.p.View(), SettingsWindow)
	var sw view.Switch
	view.Walk(w.Body, func(n view.Node) {
		if s, ok := n.(view.Switch); ok && s.Title == "SSH keys" {
			sw = s
		}
	})
	if sw.On || sw.Action != (SetLoginEnabled{Key: "ssh", On: true}) || !strings.Contains(sw.Detail, "github.com:22") {
		t.Fatalf("the ssh switch: %+v", sw)
	}
	if it, _ := menuItem(add.Menu, "A CLI's login", "SSH keys"); it.Title == "" {
		t.Fatal("lost")
	}

	f.dispatch(t, ShowWindow{ID: AddFileWindow})
	if err := f.p.Dispatch(SetFilePath{Path: "/etc/passwd"}); err == nil {
		t.Fatal("a file outside the home folder was taken")
	}
	f.dispatch(t, SetFilePath{Path: filepath.Join(f.home, ".config", "tool", "token")})
	f.dispatch(t, SetFileLabel{Label: config.LabelConfiguration})
	f.dispatch(t, EditFileHost{Text: "https://api.tool.example"})
	w, _ = window(f.p.View(), AddFileWindow)
	for _, b := range buttons(w.Body) {
		if b.Title == "Add" && !b.Disabled {
			t.Fatalf("Add is enabled with a bad host:\n%s", view.DumpWindow(w))
		}
	}
	f.dispatch(t, EditFileHost{Text: "api.tool.example:443, *.tool.example"})
	f.dispatch(t, AddFile{})
	if got := f.logins.calls[2]; got != "path ~/.config/tool/token configuration [api.tool.example:443 *.tool.example:443]" {
		t.Fatalf("AddPath: %q", got)
	}
	if _, ok := window(f.p.View(), AddFileWindow); ok {
		t.Fatal("the form stayed open")
	}
	f.dispatch(t, RemoveLogin{Key: "ssh"})
	if f.logins.calls[3] != "remove ssh" {
		t.Fatalf("calls: %v", f.logins.calls)
	}
}

// Every action a view holds is one Dispatch knows.
func TestEveryActionIsKnown(t *testing.T) {
	for _, pv := range Previews() {
		name, app := pv.Name, Build(pv.State)
		var acts []view.Action
		var menu func(view.Menu)
		menu = func(m view.Menu) {
			for _, it := range m.Items {
				acts = append(acts, it.Action)
				if it.Submenu != nil {
					menu(*it.Submenu)
				}
			}
		}
		menu(app.Menu)
		for _, w := range app.Windows {
			acts = append(acts, w.OnClose, w.OnFocus)
			view.Walk(w.Body, func(n view.Node) {
				switch n := n.(type) {
				case view.Button:
					acts = append(acts, n.Action)
				case view.Checkbox:
					acts = append(acts, n.Action)
				case view.Switch:
					acts = append(acts, n.Action)
				case view.Radio:
					for _, o := range n.Options {
						acts = append(acts, o.Action)
					}
				case view.TextField:
					if n.OnChange != nil {
						acts = append(acts, n.OnChange.WithText("x"))
					}
					if n.OnSubmit != nil {
						acts = append(acts, n.OnSubmit.WithText("x"))
					}
				case view.MenuButton:
					menu(n.Menu)
				}
			})
		}
		p := New(nopBackend{}, Options{Settings: nopEditor{}, Logins: newFakeLogins(), Home: "/home/x"})
		for _, a := range acts {
			switch a := a.(type) {
			case nil, view.Quit, view.OpenPath, view.OpenURL:
				continue
			case view.PickPath:
				if a.Then == nil {
					t.Errorf("%s: a PickPath with nothing to do", name)
				}
				continue
			}
			if err := p.Dispatch(a); err != nil && strings.Contains(err.Error(), "does not know") {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

type nopBackend struct{}

func (nopBackend) Sessions() []*session.Session                    { return nil }
func (nopBackend) Cards() []backend.CardInfo                       { return nil }
func (nopBackend) Answer(string, string) (approvals.Effect, error) { return approvals.Effect{}, nil }
func (nopBackend) Access(string) (backend.Access, error)           { return backend.Access{}, nil }
func (nopBackend) AllowForSession(string, string) error            { return nil }
func (nopBackend) SetLocalServers(string, bool) error              { return nil }
func (nopBackend) SetPublish(string, int, bool) error              { return nil }
func (nopBackend) Revoke(string, string) error                     { return nil }
func (nopBackend) Sites() backend.Sites                            { return backend.Sites{} }
func (nopBackend) Tick(string) error                               { return nil }
func (nopBackend) Untick(string) error                             { return nil }
func (nopBackend) AddSite(string) error                            { return nil }
func (nopBackend) RemoveSite(string) error                         { return nil }
func (nopBackend) Settings() *config.InForce                       { return &config.InForce{Settings: config.Default()} }
func (nopBackend) Subscribe(bool) (<-chan backend.Event, func())   { return nil, func() {} }

type nopEditor struct{}

func (nopEditor) SetProvider(string) error        { return nil }
func (nopEditor) SetNetworkProfile(string) error  { return nil }
func (nopEditor) SetApprovals(string) error       { return nil }
func (nopEditor) SetGitMetadata(string) error     { return nil }
func (nopEditor) SetToolchain(string, bool) error { return nil }

// The repositories switch of Settings ▸ Sandbox writes sandbox_git_metadata, and flips back.
func TestSettingsGitMetadataSwitch(t *testing.T) {
	f := newFixture(t, "", Options{})
	f.dispatch(t, ShowWindow{ID: SettingsWindow})
	sw := func() view.Switch {
		w, _ := window(f.p.View(), SettingsWindow)
		var found view.Switch
		view.Walk(w.Body, func(n view.Node) {
			if s, ok := n.(view.Switch); ok && strings.Contains(s.Title, "git hooks") {
				found = s
			}
		})
		return found
	}
	for _, want := range []string{"writable", "protected"} {
		s := sw()
		if s.On != (want == "protected") || s.Action != (SetGitMetadata{Mode: want}) {
			t.Fatalf("before %s: %+v", want, s)
		}
		f.dispatch(t, s.Action)
		tstest.WaitFor(t, 5*time.Second, func() error {
			if got := f.b.Settings().Settings.GitMetadata; got != want {
				return fmt.Errorf("sandbox_git_metadata in force: %q", got)
			}
			return nil
		})
	}
}

// The app is the local API, the MCP servers' daemon and the proxy of every session: it must
// answer at once whether or not a session runs (the first session start, an attach, a card's
// answer), so it never naps, and says why.
func TestBusyForTheAppsWholeLife(t *testing.T) {
	s := previewState("seatbelt", "allowlist")
	if got := Build(s).Busy; !strings.Contains(got, "local API") {
		t.Errorf("no session, Busy = %q, want the app kept awake for its local API", got)
	}
	s.Sessions = []Session{{ID: "a", Writable: []string{"/home/p/one"}}}
	if got := Build(s).Busy; !strings.Contains(got, "a running session") {
		t.Errorf("one session, Busy = %q", got)
	}
	s.Sessions = append(s.Sessions, Session{ID: "b", Writable: []string{"/home/p/two"}})
	if got := Build(s).Busy; !strings.Contains(got, "2 running sessions") {
		t.Errorf("two sessions, Busy = %q", got)
	}
}

// A folder macOS does not let OpenWorker use is said on the session's line in the status
// menu, and in its submenu with where to allow it.
func TestFolderRefusedOnSessionLine(t *testing.T) {
	s := previewState("seatbelt", "allowlist").withSession()
	docs := previewHome + "/Documents/specs"
	s.Sessions[0].Access.FoldersRefused = []tcc.Refusal{{Folder: docs, Area: "Documents folder", Message: tcc.Message(previewHome, docs, "Documents folder")}}
	m := Menu(s)
	var line *view.MenuItem
	for i, it := range m.Items {
		if it.Submenu != nil && strings.HasPrefix(it.Title, "project") {
			line = &m.Items[i]
		}
	}
	if line == nil {
		t.Fatalf("no session line in the menu:\n%s", view.Dump(view.App{Menu: m}))
	}
	if !strings.Contains(line.Title, "macOS") {
		t.Errorf("the session's line %q does not say macOS refused a folder", line.Title)
	}
	dump := view.Dump(view.App{Menu: *line.Submenu})
	for _, want := range []string{"~/Documents/specs", "Privacy & Security ▸ Files and Folders"} {
		if !strings.Contains(dump, want) {
			t.Errorf("the session's menu does not say %q:\n%s", want, dump)
		}
	}
	// A session of the whole home folder: the guarded folder inside it has a line of its own.
	s.Sessions[0].Writable, s.Sessions[0].ReadOnly = []string{previewHome}, nil
	inside := previewHome + "/Downloads"
	s.Sessions[0].Access.FoldersRefused = []tcc.Refusal{{Folder: inside, Area: "Downloads folder", Message: tcc.Message(previewHome, inside, "Downloads folder")}}
	for _, it := range Menu(s).Items {
		if it.Submenu != nil && strings.Contains(it.Title, "macOS") {
			if d := view.Dump(view.App{Menu: *it.Submenu}); !strings.Contains(d, `"~/Downloads — refused by macOS"`) {
				t.Errorf("the guarded folder inside the session's has no line:\n%s", d)
			}
		}
	}
	// Without a refusal the line is the session's name alone.
	s.Sessions[0].Access.FoldersRefused = nil
	for _, it := range Menu(s).Items {
		if it.Submenu != nil && strings.Contains(it.Title, "macOS") {
			t.Errorf("a session without refusals says %q", it.Title)
		}
	}
}

// A session's Access menu lists its SSH answers, each with its kind, and whether it holds
// for the session or always.
func TestAccessMenuSaysSSHAnswersKinds(t *testing.T) {
	s := previewState("seatbelt", "allowlist").withSession()
	s.Sessions[0].Access.SSH = []apitype.SSHAnswer{
		{Kind: apitype.SSHSigning, Name: "git", Key: "SHA256:k", Source: backend.SessionOnly},
		{Kind: apitype.SSHLogin, Name: "github.com", Key: "SHA256:k", Source: backend.FromSettings},
	}
	for _, want := range []string{`SSH signing for "git" with SHA256:k — Session only`, "SSH login to github.com with SHA256:k — always"} {
		if it, ok := findItem(Menu(s), want); !ok || !it.Disabled {
			t.Errorf("the Access menu has no %q (found %v)", want, ok)
		}
	}
}

// An entry's files that a session would not get are said under its switch, with why.
func TestLoginsSayWhatIsLeftOut(t *testing.T) {
	s := previewState("linux", "allowlist")
	s.HasLogins = true
	s.Added = []AddedLogin{{Key: "ssh", Title: "SSH keys", From: "~/.ssh", Enabled: true, Status: "found", Keys: config.SSHKeysAgent,
		LeftOut: []string{"~/.ssh/client.p12 is a PKCS#12 bundle, which holds private keys; it stays outside"}}}
	dump := view.DumpWindow(view.Window{Body: loginsSection(s)})
	if !strings.Contains(dump, "Left out: ~/.ssh/client.p12 is a PKCS#12 bundle") {
		t.Errorf("the logins do not say what is left out:\n%s", dump)
	}
}
