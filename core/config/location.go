package config

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// EnvConfig names a settings file to use instead of the machine's (for tests and power users).
const EnvConfig = "OPENWORKER_CONFIG"

// FileName is the settings file's name.
const FileName = "config.toml"

// locations says where one OS keeps the settings file and the app's state folder. Both are
// computed from the environment and the home folder passed in, so tests can ask about either
// OS on any machine.
type locations struct {
	configDir string
	stateDir  string
}

// locate is the table of where each OS keeps things: macOS keeps both in Application Support,
// as its apps do; Linux follows the XDG base directories (whose variables must be absolute
// to count, as that specification says).
func locate(goos string, getenv func(string) string, home string) (locations, error) {
	if home == "" || !filepath.IsAbs(home) {
		return locations{}, fmt.Errorf("cannot find the home folder (got %q); set HOME to an absolute path", home)
	}
	xdg := func(name, fallback string) string {
		if v := getenv(name); v != "" && filepath.IsAbs(v) {
			return filepath.Join(v, "openworker")
		}
		return filepath.Join(home, fallback, "openworker")
	}
	switch goos {
	case "darwin":
		dir := filepath.Join(home, "Library", "Application Support", "OpenWorker")
		return locations{configDir: dir, stateDir: dir}, nil
	default:
		return locations{
			configDir: xdg("XDG_CONFIG_HOME", ".config"),
			stateDir:  xdg("XDG_STATE_HOME", filepath.Join(".local", "state")),
		}, nil
	}
}

// appHomePaths are OpenWorker's own folders relative to the home folder on goos, at their
// default places. Settings may never point a session at them.
func appHomePaths(goos string) []string {
	if goos == "darwin" {
		return []string{"Library/Application Support/OpenWorker"}
	}
	return []string{".config/openworker", ".local/state/openworker"}
}

// Path returns the settings file to use: $OPENWORKER_CONFIG when set, otherwise the machine's
// (macOS ~/Library/Application Support/OpenWorker/config.toml, Linux
// $XDG_CONFIG_HOME/openworker/config.toml, by default ~/.config/openworker/config.toml).
func Path() (string, error) {
	return pathFor(runtime.GOOS, os.Getenv, homeDir())
}

func pathFor(goos string, getenv func(string) string, home string) (string, error) {
	if p := getenv(EnvConfig); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("%s=%q: %w", EnvConfig, p, err)
		}
		return abs, nil
	}
	loc, err := locate(goos, getenv, home)
	if err != nil {
		return "", err
	}
	return filepath.Join(loc.configDir, FileName), nil
}

// DefaultDir returns the folder of the machine's settings file on goos for the home folder
// home, whatever $OPENWORKER_CONFIG says: a daemon started without it reads the file there,
// so no session may reach it even when this process's settings are elsewhere.
func DefaultDir(goos, home string) (string, error) {
	loc, err := locate(goos, os.Getenv, home)
	if err != nil {
		return "", err
	}
	return loc.configDir, nil
}

// StateDir returns the app's own state folder (sockets, tokens, audit): macOS
// ~/Library/Application Support/OpenWorker, Linux $XDG_STATE_HOME/openworker, by default
// ~/.local/state/openworker. No session may ever reach it.
func StateDir() (string, error) {
	loc, err := locate(runtime.GOOS, os.Getenv, homeDir())
	if err != nil {
		return "", err
	}
	return loc.stateDir, nil
}

func homeDir() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return h
}
