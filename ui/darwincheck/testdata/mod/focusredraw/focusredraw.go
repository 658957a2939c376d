//go:build darwin && cgo

// Package focusredraw replaces a window's content view when the window becomes key, which
// tears the clicked button out from under the pointer; updating a control in place is right.
package focusredraw

import (
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/macos/foundation"
)

// Watch sets the window's delegate.
func Watch(w appkit.Window, button appkit.Button) {
	d := &appkit.WindowDelegate{}
	d.SetWindowDidBecomeKey(func(foundation.Notification) {
		redraw(w)
		// Right: the default key set on the existing button.
		button.SetKeyEquivalent("\r")
	})
	d.SetWindowDidResignKey(func(foundation.Notification) {
		w.SetContentView(appkit.NewView())
	})
	d.SetWindowDidMove(moved)
	w.SetDelegate(d)
}

func moved(foundation.Notification) {}

func redraw(w appkit.Window) {
	root := appkit.NewVerticalStackView()
	w.SetContentView(root)
}
