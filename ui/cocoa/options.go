// Package cocoa is OpenWorker's menu-bar shell for macOS: a thin mapper that draws the view
// trees of package view with AppKit and hands the person's actions back as values. Every
// decision (what a card says, which button is the default, what an action does) is made and
// tested in OS-neutral code; this package only renders and reports.
//
// The Cocoa code needs macOS and cgo (darwinkit calls the Objective-C runtime through libffi).
// Elsewhere the package still builds, and Run says why it cannot start. CI type-checks the
// Cocoa files from Linux with ui/darwincheck, which also checks their selectors, retains and
// threads.
//
// Go 1.25 and later place a slice inside darwinkit v0.5.0's libffi bridge on the stack, and
// the app then crashes at its first delegate callback. Build the app with
// -gcflags='github.com/progrium/darwinkit/...=-N -l', as build.sh does; Run refuses to start
// a binary built without it (CheckBuild).
package cocoa

import (
	"strconv"

	"github.com/openworker/openworker/ui/view"
)

// Model is what the shell draws and whom it tells: the presenter.
type Model interface {
	// View is everything the app shows now. The shell calls it on the main thread when the
	// status menu opens, and from a goroutine of its own after each change.
	View() view.App
	// Dispatch carries out one of the person's actions. The shell calls it from one goroutine
	// of its own, in the order the person acted, never on the main thread: an action may
	// write the settings file or wait for the backend.
	Dispatch(a view.Action) error
}

// Options is what the menu-bar shell shows and whom it tells about the person's actions.
type Options struct {
	Model Model
	// Changes receives whenever what Model shows may have changed (ticks may coalesce); the
	// shell then redraws the icon and the open windows. Nil: it redraws only after actions.
	Changes <-chan struct{}
	// OnQuit, if set, runs once, off the main thread, when the app is asked to quit (Quit
	// OpenWorker, logout, shutdown), so the core can end its sessions and delete their private
	// files. The app quits when it returns; the menu bar stays responsive meanwhile.
	OnQuit func()
	// OnError, if set, is told of an action Dispatch refused (the presenter also shows it).
	OnError func(error)
}

// fallbackTitle is the status item's text when neither the SF Symbol nor the bundled image
// could be loaded: an empty status item would be invisible and unclickable.
const fallbackTitle = "OpenWorker"

// badgeTitle is the text beside the status icon: the number of cards waiting, or nothing.
// darwinkit v0.5.0 binds no menu-bar badge, so the count is the button's title.
func badgeTitle(n int) string {
	if n <= 0 {
		return ""
	}
	if n > 99 {
		return "99+"
	}
	return strconv.Itoa(n)
}

// keyEquivalent is the key a button answers to now: Return only for the window's default
// button (a card has none until the person clicks into it), Escape for a cancel button that
// asks for it. Any other key stays unbound, so a keystroke meant for another app or field
// never presses a button.
func keyEquivalent(b view.Button) string {
	if b.Disabled {
		return ""
	}
	switch {
	case b.Default && b.Role != view.Destructive:
		return "\r"
	case b.Key == view.KeyEscape:
		return "\x1b"
	}
	return ""
}

// shellAction reports whether a is carried out by the shell itself (quit, open, pick a path,
// copy) rather than by the model.
func shellAction(a view.Action) bool {
	switch a.(type) {
	case view.Quit, view.OpenPath, view.OpenURL, view.PickPath, view.CopyText:
		return true
	}
	return false
}
