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
	exe, err := executable()
	if err != nil {
		return "", err
	}
	return helperBeside(exe, isFile), nil
}

// executable is this binary's path with its links resolved: on a Mac os.Executable is the
// path it was started by, which for the CLI is usually a link on PATH (/usr/local/bin/
// openworker, into the app bundle), where nothing lies beside it.
func executable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return resolved(exe), nil
}

// resolved is path with every link on the way resolved; path itself when that fails.
func resolved(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

// MCPName is the MCP server (`openworker mcp`), apart from the CLI as build.sh ships it: its
// packages (the MCP SDK, its JSON schemas) would otherwise be a sixth of the CLI binary and of
// every start of it, which each run and each session exec pay.
const MCPName = "openworker-mcp"

// MCPBinary is the MCP server beside this binary (in Contents/Helpers, or next to a CLI
// build), or "" when there is none.
func MCPBinary() (string, error) {
	exe, err := executable()
	if err != nil {
		return "", err
	}
	if p := beside(exe, MCPName, isFile); p != "" {
		return p, nil
	}
	return "", nil
}

// helperBeside finds the helper for the binary exe: Contents/Helpers of the bundle exe is in,
// or the same folder; exe itself when neither has it.
func helperBeside(exe string, exists func(string) bool) string {
	if p := beside(exe, HelperName, exists); p != "" {
		return p
	}
	return exe
}

// beside finds the program name for the binary exe: in Contents/Helpers of the bundle exe
// is in, or in the same folder; "" when neither has it.
func beside(exe, name string, exists func(string) bool) string {
	dir := filepath.Dir(exe)
	candidates := []string{filepath.Join(dir, name)}
	if filepath.Base(dir) == "MacOS" && filepath.Base(filepath.Dir(dir)) == "Contents" {
		candidates = append([]string{filepath.Join(filepath.Dir(dir), "Helpers", name)}, candidates...)
	}
	for _, c := range candidates {
		if exists(c) {
			return c
		}
	}
	return ""
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// ShellName is the agent hosts' shell (openworker-shell), apart from the CLI: an agent host
// starts it for every shell command it runs, so it links only what it needs.
const ShellName = "openworker-shell"

// ShellBinary is the agent hosts' shell beside this binary (in Contents/Helpers, or next to
// a CLI build), or "" when there is none.
func ShellBinary() (string, error) {
	exe, err := executable()
	if err != nil {
		return "", err
	}
	return beside(exe, ShellName, isFile), nil
}
