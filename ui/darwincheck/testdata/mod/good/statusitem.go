//go:build darwin && cgo

// Package good uses darwinkit correctly; darwincheck must accept it.
package good

import (
	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/macos/foundation"
	"github.com/progrium/darwinkit/objc"
)

// shared lives as long as the program, so objc.Retain's finalizer never runs.
var shared appkit.Menu

// StatusItem puts a titled item with a one-entry menu in the menu bar.
func StatusItem(app appkit.Application, title string) appkit.StatusItem {
	item := appkit.StatusBar_SystemStatusBar().StatusItemWithLength(appkit.VariableStatusItemLength)
	// The object's own retain: it stays until released, whatever happens
	// to this Go variable.
	item.Retain()
	item.Button().SetTitle(title)

	menu := appkit.NewMenuWithTitle("main")
	menu.AddItem(appkit.NewMenuItemWithAction("Quit", "q", func(objc.Object) { app.Terminate(nil) }))
	item.SetMenu(menu)
	shared = menu
	objc.Retain(&shared)
	return item
}

// Run starts the application with a delegate, as the Cocoa shell does.
func Run(titles <-chan string) {
	app := appkit.Application_SharedApplication()
	delegate := &appkit.ApplicationDelegate{}
	delegate.SetApplicationDidFinishLaunching(func(foundation.Notification) {
		item := StatusItem(app, "ready")
		go relay(titles, item)
		go func() {
			for t := range titles {
				dispatch.MainQueue().DispatchAsync(func() { setTitle(item, t) })
			}
		}()
	})
	app.SetDelegate(delegate)
	// The standard keys come from the main menu, shown or not.
	edit := appkit.NewMenuWithTitle("Edit")
	edit.AddItem(appkit.NewMenuItemWithSelector("Paste", "v", objc.Sel("paste:")))
	main := appkit.NewMenuWithTitle("")
	item := appkit.NewMenuItemWithSelector("Edit", "", objc.Selector{})
	item.SetSubmenu(edit)
	main.AddItem(item)
	app.SetMainMenu(main)
	app.Run()
}

// relay runs in its own goroutine and touches AppKit only on the main queue.
func relay(titles <-chan string, item appkit.StatusItem) {
	for t := range titles {
		dispatch.MainQueue().DispatchSync(func() { setTitle(item, t) })
	}
}

func setTitle(item appkit.StatusItem, title string) {
	item.Button().SetTitle(title)
}

// Raw sends messages by name, with selectors and classes darwinkit binds
// and one argument per colon.
func Raw(item appkit.StatusItem) {
	objc.Call[objc.Void](item, objc.Sel("setVisible:"), true)
	_ = objc.Call[bool](item, objc.Sel("isVisible"))
	item.PerformSelectorWithObject(objc.Sel("setMenu:"), objc.Object{})
	_ = objc.GetClass("NSStatusItem")
	_ = objc.GetProtocol("NSMenuDelegate")
}

// View is a subclass of AppKit's view: the tag names its superclass.
type View struct {
	appkit.View `objc:"NSView"`
}
