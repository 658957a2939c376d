package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/apiclient"
	"github.com/openworker/openworker/core/approvals"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/termtext"
)

// client is the local API's client for the daemon of this user.
func client() (*apiclient.Client, error) {
	state, err := config.StateDir()
	if err != nil {
		return nil, err
	}
	return apiclient.New(api.SocketPath(state)), nil
}

var cardsCommand = command{
	name:     "cards",
	synopsis: "cards [--watch] [--json]",
	about: `Lists the site cards waiting for an answer: a coworker asked for a site, with a reason.
Each says whether the sandbox has in fact blocked the site in that session, and when. Answer
with openworker answer CARD session|always|deny (fetch cards also take once). With --watch it
keeps showing new cards as they come, and counts as a person watching (cards are shown here).`,
	example: "openworker cards --watch\nopenworker answer c1a2b3c4d5 session",
	maxArgs: 0,
}

func cmdCards(args []string) error {
	fs := newFlags(cardsCommand)
	watch := fs.Bool("watch", false, "keep showing cards as they come, until Ctrl-C")
	asJSON := fs.Bool("json", false, "one JSON object per card")
	if _, _, err := parse(fs, cardsCommand, args); err != nil {
		return err
	}
	c, err := client()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	show := func(card backend.CardInfo) {
		if *asJSON {
			b, _ := json.Marshal(card)
			fmt.Println(string(b))
			return
		}
		fmt.Println(cardLine(card))
	}
	if !*watch {
		cards, err := c.Cards(ctx)
		if err != nil {
			return err
		}
		if len(cards) == 0 && !*asJSON {
			fmt.Fprintln(os.Stderr, "openworker: no card is waiting")
		}
		for _, card := range cards {
			show(card)
		}
		return nil
	}
	// The stream comes first, so that no card made meanwhile is missed; the ones already
	// up are listed once it is open.
	opened := make(chan struct{})
	var once bool
	go func() {
		<-opened
		cards, err := c.Cards(ctx)
		if err == nil {
			for _, card := range cards {
				show(card)
			}
		}
	}()
	err = c.Events(ctx, true, func(e backend.Event) {
		if !once {
			once = true
			close(opened)
		}
		switch {
		case e.Type == backend.CardPending && e.Card != nil && e.Card.Askers == 1:
			show(*e.Card)
		case (e.Type == backend.CardAnswered || e.Type == backend.CardExpired) && e.Card != nil && !*asJSON:
			fmt.Printf("card %s (%s): %s\n", termtext.Escape(e.Card.ID), termtext.Escape(e.Card.Site), termtext.Escape(string(e.Outcome)))
		}
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// cardLine is a card in one line: ID, session, site, kind, whether the sandbox blocked it
// (for an SSH signature, which command asked), and the coworker's reason.
func cardLine(c backend.CardInfo) string {
	blocked := "not blocked by the sandbox yet"
	switch {
	case approvals.Kind(c.Kind).SSH() && c.BlockedCommand != "":
		// Not a site the sandbox blocks: a signature the command running asked for.
		blocked = "asked by \"" + termtext.Show(c.BlockedCommand, 60) + "\""
	case approvals.Kind(c.Kind).SSH():
		blocked = "asked while no command ran"
	case !c.Blocked.IsZero():
		blocked = "blocked by the sandbox at " + c.Blocked.Local().Format("15:04:05")
		if c.BlockedCommand != "" {
			blocked += " during \"" + termtext.Show(c.BlockedCommand, 60) + "\""
		}
	}
	// An SSH card's answer holds for its kind of signature only: the line says which.
	kind := c.Kind
	switch approvals.Kind(c.Kind) {
	case approvals.SSHLogin:
		kind, blocked = "SSH login", blocked+"; an answer holds for logins to this server, not for signatures"
	case approvals.SSHSigning:
		kind, blocked = "SSH signing", blocked+"; an answer holds for signatures for this, not for logins"
	}
	// The reason is the agent's and the command the command's: shown escaped, never as
	// terminal controls or extra lines.
	return fmt.Sprintf("%s  session %s  %s  (%s; %s)  reason: %s  [answers: %s]", termtext.Escape(c.ID), termtext.Escape(c.Session), termtext.Escape(c.Site), termtext.Escape(kind), blocked, termtext.Escape(c.Reason), termtext.Escape(strings.Join(c.Answers, ", ")))
}

var answerCommand = command{
	name:     "answer",
	synopsis: "answer CARD once|session|always|deny",
	about: `Answers a site card. session opens the site for the session's commands at once, with no
restart; always does that and adds it to the machine's settings, for every session; deny
refuses it, and a repeated ask for it in that session is refused without a card; once (web
fetch cards only) allows that one fetch. Any other word is refused and the card stays up.`,
	example: "openworker answer c1a2b3c4d5 session",
	minArgs: 2, maxArgs: 2,
	needs: "a card ID (openworker cards lists them) and an answer",
}

func cmdAnswer(args []string) error {
	pos, _, err := parse(newFlags(answerCommand), answerCommand, args)
	if err != nil {
		return err
	}
	c, err := client()
	if err != nil {
		return err
	}
	res, err := c.Answer(context.Background(), pos[0], api.AnswerRequest{Answer: pos[1], Exact: true})
	if err != nil {
		return err
	}
	fmt.Printf("card %s: %s\n", termtext.Escape(res.Card), termtext.Escape(string(res.Outcome)))
	if res.Message != "" {
		fmt.Fprintln(os.Stderr, "openworker:", termtext.Escape(res.Message))
	}
	return nil
}

var requestSiteCommand = command{
	name:     "request-site",
	synopsis: "request-site SESSION HOST[:PORT] --reason TEXT [--wait D]",
	about: `Asks for a site for a session, as a coworker does when a command was blocked: a card shows
the site and the reason, and the answer applies to the running session at once. Prints the
decision — session, always, once, denied, no answer yet, refused: full access — and exits 0
when the site is allowed, 1 when denied or refused, 4 when there is no answer yet (the card
stays up, and a later answer still applies). While it waits, a line on standard error names
the card and how to answer it; --wait 0 names it and returns at once. Ctrl-C (SIGTERM,
SIGHUP) stops the wait, not the card: it says the card is still waiting and exits 130 (143,
129).`,
	example: "openworker request-site 3f9c2a1b7d0e registry.example.com --reason \"npm install needs the registry\"",
	minArgs: 2, maxArgs: 2,
	needs: "a session ID and a site",
}

func cmdRequestSite(args []string) error {
	fs := newFlags(requestSiteCommand)
	reason := fs.String("reason", "", "why the coworker needs the site, shown on the card (required)")
	wait := seconds(60 * time.Second)
	fs.Var(&wait, "wait", waitUsage)
	pos, _, err := parse(fs, requestSiteCommand, args)
	if err != nil {
		return err
	}
	if strings.TrimSpace(*reason) == "" {
		return usagef("request-site", "request-site needs --reason: the card shows it to the person who answers")
	}
	c, err := client()
	if err != nil {
		return err
	}
	w := newCardWait()
	defer w.stop()
	ans, err := c.RequestSiteProgress(w.ctx, pos[0], api.SiteRequest{Site: pos[1], Reason: *reason, WaitMS: time.Duration(wait).Milliseconds(), NoWait: wait == 0}, w.onCard)
	if err != nil {
		return w.interrupted(err)
	}
	said := w.card != nil
	fmt.Println(termtext.Escape(string(ans.Outcome)))
	if ans.Message != "" && !(said && ans.Outcome == approvals.NoAnswerYet) {
		fmt.Fprintln(os.Stderr, "openworker:", termtext.Escape(ans.Message))
	}
	switch {
	case ans.Outcome.Allows():
		return nil
	case ans.Outcome == approvals.NoAnswerYet:
		return exitError{4}
	}
	return exitError{1}
}

var accessCommand = command{
	name:     "access",
	synopsis: "access SESSION [--allow HOST[:PORT]]… [--revoke HOST[:PORT]]… [--publish PORT]… [--unpublish PORT]… [--local-servers on|off]",
	about: `Shows a session's Access list: its sites, from the settings, from shared logins, and those
allowed for this session only (Session only), its denials, the SSH signatures its cards
allowed, each a login to a server or a signature for what it names, never both; and the ports of its sandbox
published on this machine's 127.0.0.1. --allow allows a site for the session at once (and
takes back a denial of it); --revoke takes back a Session only site, and open tunnels to it
close at once. --publish PORT publishes that port of the sandbox's own loopback (Linux) on
this machine's 127.0.0.1 while a server listens there, at the same port or the next free
one; --unpublish takes that back. --local-servers on|off switches the session's local servers,
as its menu in the app does (on Linux every port a command listens on is then published; on a
Mac its shell restarts).`,
	example: "openworker access 3f9c2a1b7d0e --allow api.example.com --revoke test.example.com:8443",
	minArgs: 1, maxArgs: 1,
	needs: "a session ID (openworker session ls lists them)",
}

func cmdAccess(args []string) error {
	fs := newFlags(accessCommand)
	var allow, revoke siteFlags
	fs.Var(&allow, "allow", "allow a site for this session only (repeatable)")
	fs.Var(&revoke, "revoke", "take back a Session only site (repeatable)")
	var publish, unpublish portFlags
	fs.Var(&publish, "publish", "publish this port of the sandbox's loopback on this machine's 127.0.0.1 while a server listens there (repeatable)")
	fs.Var(&unpublish, "unpublish", "take back a port asked for with --publish (repeatable)")
	localServers := fs.String("local-servers", "", "on or off: switch the session's local servers")
	pos, _, err := parse(fs, accessCommand, args)
	if err != nil {
		return err
	}
	c, err := client()
	if err != nil {
		return err
	}
	ctx := context.Background()
	var a backend.Access
	var switched *bool
	switch *localServers {
	case "":
	case "on", "off":
		on := *localServers == "on"
		switched = &on
	default:
		return usagef("access", "access: --local-servers %q is not on or off", *localServers)
	}
	if len(allow)+len(revoke)+len(publish)+len(unpublish) > 0 || switched != nil {
		a, err = c.ChangeAccess(ctx, pos[0], api.AccessRequest{Allow: allow, Revoke: revoke, Publish: publish, Unpublish: unpublish, LocalServers: switched})
	} else {
		a, err = c.Access(ctx, pos[0])
	}
	if err != nil {
		return err
	}
	fmt.Printf("Session %s (network %s)\n", termtext.Escape(a.Session), termtext.Escape(a.Network))
	if len(a.Sites) == 0 {
		fmt.Println("  no sites")
	}
	for _, s := range a.Sites {
		mark := ""
		switch s.Source {
		case backend.SessionOnly:
			mark = "  Session only"
		case backend.FromLogin:
			mark = "  (shared login)"
		}
		fmt.Printf("  %s%s\n", termtext.Escape(s.Site), mark)
	}
	for _, d := range a.Denied {
		fmt.Printf("  %s  Denied\n", termtext.Escape(d))
	}
	for _, s := range a.SSH {
		mark := "  (settings: always allowed)"
		if s.Source == backend.SessionOnly {
			mark = "  Session only"
		}
		fmt.Printf("  SSH %s%s\n", termtext.Escape(s.String()), mark)
	}
	for _, p := range a.Pending {
		fmt.Printf("  pending write to the settings file: %s\n", termtext.Escape(p))
	}
	for _, l := range a.Logins {
		how := map[string]string{"stand-in": ", with stand-ins for its secrets (the real ones stay outside)", "agent": ", its keys outside (OpenWorker's agent)"}[l.Secrets]
		fmt.Printf("  shared login %s: %d file(s) copied%s%s\n", termtext.Escape(l.Key), l.Files, how, termtext.Escape(leftOut(l.LeftOut)))
	}
	if a.LoginsNote != "" {
		fmt.Printf("  %s\n", termtext.Escape(a.LoginsNote))
	}
	for _, line := range publishedLines(a.Published) {
		fmt.Printf("  %s\n", line)
	}
	if a.LocalServers {
		fmt.Println("  local servers on: every port a command listens on is published while it listens")
	}
	return nil
}

// siteChangeDone says what a sites change did, once the settings file has it.
func siteChangeDone(action, value string) string {
	what := value
	if e, err := hosts.Parse(value); err == nil && (action == "add" || action == "remove") {
		what = e.String()
	}
	what = termtext.Escape(what)
	switch action {
	case "add":
		return "added " + what + " to this machine's sites; running sessions reach it now"
	case "remove":
		return "removed " + what + " from this machine's sites; running sessions no longer reach it (open connections to it are closed)"
	case "tick":
		return "ticked " + what + ": its sites are on this machine's list; running sessions reach them now"
	}
	return "unticked " + what + ": its sites are off this machine's list; running sessions no longer reach them"
}

func leftOut(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return "; left out: " + strings.Join(l, "; ")
}

var sitesCommand = command{
	name:     "sites",
	synopsis: "sites list|tick GROUP|untick GROUP|add HOST[:PORT]|remove HOST[:PORT]",
	about: `The "Choose sites…" list: the groups of sites a tick opens (code hosting, package
registries, search APIs) and the machine's own sites. Changes go to the settings file
(sandbox_network_hosts) with its rules and messages, keeping the rest of the file as it is,
and running sessions take them at once. While the file has problems, a change is in force
and written once the file is fixed.`,
	example: "openworker sites tick github\nopenworker sites add api.example.com:443",
	minArgs: 1, maxArgs: 2,
	needs: "list, tick, untick, add or remove",
}

func cmdSites(args []string) error {
	pos, _, err := parse(newFlags(sitesCommand), sitesCommand, args)
	if err != nil {
		return err
	}
	c, err := client()
	if err != nil {
		return err
	}
	ctx := context.Background()
	var sites backend.Sites
	switch pos[0] {
	case "list":
		if len(pos) != 1 {
			return usagef("sites", "sites list takes nothing more")
		}
		if sites, err = c.Sites(ctx); errors.Is(err, apiclient.ErrNotRunning) {
			// The list is the settings file's: without a daemon, it is read from there.
			e, lerr := loadEnv()
			if lerr != nil {
				return lerr
			}
			e.warnSettings()
			fmt.Fprintln(os.Stderr, "openworker: the daemon is not running; this is the settings file's list ("+e.settingsPath+")")
			sites, err = backend.SitesOf(e.settings.NetworkHosts), nil
		}
		if err != nil {
			return err
		}
	case "tick", "untick", "add", "remove":
		if len(pos) != 2 {
			return usagef("sites", "sites %s needs a %s", pos[0], map[bool]string{true: "group (openworker sites list names them)", false: "site, HOST[:PORT]"}[pos[0] == "tick" || pos[0] == "untick"])
		}
		res, err := c.ChangeSites(ctx, api.SitesRequest{Action: pos[0], Value: pos[1]})
		if err != nil {
			return err
		}
		if res.Message != "" {
			// In force, and waiting for the settings file to be fixed: the file's problems
			// each on a line of its own.
			fmt.Fprintln(os.Stderr, "openworker:", termtext.Lines(res.Message))
			return nil
		}
		fmt.Println(siteChangeDone(pos[0], pos[1]))
		return nil
	default:
		return usagef("sites", "unknown sites command %q; use list, tick, untick, add or remove", pos[0])
	}
	kind := ""
	for _, g := range sites.Groups {
		if g.Kind != kind {
			kind = g.Kind
			fmt.Println(kind)
		}
		box := "[ ]"
		if g.Ticked {
			box = "[x]"
		} else if g.Partial {
			box = "[-]"
		}
		fmt.Printf("  %s %-12s %s  (%s)\n", box, g.ID, g.Name, strings.Join(g.Sites, ", "))
	}
	fmt.Println("Your sites")
	if len(sites.Custom) == 0 {
		fmt.Println("  none")
	}
	for _, s := range sites.Custom {
		fmt.Printf("  %s\n", termtext.Escape(s))
	}
	return nil
}

var fetchCommand = command{
	name:     "fetch",
	synopsis: "fetch SESSION URL --reason TEXT [--wait D]",
	about: `The coworker's web fetch: fetches a URL from OpenWorker itself, outside the sandbox, under
the session's allow list. A site not on it is asked for on a card (Once, This session, Always
allow, Deny); with full access it is refused. A loopback, private or link-local address is
refused unless an entry names the address (such as 127.0.0.1:8080; a name that leads there
is not enough), as the sandbox's proxy refuses it, and every redirect is checked again. Prints the
page as text (HTML made readable; binary summarised). While a card waits, a line on standard
error names it and how to answer it; --wait 0 names it and returns at once (exit 4).`,
	example: "openworker fetch 3f9c2a1b7d0e https://docs.example.com/install --reason \"install steps\"",
	minArgs: 2, maxArgs: 2,
	needs: "a session ID and a URL",
}

// waitUsage is --wait's, for request-site and fetch.
const waitUsage = "how long to wait for an answer (30s, 5m, or seconds; 0: do not wait, name the card and return); the card stays up after"

// sayCard names, on one line, the card a request waits on and how to answer it.
func sayCard(card backend.CardInfo) {
	fmt.Fprintf(os.Stderr, "openworker: card %s for %s is waiting for the person's answer (openworker answer %s %s)\n",
		card.ID, card.Site, card.ID, strings.Join(card.Answers, "|"))
}

// cardWait is a wait for a card's answer that Ctrl-C (SIGTERM, SIGHUP) ends: the card it
// named stays up, and the command exits as an interrupted one does.
type cardWait struct {
	ctx  context.Context
	stop func()
	got  atomicSignal
	card *backend.CardInfo
}

func newCardWait() *cardWait {
	ctx, cancel := context.WithCancel(context.Background())
	w := &cardWait{ctx: ctx}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			w.got.store(sig.(syscall.Signal))
			cancel()
		case <-done:
		}
	}()
	w.stop = func() { signal.Stop(sigs); close(done); cancel() }
	return w
}

// onCard says the card the wait is for, as soon as it is up.
func (w *cardWait) onCard(card backend.CardInfo) {
	w.card = &card
	sayCard(card)
}

// interrupted is err, or for a wait a signal ended, what became of the card and the exit
// status of a command that signal interrupted.
func (w *cardWait) interrupted(err error) error {
	sig := w.got.load()
	if sig == 0 {
		return err
	}
	if w.card == nil {
		fmt.Fprintf(os.Stderr, "openworker: interrupted (%s) before a card was up\n", sigName(sig))
	} else {
		fmt.Fprintf(os.Stderr, "openworker: interrupted; card %s for %s is still waiting (openworker answer %s %s); its answer applies to the session when it comes\n",
			w.card.ID, termtext.Escape(w.card.Site), w.card.ID, strings.Join(w.card.Answers, "|"))
	}
	return exitError{128 + int(sig)}
}

func cmdFetch(args []string) error {
	fs := newFlags(fetchCommand)
	reason := fs.String("reason", "", "why the coworker needs the page, shown on a card if the site must be asked for (required)")
	wait := seconds(60 * time.Second)
	fs.Var(&wait, "wait", waitUsage)
	pos, _, err := parse(fs, fetchCommand, args)
	if err != nil {
		return err
	}
	if strings.TrimSpace(*reason) == "" {
		return usagef("fetch", "fetch needs --reason: a card shows it to the person who answers, should the site need one")
	}
	c, err := client()
	if err != nil {
		return err
	}
	w := newCardWait()
	defer w.stop()
	res, err := c.FetchProgress(w.ctx, pos[0], api.FetchRequest{URL: pos[1], Reason: *reason, WaitMS: time.Duration(wait).Milliseconds(), NoWait: wait == 0}, w.onCard)
	if err != nil {
		return w.interrupted(err)
	}
	said := w.card != nil
	if res.Page == nil {
		fmt.Println(termtext.Escape(string(res.Outcome)))
		if res.Message != "" && !(said && res.Outcome == approvals.NoAnswerYet) {
			fmt.Fprintln(os.Stderr, "openworker:", termtext.Escape(res.Message))
		}
		if res.Outcome == approvals.NoAnswerYet {
			return exitError{4}
		}
		return exitError{1}
	}
	p := res.Page
	fmt.Fprintf(os.Stderr, "openworker: %s — %d %s, %d bytes", termtext.Escape(p.URL), p.Status, termtext.Escape(p.ContentType), p.Size)
	if p.Truncated {
		fmt.Fprint(os.Stderr, " (cut at the size limit)")
	}
	fmt.Fprintln(os.Stderr)
	if p.Title != "" {
		fmt.Println(termtext.Escape(p.Title))
		fmt.Println()
	}
	// The page is the web's: shown as data, never as terminal escapes.
	for _, line := range strings.Split(p.Text, "\n") {
		fmt.Println(termtext.Escape(line))
	}
	return nil
}
