//go:build darwin && cgo

// Package nomainmenu runs an accessory app without a main menu: ⌘C ⌘V and the other
// standard keys then do nothing in its windows.
package nomainmenu

import "github.com/progrium/darwinkit/macos/appkit"

// Run starts the app with only a status item.
func Run() {
	app := appkit.Application_SharedApplication()
	app.SetActivationPolicy(appkit.ApplicationActivationPolicyAccessory)
	app.Run()
}
