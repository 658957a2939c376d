// Package cocoa is OpenWorker's menu-bar shell for macOS: a status item whose
// menu shows the sandbox state and quits the app. It only draws what it is
// given and reports what the user clicked; every decision stays in core.
//
// The Cocoa code needs macOS and cgo (darwinkit calls the Objective-C runtime
// through libffi). Elsewhere the package still builds, and Run says why it
// cannot start. CI type-checks the Cocoa files from Linux with
// ui/darwincheck.
//
// Go 1.25 and later place a slice inside darwinkit v0.5.0's libffi bridge on
// the stack, and the app then crashes at its first delegate callback. Build
// the app with -gcflags='github.com/progrium/darwinkit/...=-d=variablemakehash=qn',
// as build.sh does.
package cocoa

import "strings"

// Options is what the menu-bar shell shows and whom it tells about the user's
// actions.
type Options struct {
	// SandboxState is the line that says how commands are walled in, for
	// example "Sandbox: off (direct)". It is the menu's first line and the
	// status item's tooltip.
	SandboxState string

	// Icon is a PNG drawn as a template image (black and clear; macOS tints
	// it for light and dark menu bars). Empty means the app bundle's
	// StatusIconTemplate image; without either, the item shows a title.
	Icon []byte

	// StateUpdates, if set, carries new SandboxState lines while the app
	// runs; the shell redraws on the main thread. Closing it stops updates.
	StateUpdates <-chan string

	// OnQuit, if set, runs once on the main thread when the app is about to
	// terminate (Quit OpenWorker, logout, shutdown), so the core can stop
	// its sandboxes and delete their private files first.
	OnQuit func()
}

// Menu text, in one place so the words match the product page.
const (
	quitTitle     = "Quit OpenWorker"
	fallbackTitle = "OpenWorker"
	unknownState  = "Sandbox: state unknown"
)

// stateLine is the sandbox state as the menu shows it: one line, never empty,
// because an empty status line would read as "nothing to worry about".
func stateLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return unknownState
	}
	return s
}
