package runner

import (
	"os"
	"path/filepath"
)

// HelperName is the small helper that runs inside the wall: the tool runner, ssh's
// ProxyCommand and, on Linux, the wall builder, built without cgo, so that no command's
// start pays for the whole CLI's packages (the MCP SDK, JSON schemas, YAML, HTML) or, on a
// Mac, the app's AppKit, darwinkit and bundle reads, none of whose denials end up in its
// report. Fewer packages inside is also less for a program there to reach.
const HelperName = "openworker-runner"

// Binary is the binary a session's runner (and, on Linux, its wall builder) is started
// from: the helper beside this binary (in the app bundle's Contents/Helpers, or next to a
// CLI build) when there is one, otherwise this binary itself. The helper lies in this
// binary's folder, so a folder that would make it writable inside holds this binary too, and
// is refused as such (policy's guard of the runner's files).
func Binary() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
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
