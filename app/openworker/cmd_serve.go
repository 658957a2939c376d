package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/session"
)

func cmdServe(args []string) error {
	fs := newFlags("serve", "openworker serve")
	if err := parse(fs, args); err != nil {
		return err
	}
	e, err := loadEnv()
	if err != nil {
		return err
	}
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
	// The settings in force are the watcher's: a broken save keeps the last good ones.
	current := func() *config.Settings {
		if s := w.Current(); s != nil {
			return s
		}
		return e.settings
	}
	srv.Manager = m
	srv.NewSpec = func(r api.StartRequest) (session.Spec, error) {
		f := sessionFlags{rw: r.Writable, ro: r.ReadOnly, allow: r.Allow, network: r.Network, provider: r.Provider}
		if len(f.rw) == 0 && len(f.ro) == 0 {
			return session.Spec{}, errors.New("a session needs at least one folder")
		}
		return f.spec(&env{settings: current(), stateDir: e.stateDir, home: e.home})
	}
	srv.Status = func() api.Status {
		st := api.Status{Provider: current().Provider, Settings: e.settingsPath}
		if err := w.Err(); err != nil {
			st.SettingsError = err.Error()
		}
		return st
	}
	events, cancel := w.Subscribe()
	defer cancel()
	go func() {
		for ev := range events {
			if ev.Err != nil {
				fmt.Fprintf(os.Stderr, "openworker: the settings file has problems; the last good settings stay in force:\n%v\n", ev.Err)
				srv.Publish(audit.Event{Type: "settings.error", Reason: ev.Err.Error()})
				continue
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
