package runner

import (
	"os"
	"path/filepath"
	"runtime"
)

// HelperName is the small helper that runs inside the wall on a Mac: the tool runner and
// ssh's ProxyCommand, built without cgo, so that no command's start pays for the app's
// AppKit, darwinkit and bundle reads, and none of their denials end up in its report.
const HelperName = "openworker-runner"

// Binary is the binary a session's runner is started from: on a Mac the helper beside
// this binary (in the app bundle's Contents/Helpers, or next to a CLI build) when there is
// one, otherwise this binary itself. On Linux it is always this binary: its wall builder is
// this binary too, and serves the runner itself.
func Binary() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if runtime.GOOS != "darwin" {
		return exe, nil
	}
	return helperBeside(exe, isFile), nil
}

// helperBeside finds the helper for the binary exe: Contents/Helpers of the bundle exe is in,
// or the same folder; exe itself when neither has it.
func helperBeside(exe string, exists func(string) bool) string {
	dir := filepath.Dir(exe)
	candidates := []string{filepath.Join(dir, HelperName)}
	if filepath.Base(dir) == "MacOS" && filepath.Base(filepath.Dir(dir)) == "Contents" {
		candidates = append([]string{filepath.Join(filepath.Dir(dir), "Helpers", HelperName)}, candidates...)
	}
	for _, c := range candidates {
		if exists(c) {
			return c
		}
	}
	return exe
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
