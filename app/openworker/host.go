package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/session"
)

// hosted is a backend this process runs (the daemon, the app, an MCP server with no daemon
// to attach to), with the settings store and audit trail it owns.
type hosted struct {
	b     *backend.Backend
	store *backend.Store
	log   *audit.Log
	// loginEnv is the person's login environment, read once in the background; nil when
	// the backend's sessions take this process's own.
	loginEnv func() []string
}

// hostBackend opens the settings store (following the file until ctx ends), the audit trail
// and the backend over this OS's providers. The backend's events that are not a session's
// go to the audit trail too. close ends every session, then the rest.
//
// login says the backend's sessions get the person's login PATH and language where their
// client sends none (the app, and a daemon a person starts, whose own environment may be
// launchd's or systemd's minimal one); see session.LoginEnv. It is read in the background:
// hostBackend does not wait for it, a session does.
func (e *env) hostBackend(ctx context.Context, login bool) (*hosted, error) {
	store, err := backend.OpenStore(ctx, e.settingsPath, e.stateDir, runtime.GOOS, true)
	if err != nil {
		return nil, err
	}
	log, err := audit.Open(e.auditPath())
	if err != nil {
		store.Close()
		return nil, err
	}
	hostEnv := os.Environ()
	var loginEnv func() []string
	if login {
		// Read off the start, so that the menu-bar item and the local API come at once: a
		// person's startup files (nvm's, conda's) take seconds, and only sessions need it.
		helper, _ := runner.Binary()
		loginEnv = sync.OnceValue(func() []string {
			return session.LoginEnv(ctx, hostEnv, session.LoginOptions{GOOS: runtime.GOOS, Helper: helper})
		})
		go loginEnv()
	}
	machine := e.machine()
	b, err := backend.New(backend.Options{
		Settings: store, Native: machine.Native, OpenOwnNetwork: machine.OpenOwnNetwork, GOOS: runtime.GOOS,
		Session: session.Options{
			Providers: providers(nativeProvider()), UserHome: e.home, StateDir: e.stateDir, SettingsPath: e.settingsPath, GOOS: runtime.GOOS,
			HostEnv: hostEnv, LoginEnv: loginEnv, Audit: log, RunnerStderr: os.Stderr,
		},
	})
	if err != nil {
		log.Close()
		store.Close()
		return nil, err
	}
	auditEvents(b, log)
	return &hosted{b: b, store: store, log: log, loginEnv: loginEnv}, nil
}

// env is the environment this process's sessions start from: the login environment (waiting
// for it) where the backend reads one, this process's own otherwise.
func (h *hosted) env() []string {
	if h.loginEnv != nil {
		return h.loginEnv()
	}
	return os.Environ()
}

func (h *hosted) close() { h.closeBecause("the process that hosted it stopped") }

// closeBecause is close with the reason the audit trail's session.ended records give.
func (h *hosted) closeBecause(reason string) {
	h.b.EndAllBecause(reason)
	h.log.Close()
	h.store.Close()
}

// server is the local API over the hosted backend.
func (h *hosted) server(e *env) *api.Server {
	return &api.Server{Backend: h.b, Status: func() api.Status {
		in := h.b.Settings()
		return api.Status{Provider: in.Settings.Provider, Settings: e.settingsPath, Rule: h.b.Machine().Rule(), SettingsError: in.Describe(e.settingsPath)}
	}}
}

// auditEvents writes the backend's events that are not a session's to the audit trail: the
// settings' reloads and problems, and refused form answers. (How cards ended the backend
// writes itself, before anyone waiting on a card goes on.)
func auditEvents(b *backend.Backend, log *audit.Log) {
	events, _ := b.Subscribe(false)
	go func() {
		for ev := range events {
			switch ev.Type {
			case backend.SettingsFailed:
				fmt.Fprintf(os.Stderr, "openworker: %s\n", ev.Message)
				_ = log.Write(audit.Event{Type: ev.Type, Reason: ev.Message})
			case backend.FormRefused:
				_ = log.Write(audit.Event{Type: ev.Type, Session: ev.Session, Outcome: "form answer refused", Reason: ev.Message})
			case backend.SettingsReloaded:
				_ = log.Write(audit.Event{Type: ev.Type, Summary: ev.Message})
			}
		}
	}()
}
