//go:build darwin && cgo

// Package good uses darwinkit correctly; darwincheck must accept it.
package good

import (
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/macos/foundation"
	"github.com/progrium/darwinkit/objc"
)

// StatusItem puts a titled item with a one-entry menu in the menu bar.
func StatusItem(app appkit.Application, title string) appkit.StatusItem {
	item := appkit.StatusBar_SystemStatusBar().StatusItemWithLength(appkit.VariableStatusItemLength)
	objc.Retain(&item)
	item.Button().SetTitle(title)

	menu := appkit.NewMenuWithTitle("main")
	menu.AddItem(appkit.NewMenuItemWithAction("Quit", "q", func(objc.Object) { app.Terminate(nil) }))
	item.SetMenu(menu)
	return item
}

// Run starts the application with a delegate, as the Cocoa shell does.
func Run() {
	app := appkit.Application_SharedApplication()
	delegate := &appkit.ApplicationDelegate{}
	delegate.SetApplicationDidFinishLaunching(func(foundation.Notification) {
		StatusItem(app, "ready")
	})
	app.SetDelegate(delegate)
	app.Run()
}
