package presenter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tstest"
	"github.com/openworker/openworker/ui/view"
)

// findItem finds an item of m (and its submenus) whose title starts with prefix.
func findItem(m view.Menu, prefix string) (view.MenuItem, bool) {
	for _, it := range m.Items {
		if strings.HasPrefix(it.Title, prefix) {
			return it, true
		}
		if it.Submenu != nil {
			if found, ok := findItem(*it.Submenu, prefix); ok {
				return found, true
			}
		}
	}
	return view.MenuItem{}, false
}

// A Mac session's menu carries its local-servers switch, ticked when on, with what it opens;
// a session on another wall has none (its loopback is its own, or there is no wall).
func TestLocalServersInTheSessionMenu(t *testing.T) {
	s := previewState("seatbelt", "allowlist", "github").withSession()
	it, ok := findItem(Menu(s), "Local servers")
	if !ok || it.Checked || it.Action != (SetLocalServers{Session: "7f3a9c", On: true}) || !strings.Contains(it.Tooltip, "other programs'") {
		t.Fatalf("off: %+v (found %v)", it, ok)
	}
	if _, ok := findItem(Menu(s), "Open: this Mac's loopback ports"); ok {
		t.Error("with the switch off, the menu says loopback is open")
	}
	s.Sessions[0].LocalServers = true
	if it, _ := findItem(Menu(s), "Local servers"); !it.Checked || it.Action != (SetLocalServers{Session: "7f3a9c", On: false}) {
		t.Errorf("on: %+v", it)
	}
	if _, ok := findItem(Menu(s), "Open: this Mac's loopback ports"); !ok {
		t.Error("with the switch on, the menu does not say what it opens")
	}
	// The link probe's answer, which npm install and cargo build depend on.
	if it, ok := findItem(Menu(s), "Hard links and clones"); !ok || it.Title != "Hard links and clones: denied (not proved on this Mac)" || !it.Disabled {
		t.Errorf("links line: %+v (found %v)", it, ok)
	}
	s.Links = &Links{Probed: true, Both: true}
	if it, _ := findItem(Menu(s), "Hard links and clones"); it.Title != "Hard links and clones: allowed in its folders" ||
		it.Tooltip != "Hard links and clones: allowed inside the session's folders (checked on this Mac)." {
		t.Errorf("links line when proved: %+v", it)
	}
	o := previewState("direct", "allowlist").withSession()
	if _, ok := findItem(Menu(o), "Local servers"); ok {
		t.Error("a direct session's menu has the local-servers switch")
	}
}

// A Linux session's menu has the switch too, which publishes its servers' ports on this
// machine's loopback with no restart, and an item per published port that opens it in the
// browser, at the port this machine reaches it at; a port asked for that nothing listens at
// says so.
func TestPublishedPortsInTheSessionMenu(t *testing.T) {
	s := previewState("linux", "allowlist").withSession()
	if it, ok := findItem(Menu(s), "Local servers"); !ok || it.Checked || it.Action != (SetLocalServers{Session: "7f3a9c", On: true}) || !strings.Contains(it.Tooltip, "127.0.0.1") {
		t.Errorf("off: %+v (found %v)", it, ok)
	}
	s.Sessions[0].LocalServers = true
	s.Sessions[0].Access.Published = []backend.Published{{Port: 3000, HostPort: 3000}, {Port: 8080, HostPort: 8081}, {Port: 5173, Asked: true}}
	for title, want := range map[string]view.Action{
		"Open 127.0.0.1:3000":                    view.OpenURL{URL: "http://127.0.0.1:3000/"},
		"Open 127.0.0.1:8081 (port 8080 inside)": view.OpenURL{URL: "http://127.0.0.1:8081/"},
	} {
		if it, ok := findItem(Menu(s), title); !ok || it.Action != want || it.Title != title {
			t.Errorf("%s: %+v (found %v)", title, it, ok)
		}
	}
	if it, ok := findItem(Menu(s), "Port 5173"); !ok || !it.Disabled || !strings.Contains(it.Title, "nothing listens there yet") {
		t.Errorf("a port asked for, not listening: %+v (found %v)", it, ok)
	}
	if _, ok := findItem(Menu(s), "Open: this Mac's loopback ports"); ok {
		t.Error("a Linux session's menu says this Mac's loopback is open")
	}
}

// Settings ▸ Sandbox shows, on a Mac, the link probe's answer, each running session's
// local-servers switch with what it opens, and Check this Mac….
func TestSettingsShowsThisMac(t *testing.T) {
	s := previewState("seatbelt", "allowlist").withSession()
	s.Links = &Links{Probed: true, Both: true}
	dump := view.Dump(view.App{Windows: []view.Window{SettingsSandbox(s)}})
	for _, want := range []string{
		`"Hard links and clones: allowed inside the session's folders (checked on this Mac)"`,
		`switch "Local servers for project" -> presenter.SetLocalServers{Session:7f3a9c On:true}`,
		"they reach your own local services too",
		`button "Check this Mac…" -> presenter.CheckMachine{}`,
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("Settings lacks %s:\n%s", want, dump)
		}
	}
	for _, tt := range []struct {
		links Links
		want  string
	}{
		{Links{Probed: true, Why: "the link from the denied folder into the allowed one was made: Seatbelt does not check the existing file"},
			"Hard links and clones: denied: the link from the denied folder into the allowed one was made: Seatbelt does not check the existing file. npm's links are made copies; cargo build fails"},
		{Links{}, "Hard links and clones: denied until Check this Mac… proves that macOS checks both ends of each. npm's links are made copies meanwhile; cargo build fails"},
	} {
		if got := LinksLine(tt.links); got != tt.want {
			t.Errorf("LinksLine(%+v) = %q, want %q", tt.links, got, tt.want)
		}
	}
	linux := previewState("linux", "allowlist").withSession()
	linux.Native, linux.Links = sandbox.Linux, nil
	dump = view.Dump(view.App{Windows: []view.Window{SettingsSandbox(linux)}})
	if strings.Contains(dump, "Local servers") || strings.Contains(dump, "Hard links") || !strings.Contains(dump, `button "Check this machine…"`) {
		t.Errorf("Linux's Settings:\n%s", dump)
	}
}

// The switch goes to the backend, which restarts the session with it; the menu follows.
func TestSetLocalServersThroughTheBackend(t *testing.T) {
	f := newFixture(t, "", Options{})
	s := f.start(t)
	f.dispatch(t, SetLocalServers{Session: s.ID, On: true})
	if !s.LocalServers() {
		t.Fatal("the session's switch is still off")
	}
	if st := f.p.State(); len(st.Sessions) != 1 || !st.Sessions[0].LocalServers {
		t.Errorf("the app's state: %+v", st.Sessions)
	}
	if err := f.p.Dispatch(SetLocalServers{Session: "gone", On: true}); err == nil {
		t.Error("switching a session that is not there gave no error")
	}
}

// Check this Mac… opens its window, runs the check once however often it is asked while it
// runs, and then shows each program's line, a Copy report button that copies the report and
// one that shows its file.
func TestCheckMachine(t *testing.T) {
	release := make(chan struct{})
	var runs atomic.Int32
	report := "OpenWorker sandbox check\nSystem: macOS 15.3.1 (arm64)\n"
	f := newFixture(t, "", Options{Native: sandbox.Seatbelt, Wall: sandbox.Status{Provider: sandbox.Seatbelt, OK: true},
		CheckMachine: func(context.Context) (Check, error) {
			runs.Add(1)
			<-release
			return Check{Summary: "The wall held; 1 program is broken.", Report: report, ReportPath: "/Users/ada/Library/Application Support/OpenWorker/check-report.txt",
				Lines: []CheckLine{{Name: "git --version", Status: "works", OK: true}, {Name: "npm install from a registry on loopback", Status: "broken", Detail: "exit status 1: npm error code EPERM"}}}, nil
		}})
	f.dispatch(t, CheckMachine{})
	f.dispatch(t, CheckMachine{})
	w := openWindow(t, f.p.View(), CheckWindow)
	if d := view.Dump(view.App{Windows: []view.Window{w}}); !strings.Contains(d, "running real programs behind the sandbox") || strings.Contains(d, "Copy report") {
		t.Errorf("while it runs:\n%s", d)
	}
	close(release)
	tstest.WaitFor(t, 5*time.Second, func() error {
		if f.p.State().UI.Check.Running {
			return errors.New("still running")
		}
		return nil
	})
	if n := runs.Load(); n != 1 {
		t.Errorf("the check ran %d times, want once", n)
	}
	d := view.Dump(view.App{Windows: []view.Window{openWindow(t, f.p.View(), CheckWindow)}})
	for _, want := range []string{
		"The wall held; 1 program is broken.",
		`"npm install from a registry on loopback — broken"`, `secondary "exit status 1: npm error code EPERM"`,
		`button "Copy report" -> view.CopyText{Text:OpenWorker sandbox check`,
		`button "Show report file" -> view.OpenPath{`,
		`button "Check again" -> presenter.CheckMachine{}`,
	} {
		if !strings.Contains(d, want) {
			t.Errorf("the check's window lacks %s:\n%s", want, d)
		}
	}
	if err := f.p.Dispatch(view.CopyText{Text: "x"}); err == nil {
		t.Error("the presenter took the shell's CopyText")
	}
}

// An app that cannot run the check says what to do instead.
func TestCheckMachineUnavailable(t *testing.T) {
	f := newFixture(t, "", Options{})
	f.dispatch(t, CheckMachine{})
	d := view.Dump(view.App{Windows: []view.Window{openWindow(t, f.p.View(), CheckWindow)}})
	if !strings.Contains(d, "openworker sandbox check --report FILE") {
		t.Errorf("window:\n%s", d)
	}
}

func openWindow(t *testing.T, app view.App, id string) view.Window {
	t.Helper()
	w, ok := window(app, id)
	if !ok {
		t.Fatalf("no window %s among %d", id, len(app.Windows))
	}
	return w
}

// publishing is a backend that records what it was asked to publish.
type publishing struct {
	nopBackend
	asked []string
}

func (p *publishing) SetPublish(id string, port int, on bool) error {
	p.asked = append(p.asked, fmt.Sprintf("%s %d %v", id, port, on))
	return nil
}

// A Linux session's Access list has "Publish a port…", whose window takes a port (and says
// what is wrong with one that is not), and each port asked for with Stop publishing.
func TestPublishAPortFromTheAccessList(t *testing.T) {
	s := previewState("linux", "allowlist").withSession()
	s.Sessions[0].Access.Published = []backend.Published{{Port: 5173, Asked: true}, {Port: 3000, HostPort: 3000}}
	it, ok := findItem(Menu(s), "Publish a port…")
	if !ok || it.Action != (ShowWindow{ID: PublishWindow, Session: "7f3a9c"}) {
		t.Fatalf("Publish a port…: %+v (found %v)", it, ok)
	}
	if it, ok := findItem(Menu(s), "Stop publishing"); !ok || it.Action != (Unpublish{Session: "7f3a9c", Port: 5173}) {
		t.Errorf("Stop publishing: %+v (found %v)", it, ok)
	}
	if _, ok := findItem(Menu(previewState("seatbelt", "allowlist").withSession()), "Publish a port…"); ok {
		t.Error("a Mac session's Access list offers to publish a port")
	}
	b := &publishing{}
	p := New(b, Options{Settings: nopEditor{}, Logins: newFakeLogins(), Home: "/home/x"})
	for _, a := range []view.Action{ShowWindow{ID: PublishWindow, Session: "7f3a9c"}, EditPublish{Session: "7f3a9c", Text: "http"}} {
		if err := p.Dispatch(a); err != nil {
			t.Fatal(err)
		}
	}
	st := p.State()
	st.Sessions = s.Sessions
	dump := view.Dump(view.App{Windows: Windows(st)})
	if !strings.Contains(dump, "A port is a number from 1 to 65535.") || !strings.Contains(dump, `[disabled] key=return -> presenter.PublishPort`) {
		t.Errorf("a port that is not one:\n%s", dump)
	}
	if err := p.Dispatch(PublishPort{Session: "7f3a9c", Port: "70000"}); err == nil || len(b.asked) != 0 {
		t.Errorf("port 70000: %v, asked %v", err, b.asked)
	}
	if err := p.Dispatch(PublishPort{Session: "7f3a9c", Port: " 3000 "}); err != nil {
		t.Fatal(err)
	}
	if err := p.Dispatch(Unpublish{Session: "7f3a9c", Port: 5173}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(b.asked, ",") != "7f3a9c 3000 true,7f3a9c 5173 false" || slices.Contains(p.State().UI.Open, PublishWindow+":7f3a9c") {
		t.Errorf("asked %v; open %v", b.asked, p.State().UI.Open)
	}
}
