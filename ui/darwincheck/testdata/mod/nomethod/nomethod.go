//go:build darwin && cgo

// Package nomethod calls a darwinkit method that does not exist.
package nomethod

import "github.com/progrium/darwinkit/macos/appkit"

// Show sets the status item's title with a method AppKit's button lacks.
func Show(title string) {
	item := appkit.StatusBar_SystemStatusBar().StatusItemWithLength(appkit.VariableStatusItemLength)
	item.Button().SetStatusTitle(title)
}
