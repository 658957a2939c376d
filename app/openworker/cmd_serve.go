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
	synopsis: "serve",
	about: `Runs the daemon: the local API (HTTP and JSON over an owner-only Unix socket in the state
folder) that openworker session, cards, the MCP server and watchers use. It reloads the
settings file when it changes; a broken save keeps the last good settings in force and says
why. Sessions started without a provider get the machine's sandbox_provider.`,
	example: "openworker serve &\nid=$(openworker session start)",
}

func cmdServe(args []string) error {
	fs := newFlags(serveCommand)
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
	h, err := e.hostBackend(ctx)
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
	go func() {
		sig := (<-sigs).(syscall.Signal)
		// The sessions end first, each with its reason, so that a call in progress answers
		// its client that the daemon stopped (and why) before the API closes.
		n := len(h.b.Sessions())
		fmt.Fprintf(os.Stderr, "openworker: stopping (%s): ending %d session(s)\n", sigName(sig), n)
		h.b.EndAllBecause("the daemon stopped (" + sigName(sig) + ")")
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
