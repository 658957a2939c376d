//go:build darwin && cgo

// Package activate brings the app forward: the way macOS 14 deprecates and macOS 26 ignores,
// with a selector macOS 12 and 13 do not have, and right.
package activate

import (
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/objc"
)

// Old brings the app forward only the way macOS 26 ignores.
func Old(app appkit.Application) { app.ActivateIgnoringOtherApps(true) }

// Bare sends activate where macOS 12 and 13 have none.
func Bare(app appkit.Application) { objc.Call[objc.Void](app, objc.Sel("activate")) }

// Good asks first, and falls back before macOS 14.
func Good(app appkit.Application) {
	if app.RespondsToSelector(objc.Sel("activate")) {
		objc.Call[objc.Void](app, objc.Sel("activate"))
		return
	}
	app.ActivateIgnoringOtherApps(true)
}
