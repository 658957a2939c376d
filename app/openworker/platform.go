package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
)

// env is what every command needs: the settings in force, the state folder, the providers.
type env struct {
	settingsPath string
	settings     *config.Settings
	stateDir     string
	home         string
}

func loadEnv() (*env, error) {
	path, err := config.Path()
	if err != nil {
		return nil, err
	}
	s, err := config.Load(path, runtime.GOOS)
	if err != nil {
		var pe *config.ProblemsError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("the settings file has problems; nothing runs until it is fixed (openworker config check):\n%v", err)
		}
		return nil, err
	}
	state, err := config.StateDir()
	if err != nil {
		return nil, err
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("the home folder is not known (%v); set HOME", err)
	}
	return &env{settingsPath: path, settings: s, stateDir: state, home: home}, nil
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

// pickProvider resolves a --provider value: auto is this OS's sandbox.
func pickProvider(name string) (sandbox.Enforcement, error) {
	ps := providers(nativeProvider())
	if name == "auto" || name == "" {
		p := nativeProvider()
		if p == nil {
			return "", fmt.Errorf("there is no sandbox for %s; use --provider direct to run without one", runtime.GOOS)
		}
		return p.Name(), nil
	}
	if _, ok := ps[sandbox.Enforcement(name)]; !ok {
		return "", fmt.Errorf("provider %q does not exist on %s; use auto, direct or %s", name, runtime.GOOS, nativeName())
	}
	return sandbox.Enforcement(name), nil
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
		Providers: providers(native), UserHome: e.home, StateDir: e.stateDir, GOOS: runtime.GOOS,
		HostEnv: os.Environ(), Audit: log, RunnerStderr: os.Stderr,
	})
	if err != nil {
		log.Close()
		return nil, nil, err
	}
	return m, log, nil
}
