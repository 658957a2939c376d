package backend

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
	"github.com/openworker/openworker/core/tstest"
	"github.com/openworker/openworker/core/webfetch"
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
	b        *Backend
	settings string
	project  string
	audit    string // the audit trail's file
}

func newFixture(t testing.TB, settings string) *fixture {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	f := &fixture{settings: filepath.Join(root, "config", "config.toml"), project: filepath.Join(root, "project")}
	home, state, tmp := filepath.Join(root, "home"), filepath.Join(root, "state"), filepath.Join(root, "tmp")
	for _, d := range []string{f.project, home, tmp, filepath.Dir(f.settings)} {
		os.MkdirAll(d, 0o700)
	}
	if settings != "" {
		os.WriteFile(f.settings, []byte(settings), 0o600)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	store, err := OpenStore(ctx, f.settings, state, "linux", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	exe, _ := os.Executable()
	f.audit = filepath.Join(state, "audit.jsonl")
	log, err := audit.Open(f.audit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	f.b, err = New(Options{Settings: store, GOOS: "linux", Session: session.Options{Audit: log,
		Providers: map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}},
		UserHome:  home, StateDir: state, TmpRoot: tmp, GOOS: "linux", RunnerPath: exe, HostEnv: []string{"PATH=" + os.Getenv("PATH")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.b.EndAll)
	return f
}

func (f *fixture) start(t testing.TB) (*session.Session, *url.URL) {
	t.Helper()
	s, err := f.b.Start(context.Background(), Request{Writable: []string{f.project}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Exec(runner.ExecArgs{Command: `printf %s "$HTTPS_PROXY"`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(string(r.Stdout))
	if err != nil || u.Host == "" {
		t.Fatalf("the session's proxy: %q %v", r.Stdout, err)
	}
	return s, u
}

// get fetches http://origin/ through the proxy, as a sandboxed command would.
func get(px *url.URL, origin string) (int, error) {
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(px), DisableKeepAlives: true}, Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + origin + "/")
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

func origin(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// The answer is in force for the running session at once, while a command runs in it.
func TestAnswerOpensTheSiteWhileACommandRuns(t *testing.T) {
	f := newFixture(t, "")
	s, px := f.start(t)
	o := origin(t)
	if code, _ := get(px, o); code != http.StatusForbidden {
		t.Fatalf("before the answer: %d", code)
	}
	running := make(chan struct{})
	go func() {
		close(running)
		s.Exec(runner.ExecArgs{Command: "sleep 3"}, nil)
	}()
	<-running
	tstest.WaitFor(t, 5*time.Second, func() error {
		if s.Running() == "" {
			return errors.New("the command has not started")
		}
		return nil
	})
	asked := make(chan SiteAnswer, 1)
	go func() {
		a, _ := f.b.RequestSite(context.Background(), SiteRequest{Session: s.ID, Site: o, Reason: "tests"})
		asked <- a
	}()
	var card CardInfo
	tstest.WaitFor(t, 5*time.Second, func() error {
		cs := f.b.Cards()
		if len(cs) != 1 {
			return fmt.Errorf("%d cards", len(cs))
		}
		card = cs[0]
		return nil
	})
	if card.Blocked.IsZero() {
		t.Fatalf("the card does not say the sandbox blocked it: %+v", card)
	}
	start := time.Now()
	if _, err := f.b.Answer(card.ID, "session"); err != nil {
		t.Fatal(err)
	}
	if code, err := get(px, o); code != http.StatusOK {
		t.Fatalf("after the answer, while a command runs: %d %v", code, err)
	}
	if d := time.Since(start); d > time.Second || s.Running() == "" {
		t.Fatalf("the answer waited for the command (%v)", d)
	}
	if a := <-asked; a.Outcome != "session" {
		t.Fatalf("the asker got %+v", a)
	}
}

// Always allow while the settings file is broken: in force at once, written once the file
// is fixed, and the broken text is never written over.
func TestAlwaysWhileTheSettingsFileIsBroken(t *testing.T) {
	f := newFixture(t, "sandbox_network_hosts = [\"github.com:443\"]\n")
	s, px := f.start(t)
	o := origin(t)
	broken := "sandbox_network_hosts = [\"github.com:443\"\n# a save half done\n"
	os.WriteFile(f.settings, []byte(broken), 0o600)
	tstest.WaitFor(t, 5*time.Second, func() error {
		if f.b.Settings().Problems == nil {
			return errors.New("the store has not seen the broken file")
		}
		return nil
	})
	go f.b.RequestSite(context.Background(), SiteRequest{Session: s.ID, Site: o, Reason: "tests"})
	var card CardInfo
	tstest.WaitFor(t, 5*time.Second, func() error {
		if cs := f.b.Cards(); len(cs) == 1 {
			card = cs[0]
			return nil
		}
		return errors.New("no card")
	})
	_, err := f.b.Answer(card.ID, "always")
	var pe *ErrPending
	if !errors.As(err, &pe) {
		t.Fatalf("always with a broken file: %v, want it in force and pending", err)
	}
	if code, _ := get(px, o); code != http.StatusOK {
		t.Fatalf("always with a broken file is not in force: %d", code)
	}
	if b, _ := os.ReadFile(f.settings); string(b) != broken {
		t.Fatalf("the broken file was written over:\n%s", b)
	}
	// A new session has it too.
	_, px2 := f.start(t)
	if code, _ := get(px2, o); code != http.StatusOK {
		t.Fatalf("a new session while pending: %d", code)
	}
	// The person fixes the file: the change is written into their text.
	fixed := "# fixed\nsandbox_network_hosts = [\"github.com:443\"]\n"
	os.WriteFile(f.settings, []byte(fixed), 0o600)
	want := "# fixed\nsandbox_network_hosts = [\"github.com:443\", \"" + o + "\"]\n"
	tstest.WaitFor(t, 5*time.Second, func() error {
		if b, _ := os.ReadFile(f.settings); string(b) != want {
			return fmt.Errorf("the file is %q", b)
		}
		return nil
	})
	if p := f.b.Store().Pending(); len(p) != 0 {
		t.Fatalf("still pending: %v", p)
	}
	if code, _ := get(px, o); code != http.StatusOK {
		t.Fatalf("after the write: %d", code)
	}
}

func TestTickAndSitesFollowTheFile(t *testing.T) {
	f := newFixture(t, "# mine\n")
	if err := f.b.Tick("github"); err != nil {
		t.Fatal(err)
	}
	sites := f.b.Sites()
	for _, g := range sites.Groups {
		if g.ID == "github" && !g.Ticked {
			t.Fatalf("github not shown ticked: %+v", g)
		}
	}
	if err := f.b.AddSite("*.com"); err == nil {
		t.Fatal("a site the settings file refuses was added")
	}
	// The file edited by hand: the list follows.
	os.WriteFile(f.settings, []byte("sandbox_network_hosts = [\"example.org:443\"]\n"), 0o600)
	tstest.WaitFor(t, 5*time.Second, func() error {
		s := f.b.Sites()
		if len(s.Custom) != 1 || s.Custom[0] != "example.org:443" || s.Groups[0].Ticked {
			return fmt.Errorf("sites %+v", s)
		}
		return nil
	})
}

// BenchmarkAnswerToAdmitted is the time from a person's answer to the next request of the
// running sandbox being admitted, while a command runs in the session.
func BenchmarkAnswerToAdmitted(b *testing.B) {
	f := newFixture(b, "")
	s, px := f.start(b)
	o := origin(b)
	go s.Exec(runner.ExecArgs{Command: "sleep 600"}, nil)
	tstest.WaitFor(b, 5*time.Second, func() error {
		if s.Running() == "" {
			return errors.New("not running")
		}
		return nil
	})
	entry, _ := hosts.Parse(o)
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		_ = f.b.Revoke(s.ID, entry.String())
		done := make(chan struct{})
		go func() {
			f.b.RequestSite(context.Background(), SiteRequest{Session: s.ID, Site: o, Reason: "bench"})
			close(done)
		}()
		var card CardInfo
		tstest.WaitFor(b, 5*time.Second, func() error {
			cs := f.b.Cards()
			if len(cs) != 1 {
				return fmt.Errorf("%d cards", len(cs))
			}
			card = cs[0]
			return nil
		})
		conn, err := net.Dial("tcp", px.Host)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		f.b.Answer(card.ID, "session")
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", o, o, basic(px))
		line, err := bufio.NewReader(conn).ReadString('\n')
		took = append(took, time.Since(start))
		b.StopTimer()
		conn.Close()
		<-done
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
			b.Fatalf("not admitted after the answer: %q %v", line, err)
		}
		b.StartTimer()
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-median/answer-to-admitted")
}

func basic(u *url.URL) string {
	p, _ := u.User.Password()
	return base64Std(u.User.Username() + ":" + p)
}

func base64Std(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// answerNext answers the next card that comes up with word.
func (f *fixture) answerNext(t *testing.T, word string) {
	t.Helper()
	tstest.WaitFor(t, 10*time.Second, func() error {
		cs := f.b.Cards()
		if len(cs) != 1 {
			return fmt.Errorf("%d cards", len(cs))
		}
		if cs[0].Kind != "fetch" || !slices.Contains(cs[0].Answers, "once") {
			t.Fatalf("not a fetch card: %+v", cs[0])
		}
		_, err := f.b.Answer(cs[0].ID, word)
		return err
	})
}

func TestFetchAsksAndOnceIsOnce(t *testing.T) {
	f := newFixture(t, "")
	s, px := f.start(t)
	o := origin(t)
	fetch := func() chan FetchResult {
		ch := make(chan FetchResult, 1)
		go func() {
			r, err := f.b.Fetch(context.Background(), FetchRequest{Session: s.ID, URL: "http://" + o + "/", Reason: "docs"})
			if err != nil {
				t.Error(err)
			}
			ch <- r
		}()
		return ch
	}
	ch := fetch()
	f.answerNext(t, "once")
	if r := <-ch; r.Page == nil || r.Page.Text != "ok" {
		t.Fatalf("after once: %+v", r)
	}
	// Once is that one fetch only: not the session's commands, not the next fetch.
	if code, _ := get(px, o); code != http.StatusForbidden {
		t.Fatalf("once opened the site for the session's commands: %d", code)
	}
	ch = fetch()
	f.answerNext(t, "deny")
	if r := <-ch; r.Page != nil || r.Outcome != "denied" {
		t.Fatalf("after deny: %+v", r)
	}
	r, err := f.b.Fetch(context.Background(), FetchRequest{Session: s.ID, URL: "http://" + o + "/", Reason: "again"})
	if err != nil || r.Outcome != "denied" || len(f.b.Cards()) != 0 {
		t.Fatalf("a denied site asked again: %+v %v, %d cards", r, err, len(f.b.Cards()))
	}
}

func TestFetchSessionOpensTheSiteForCommands(t *testing.T) {
	f := newFixture(t, "")
	s, px := f.start(t)
	o := origin(t)
	ch := make(chan FetchResult, 1)
	go func() {
		r, _ := f.b.Fetch(context.Background(), FetchRequest{Session: s.ID, URL: "http://" + o + "/"})
		ch <- r
	}()
	f.answerNext(t, "session")
	if r := <-ch; r.Page == nil {
		t.Fatalf("after session: %+v", r)
	}
	if code, _ := get(px, o); code != http.StatusOK {
		t.Fatalf("This session did not open the site for the commands: %d", code)
	}
}

func TestFetchWithFullAccessIsRefused(t *testing.T) {
	f := newFixture(t, "sandbox_approvals = \"full-access\"\n")
	s, _ := f.start(t)
	r, err := f.b.Fetch(context.Background(), FetchRequest{Session: s.ID, URL: "http://" + origin(t) + "/"})
	if err != nil || r.Outcome != "refused: full access" || !strings.Contains(r.Message, "openworker sites add") || len(f.b.Cards()) != 0 {
		t.Fatalf("full access: %+v %v", r, err)
	}
}

type loopResolver struct{}

func (loopResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// A site on the list by name that leads to loopback is refused, as the proxy refuses it.
func TestFetchRefusesANameThatLeadsToLoopback(t *testing.T) {
	o := origin(t)
	_, port, _ := net.SplitHostPort(o)
	f := newFixture(t, "sandbox_network_hosts = [\"loop.example.test:"+port+"\"]\n")
	s, _ := f.start(t)
	defer func(old func(*webfetch.Options)) { fetchOptions = old }(fetchOptions)
	fetchOptions = func(o *webfetch.Options) { o.Resolver = loopResolver{} }
	r, err := f.b.Fetch(context.Background(), FetchRequest{Session: s.ID, URL: "http://loop.example.test:" + port + "/"})
	var pe *webfetch.PrivateError
	if !errors.As(err, &pe) || r.Page != nil {
		t.Fatalf("a name that leads to loopback: %+v %v", r, err)
	}
}

// A watcher's event read before the store's own later write must not bring back what the
// write changed: the settings in force are what the file says now.
func TestStaleReloadDoesNotUndoAChange(t *testing.T) {
	f := newFixture(t, "sandbox_network_hosts = [\"github.com:443\"]\n")
	before := f.b.Settings().Settings
	if err := f.b.RemoveSite("github.com:443"); err != nil {
		t.Fatal(err)
	}
	f.b.Store().reloaded(config.Event{Settings: before}) // read before the remove was written
	if hs := f.b.Settings().Settings.NetworkHosts; len(hs) != 0 {
		t.Fatalf("a stale reload put back %v", hs)
	}
}

func TestSetWordsAndToolchains(t *testing.T) {
	f := newFixture(t, "# mine\n")
	if err := f.b.SetProvider("seatbelt"); err == nil || !strings.Contains(err.Error(), "seatbelt") {
		t.Fatalf("a provider this OS does not have: %v", err)
	}
	if err := f.b.SetApprovals("full-access"); err != nil {
		t.Fatal(err)
	}
	if f.b.Settings().Settings.Approvals != "full-access" {
		t.Fatal("the change is not in force at once")
	}
	if err := f.b.SetToolchain(".cargo", true); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f.settings)
	if string(b) != "# mine\nsandbox_approvals = \"full-access\"\nsandbox_toolchains = [\".cargo\"]\n" {
		t.Fatalf("the file: %q", b)
	}
}

// A fetch card answered Once after its asker stopped waiting is taken by the next fetch, and
// by that one only.
func TestOnceAnsweredLateIsTakenByOneFetch(t *testing.T) {
	f := newFixture(t, "")
	s, _ := f.start(t)
	o := origin(t)
	r, err := f.b.Fetch(context.Background(), FetchRequest{Session: s.ID, URL: "http://" + o + "/", Wait: time.Millisecond})
	if err != nil || r.Outcome != "no answer yet" || r.Card == nil {
		t.Fatalf("an ask that stops waiting: %+v %v", r, err)
	}
	if _, err := f.b.Answer(r.Card.ID, "once"); err != nil {
		t.Fatal(err)
	}
	r, err = f.b.Fetch(context.Background(), FetchRequest{Session: s.ID, URL: "http://" + o + "/", Wait: time.Millisecond})
	if err != nil || r.Page == nil || len(f.b.Cards()) != 0 {
		t.Fatalf("the fetch after a late Once: %+v %v", r, err)
	}
	r, err = f.b.Fetch(context.Background(), FetchRequest{Session: s.ID, URL: "http://" + o + "/", Wait: time.Millisecond})
	if err != nil || r.Page != nil || r.Outcome != "no answer yet" {
		t.Fatalf("a second fetch used the same Once: %+v %v", r, err)
	}
}

// A person's change to a session's sites or to the machine's list is recorded site by site,
// with who made it: the app (the presenter), the CLI (the local API), or a card.
func TestSiteChangesAreAudited(t *testing.T) {
	f := newFixture(t, "")
	s, _ := f.start(t)
	if err := f.b.AllowForSessionBy(s.ID, "api.example.com", ByCLI); err != nil {
		t.Fatal(err)
	}
	if err := f.b.Revoke(s.ID, "api.example.com"); err != nil {
		t.Fatal(err)
	}
	if err := f.b.TickBy("github", ByCLI); err != nil {
		t.Fatal(err)
	}
	if err := f.b.AddSite("docs.example.org"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f.audit)
	trail := string(b)
	for _, want := range []string{
		`"session":"` + s.ID + `","summary":"allowed for the session: api.example.com:443","by":"the CLI (local API)"`,
		`"session":"` + s.ID + `","summary":"revoked for the session: api.example.com:443","by":"the app"`,
		`"summary":"added to the machine's list: github.com:443 (group github)","by":"the CLI (local API)"`,
		`"summary":"added to the machine's list: docs.example.org:443","by":"the app"`,
	} {
		if !strings.Contains(trail, want) {
			t.Errorf("the audit trail has no %s\n%s", want, trail)
		}
	}
}

// reporter is a direct provider whose wall reports denials; it counts how often what it
// keeps running for that was stopped.
type reporter struct {
	sandbox.DirectProvider
	stopped *atomic.Int32
}

func (reporter) FollowDenials(context.Context, string, sandbox.Process) (sandbox.DenialReport, error) {
	return nil, errors.New("no report here")
}
func (r reporter) StopFollowing() { r.stopped.Add(1) }

// The app and the daemon end every session as they stop: what the wall keeps running to
// report denials (the unified log's stream on a Mac) stops with them.
func TestEndAllStopsFollowingDenials(t *testing.T) {
	f := newFixture(t, "")
	stopped := &atomic.Int32{}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	os.Mkdir(filepath.Join(root, "home"), 0o700)
	store, err := OpenStore(context.Background(), filepath.Join(root, "config.toml"), root, "linux", true)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	exe, _ := os.Executable()
	b, err := New(Options{Settings: store, GOOS: "linux", Session: session.Options{
		Providers: map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: reporter{stopped: stopped}},
		UserHome:  filepath.Join(root, "home"), StateDir: filepath.Join(root, "state"), TmpRoot: root, GOOS: "linux", RunnerPath: exe,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Start(context.Background(), Request{Writable: []string{f.project}}); err != nil {
		t.Fatal(err)
	}
	b.EndAllBecause("the app quit")
	if n := stopped.Load(); n != 1 {
		t.Errorf("following denials was stopped %d times, want once", n)
	}
}

// The app's local-servers switch of a running session restarts it with the switch as asked,
// and tells the app's watchers.
func TestSetLocalServers(t *testing.T) {
	f := newFixture(t, "")
	s, _ := f.start(t)
	events, cancel := f.b.Subscribe(false)
	defer cancel()
	if err := f.b.SetLocalServers(s.ID, true); err != nil {
		t.Fatal(err)
	}
	if !s.LocalServers() {
		t.Error("the session's switch is still off")
	}
	tstest.WaitFor(t, 5*time.Second, func() error {
		select {
		case e := <-events:
			if e.Type == AccessChanged && e.Session == s.ID {
				return nil
			}
		default:
		}
		return errors.New("no access.changed event")
	})
	if err := f.b.SetLocalServers("nope", true); err == nil || !strings.Contains(err.Error(), `no session "nope"`) {
		t.Errorf("an unknown session: %v", err)
	}
}

// A fetch the person has not answered yet says what applies to a fetch: to fetch again later
// (an agent's, with web_fetch), not to ask with request_site.
func TestFetchNoAnswerYetSaysToFetchAgain(t *testing.T) {
	f := newFixture(t, "")
	for _, agent := range []bool{true, false} {
		s, err := f.b.Start(context.Background(), Request{Writable: []string{f.project}, Agent: agent})
		if err != nil {
			t.Fatal(err)
		}
		r, err := f.b.Fetch(context.Background(), FetchRequest{Session: s.ID, URL: "http://" + origin(t) + "/", Reason: "docs", NoWait: true})
		if err != nil || r.Outcome != "no answer yet" {
			t.Fatalf("%+v %v", r, err)
		}
		if strings.Contains(r.Message, "request_site") {
			t.Errorf("agent %v: %q", agent, r.Message)
		}
		if agent && !strings.Contains(r.Message, "web_fetch again") || !agent && !strings.Contains(r.Message, "openworker answer") {
			t.Errorf("agent %v: %q", agent, r.Message)
		}
		f.b.End(s.ID)
	}
}
