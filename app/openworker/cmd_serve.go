package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/session"
)

var serveCommand = command{
	name:     "serve",
	synopsis: "serve",
	about: `Runs the daemon: the local API (HTTP and JSON over an owner-only Unix socket in the state
folder) that openworker session, the MCP server and watchers use. It reloads the settings file
when it changes; a broken save keeps the last good settings in force and says why. Sessions
started without a provider get the machine's sandbox_provider.`,
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w, err := config.Watch(ctx, e.settingsPath, runtime.GOOS, 100*time.Millisecond)
	if err != nil {
		return err
	}
	defer w.Close()
	log, err := audit.Open(e.auditPath())
	if err != nil {
		return err
	}
	defer log.Close()
	srv := &api.Server{}
	m, err := session.NewManager(session.Options{
		Providers: providers(nativeProvider()), UserHome: e.home, StateDir: e.stateDir, GOOS: runtime.GOOS,
		HostEnv: os.Environ(), Audit: log, RunnerStderr: os.Stderr, OnEvent: srv.Publish,
	})
	if err != nil {
		return err
	}
	defer m.EndAll()
	// The settings in force are the watcher's, or while the file has never been good since
	// the daemon started, the last good ones from before.
	current := func() *config.InForce {
		in := *e.inForce
		if s := w.Current(); s != nil {
			in = config.InForce{Settings: s}
		}
		if err := w.Err(); err != nil {
			in.Problems, in.LastGood = err, !in.NoLastGood
		}
		return &in
	}
	srv.Manager = m
	srv.NewSpec = func(r api.StartRequest) (session.Spec, error) {
		mach := e.machine()
		mach.Settings = current()
		return backend.SpecFor(mach, backend.Request{Provider: r.Provider, Writable: r.Writable, ReadOnly: r.ReadOnly, Dir: r.Dir,
			Network: r.Network, Allow: r.Allow, HowToAllow: backend.SessionHowToAllow(e.settingsPath)})
	}
	srv.Status = func() api.Status {
		in := current()
		mach := e.machine()
		mach.Settings = in
		st := api.Status{Provider: in.Settings.Provider, Settings: e.settingsPath, Rule: mach.Rule()}
		st.SettingsError = in.Describe(e.settingsPath)
		return st
	}
	events, cancel := w.Subscribe()
	defer cancel()
	go func() {
		for ev := range events {
			if ev.Err != nil {
				fmt.Fprintf(os.Stderr, "openworker: %s\n", current().Describe(e.settingsPath))
				srv.Publish(audit.Event{Type: "settings.error", Reason: ev.Err.Error()})
				continue
			}
			if data, err := os.ReadFile(e.settingsPath); err == nil {
				if _, problems := config.Parse(e.settingsPath, data, runtime.GOOS); len(problems) == 0 {
					_ = config.SaveLastGood(e.stateDir, data)
				}
			}
			m.SetSettingsHosts(ev.Settings.NetworkHosts)
			srv.Publish(audit.Event{Type: "settings.reloaded", Summary: fmt.Sprintf("%d site(s) allowed", len(ev.Settings.NetworkHosts))})
		}
	}()
	l, err := api.Listen(e.stateDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "openworker: serving the local API on %s\n", api.SocketPath(e.stateDir))
	go func() {
		<-ctx.Done()
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = srv.Shutdown(sctx)
	}()
	err = srv.Serve(l)
	_ = os.Remove(api.SocketPath(e.stateDir))
	return err
}
