package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
)

// env is what every command needs: the settings in force, the state folder, the providers.
type env struct {
	settingsPath string
	inForce      *config.InForce
	settings     *config.Settings
	stateDir     string
	home         string
}

// loadEnv reads the settings in force: the file's, or while it has problems the last good
// ones (see config.LoadInForce), the same for every command.
func loadEnv() (*env, error) {
	path, err := config.Path()
	if err != nil {
		return nil, err
	}
	state, err := config.StateDir()
	if err != nil {
		return nil, err
	}
	in, err := config.LoadInForce(path, state, runtime.GOOS)
	if err != nil {
		return nil, err
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("the home folder is not known (%v); set HOME", err)
	}
	return &env{settingsPath: path, inForce: in, settings: in.Settings, stateDir: state, home: home}, nil
}

// brokenSettings refuses an agent's session while the settings file has problems and no
// version of it was ever valid: which sites the person allowed and how the sandbox is set up
// are not known, and a server that ran with the defaults would say so only where hosts hide
// it. The error names the file's problems (FILE:LINE:COL: …).
func (e *env) brokenSettings() error {
	if e.inForce.Problems == nil || !e.inForce.NoLastGood {
		return nil
	}
	return fmt.Errorf("the settings file %s has problems and no earlier version of it was valid, so the sandbox's settings are not known; "+
		"the person must fix the file (openworker config check): %v", e.settingsPath, e.inForce.Problems)
}

// warnSettings says on stderr, once, that the settings file has problems and what is in force.
func (e *env) warnSettings() {
	if msg := e.inForce.Describe(e.settingsPath); msg != "" {
		fmt.Fprintln(os.Stderr, "openworker:", msg)
	}
}

// machine is what the backend needs to know of this machine to decide a session.
func (e *env) machine() backend.Machine {
	m := backend.Machine{Settings: e.inForce, GOOS: runtime.GOOS}
	if p := nativeProvider(); p != nil {
		m.Native = p.Name()
		if o, ok := p.(interface{ OpenOwnNetwork() bool }); ok {
			m.OpenOwnNetwork = o.OpenOwnNetwork()
		}
	}
	return m
}

// providers returns the providers this OS has: its sandbox (native, which may be nil) and
// direct.
func providers(native sandbox.Provider) map[sandbox.Enforcement]sandbox.Provider {
	m := map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}}
	if native != nil {
		m[native.Name()] = native
	}
	return m
}

func nativeName() string {
	if p := nativeProvider(); p != nil {
		return string(p.Name())
	}
	return "direct"
}

func (e *env) auditPath() string { return filepath.Join(e.stateDir, "audit.jsonl") }

// manager starts sessions with native as this OS's sandbox: the instance a command may have
// prepared a wall with already.
func (e *env) manager(native sandbox.Provider) (*session.Manager, *audit.Log, error) {
	log, err := audit.Open(e.auditPath())
	if err != nil {
		return nil, nil, err
	}
	m, err := session.NewManager(session.Options{
		Providers: providers(native), UserHome: e.home, StateDir: e.stateDir, SettingsPath: e.settingsPath, GOOS: runtime.GOOS,
		HostEnv: os.Environ(), Audit: log, RunnerStderr: os.Stderr, ProxyConnsTotal: e.settings.Limits.MaxProxyConnectionsTotal,
	})
	if err != nil {
		log.Close()
		return nil, nil, err
	}
	return m, log, nil
}
