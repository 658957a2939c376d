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
	"github.com/openworker/openworker/core/session"
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	store, err := backend.OpenStore(ctx, e.settingsPath, e.stateDir, runtime.GOOS, true)
	if err != nil {
		return err
	}
	defer store.Close()
	log, err := audit.Open(e.auditPath())
	if err != nil {
		return err
	}
	defer log.Close()
	b, err := backend.New(backend.Options{
		Settings: store, Native: e.machine().Native, GOOS: runtime.GOOS,
		Session: session.Options{
			Providers: providers(nativeProvider()), UserHome: e.home, StateDir: e.stateDir, SettingsPath: e.settingsPath, GOOS: runtime.GOOS,
			HostEnv: os.Environ(), Audit: log, RunnerStderr: os.Stderr,
		},
	})
	if err != nil {
		return err
	}
	defer b.EndAll()
	events, cancel := b.Subscribe(false)
	defer cancel()
	go func() {
		for ev := range events {
			switch ev.Type {
			case backend.SettingsFailed:
				fmt.Fprintf(os.Stderr, "openworker: %s\n", ev.Message)
				_ = log.Write(audit.Event{Type: ev.Type, Reason: ev.Message})
			case backend.SettingsReloaded:
				_ = log.Write(audit.Event{Type: ev.Type, Summary: ev.Message})
			case backend.CardAnswered, backend.CardExpired:
				_ = log.Write(audit.Event{Type: ev.Type, Session: ev.Session, Summary: ev.Card.Site + ": " + ev.Card.Reason, Outcome: ev.Outcome})
			}
		}
	}()
	srv := &api.Server{Backend: b, Status: func() api.Status {
		in := b.Settings()
		return api.Status{Provider: in.Settings.Provider, Settings: e.settingsPath, Rule: b.Machine().Rule(), SettingsError: in.Describe(e.settingsPath)}
	}}
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
