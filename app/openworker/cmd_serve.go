package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/api"
)

var serveCommand = command{
	name:     "serve",
	synopsis: "serve [--exit-when-idle]",
	about: `Runs the daemon: the local API (HTTP and JSON over an owner-only Unix socket in the state
folder) that openworker session, cards, the MCP server and watchers use. It reloads the
settings file when it changes; a broken save keeps the last good settings in force and says
why. Sessions started without a provider get the machine's sandbox_provider.

With --exit-when-idle it ends once no session has run for a few seconds: openworker mcp
starts the daemon this way when none runs, so that every agent's server is the daemon's
client and none of them ends another's session.`,
	example: "openworker serve &\nid=$(openworker session start)",
}

// idleLinger is how long a daemon started with --exit-when-idle waits with no session
// before it ends: long enough for the server that started it to attach, and for an agent
// host that restarts its server to come back.
const idleLinger = 3 * time.Second

func cmdServe(args []string) error {
	fs := newFlags(serveCommand)
	idleExit := fs.Bool("exit-when-idle", false, "end once no session has run for "+idleLinger.String())
	if _, _, err := parse(fs, serveCommand, args); err != nil {
		return err
	}
	e, err := loadEnv()
	if err != nil {
		return err
	}
	e.warnSettings()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	// A daemon started for agents serves clients that send their own PATH: it need not
	// wait for a login shell.
	h, err := e.hostBackend(ctx, !*idleExit)
	if err != nil {
		return err
	}
	defer h.close()
	srv := h.server(e)
	l, err := api.Listen(e.stateDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "openworker: serving the local API on %s\n", api.SocketPath(e.stateDir))
	// why says why the daemon stops: a signal, or (with --exit-when-idle) no session.
	why := make(chan string, 1)
	if *idleExit {
		go exitWhenIdle(ctx, why, func() bool { return len(h.b.Sessions()) == 0 && srv.Held() == 0 })
	}
	go func() {
		select {
		case sig := <-sigs:
			why <- sigName(sig.(syscall.Signal))
		case <-ctx.Done():
		}
	}()
	go func() {
		reason := <-why
		// The sessions end first, each with its reason, so that a call in progress answers
		// its client that the daemon stopped (and why) before the API closes.
		n := len(h.b.Sessions())
		fmt.Fprintf(os.Stderr, "openworker: stopping (%s): ending %d session(s)\n", reason, n)
		h.b.EndAllBecause("the daemon stopped (" + reason + ")")
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = srv.Shutdown(sctx)
		stop()
	}()
	err = srv.Serve(l)
	_ = os.Remove(api.SocketPath(e.stateDir))
	if err == nil {
		fmt.Fprintln(os.Stderr, "openworker: stopped")
	}
	return err
}

// exitWhenIdle says why the daemon stops on why once idle has said true for idleLinger
// without a break.
func exitWhenIdle(ctx context.Context, why chan<- string, idle func() bool) {
	t := time.NewTicker(idleLinger / 10)
	defer t.Stop()
	since := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if !idle() {
				since = now
			} else if now.Sub(since) >= idleLinger {
				select {
				case why <- "no session for " + idleLinger.String():
				default: // a signal came first
				}
				return
			}
		}
	}
}
