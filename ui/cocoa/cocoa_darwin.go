//go:build darwin && cgo

package cocoa

import (
	"errors"
	"runtime"

	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/macos/foundation"
	"github.com/progrium/darwinkit/objc"
)

// AppKit must run on the process's main thread. Locking the main goroutine
// to its thread in init, before main starts, is the only way to be sure
// Run's goroutine is on that thread.
func init() { runtime.LockOSThread() }

// iconName is the status image in the bundle's Resources. AppKit treats an
// image whose name ends in "Template" as a template image.
const iconName = "StatusIconTemplate"

// statusIconPoints is the menu bar's usual glyph size.
const statusIconPoints = 18

// Run shows the status item and runs the Cocoa event loop. It must be called
// from the main goroutine and does not return while the app runs: quitting
// terminates the process after OnQuit.
func Run(opts Options) error {
	if !foundation.Thread_CurrentThread().IsMainThread() {
		return errors.New("the menu-bar app must be started from the main goroutine; call cocoa.Run from main")
	}

	app := appkit.Application_SharedApplication()
	// A menu-bar app has no Dock icon or main menu. Info.plist says so with
	// LSUIElement; this covers running the bare binary outside the bundle.
	app.SetActivationPolicy(appkit.ApplicationActivationPolicyAccessory)

	delegate := &appkit.ApplicationDelegate{}
	var shell *statusShell
	delegate.SetApplicationDidFinishLaunching(func(foundation.Notification) {
		shell = newStatusShell(app, opts)
		if opts.StateUpdates != nil {
			go relayStates(opts.StateUpdates, shell)
		}
	})
	delegate.SetApplicationWillTerminate(func(foundation.Notification) {
		if opts.OnQuit != nil {
			opts.OnQuit()
		}
	})
	app.SetDelegate(delegate)
	app.Run()
	runtime.KeepAlive(delegate)
	return nil
}

// statusShell is the status item and the menu items it updates. It is only
// touched on the main thread.
type statusShell struct {
	item      appkit.StatusItem
	stateItem appkit.MenuItem
}

func newStatusShell(app appkit.Application, opts Options) *statusShell {
	item := appkit.StatusBar_SystemStatusBar().StatusItemWithLength(appkit.VariableStatusItemLength)
	// A status item leaves the menu bar when it is deallocated, and the
	// status bar does not keep it: without this retain the icon vanishes at
	// the next autorelease drain.
	objc.Retain(&item)

	if img, ok := statusImage(opts.Icon); ok {
		item.Button().SetImage(img)
	} else {
		item.Button().SetTitle(fallbackTitle)
	}

	menu := appkit.NewMenuWithTitle(fallbackTitle)
	// Items are enabled or disabled here, not by AppKit's responder-chain
	// guess, so the state line reads as information, not as a command.
	menu.SetAutoenablesItems(false)

	stateItem := appkit.NewMenuItemWithSelector("", "", objc.Selector{})
	stateItem.SetEnabled(false)
	menu.AddItem(stateItem)
	menu.AddItem(appkit.MenuItem_SeparatorItem())
	menu.AddItem(appkit.NewMenuItemWithAction(quitTitle, "q", func(objc.Object) {
		app.Terminate(nil)
	}))
	item.SetMenu(menu)

	s := &statusShell{item: item, stateItem: stateItem}
	s.setState(opts.SandboxState)
	return s
}

func (s *statusShell) setState(state string) {
	line := stateLine(state)
	s.stateItem.SetTitle(line)
	s.item.Button().SetToolTip(line)
}

// relayStates moves each new state onto the main thread, where AppKit
// objects may be touched.
func relayStates(states <-chan string, s *statusShell) {
	for state := range states {
		dispatch.MainQueue().DispatchAsync(func() { s.setState(state) })
	}
}

// statusImage is the icon from png, or else the bundle's template image.
func statusImage(png []byte) (appkit.Image, bool) {
	var img appkit.Image
	if len(png) > 0 {
		img = appkit.NewImageWithData(png)
	} else {
		img = appkit.Image_ImageNamed(iconName)
	}
	if img.IsNil() {
		return img, false
	}
	img.SetTemplate(true)
	img.SetSize(foundation.Size{Width: statusIconPoints, Height: statusIconPoints})
	return img, true
}
