//go:build darwin && cgo

package cocoa

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/macos/foundation"
	"github.com/progrium/darwinkit/objc"

	"github.com/openworker/openworker/ui/view"
)

// AppKit must run on the process's main thread. Locking the main goroutine to its thread in
// init, before main starts, is the only way to be sure Run's goroutine is on that thread.
func init() { runtime.LockOSThread() }

// statusIconPoints is the menu bar's usual glyph size.
const statusIconPoints = 18

// The shell's state lives as long as the app, in package-level variables: the Go collector
// never frees them, and the Objective-C objects in them are retained with their own Retain,
// so none is released behind the shell's back. Only the main thread touches them.
var (
	theShell *shell
	// appDelegate and menuDelegate are darwinkit's Go side of the two delegate protocols;
	// the Objective-C side holds a handle to them, kept here as well for clarity.
	appDelegate  *appkit.ApplicationDelegate
	menuDelegate *appkit.MenuDelegate
)

// shell is the status item, its menu and the open windows. Main thread only.
type shell struct {
	app     appkit.Application
	item    appkit.StatusItem
	menu    appkit.Menu
	model   Model
	opts    Options
	actions chan view.Action
	windows map[string]*window
	// quitting is set once the app was asked to quit: OnQuit runs once.
	quitting bool
	// activity keeps the app from napping while it is at work (view.App.Busy): it is the
	// proxy and the API of the running sessions, and App Nap would throttle its timers and I/O.
	activity objc.Object
	// last is the state last drawn, and redrawPending whether a redraw of it waits for the
	// mouse button to come up.
	last          view.App
	redrawPending bool
}

// Run shows the status item and runs the Cocoa event loop. It must be called from the main
// goroutine and does not return while the app runs: quitting ends the process after OnQuit.
func Run(opts Options) error {
	if err := CheckBuild(debug.ReadBuildInfo()); err != nil {
		return err
	}
	if opts.Model == nil {
		return errors.New("cocoa.Run needs a Model")
	}
	if !foundation.Thread_CurrentThread().IsMainThread() {
		return errors.New("the menu-bar app must be started from the main goroutine; call cocoa.Run from main")
	}

	app := appkit.Application_SharedApplication()
	// A menu-bar app has no Dock icon. Info.plist says so with LSUIElement; this covers
	// running the bare binary outside the bundle.
	app.SetActivationPolicy(appkit.ApplicationActivationPolicyAccessory)
	// Its main menu is never shown, but the keys ⌘C ⌘V ⌘X ⌘A ⌘Z ⌘W ⌘Q are the main menu's
	// items: without one they do nothing in Settings and Choose sites….
	app.SetMainMenu(mainMenu())

	s := &shell{app: app, model: opts.Model, opts: opts, actions: make(chan view.Action, 64), windows: make(map[string]*window)}
	theShell = s
	go s.dispatchActions()

	// Every callback is set before SetDelegate: darwinkit builds the Objective-C delegate
	// from the callbacks present then, and AppKit asks once which ones it answers.
	appDelegate = &appkit.ApplicationDelegate{}
	appDelegate.SetApplicationDidFinishLaunching(func(foundation.Notification) {
		s.start()
	})
	appDelegate.SetApplicationShouldTerminate(func(appkit.Application) appkit.ApplicationTerminateReply {
		return s.shouldTerminate()
	})
	app.SetDelegate(appDelegate)
	app.Run()
	return nil
}

// start puts the status item in the menu bar and starts following the model.
func (s *shell) start() {
	s.item = appkit.StatusBar_SystemStatusBar().StatusItemWithLength(appkit.VariableStatusItemLength)
	// The status bar does not keep its items: one that is deallocated leaves the menu bar.
	// The object's own retain keeps it for the app's life, whatever the Go collector does.
	s.item.Retain()

	s.menu = appkit.NewMenuWithTitle(fallbackTitle)
	s.menu.Retain()
	// Items are enabled or disabled by the view tree, not by AppKit's responder-chain guess,
	// so a status line reads as information, not as a command.
	s.menu.SetAutoenablesItems(false)
	menuDelegate = &appkit.MenuDelegate{}
	menuDelegate.SetMenuNeedsUpdate(func(menu appkit.Menu) {
		// The menu is rebuilt from the tree each time it is about to open, so it is never
		// stale. Here, not in menuWillOpen:, where AppKit forbids changing its items.
		fillMenu(menu, s.model.View().Menu, s.act)
	})
	s.menu.SetDelegate(menuDelegate)
	// Filled once now as well: a status item whose menu is empty may not open it at all.
	fillMenu(s.menu, s.model.View().Menu, s.act)
	s.item.SetMenu(s.menu)

	s.apply(s.model.View())
	if s.opts.Changes != nil {
		go s.follow(s.opts.Changes)
	}
}

// follow reads the model after each change off the main thread (it may ask the backend) and
// hands the result to the main thread to draw.
func (s *shell) follow(changes <-chan struct{}) {
	for range changes {
		app := s.model.View()
		dispatch.MainQueue().DispatchAsync(func() { s.apply(app) })
	}
}

// apply draws one state of the app: the icon and the windows. The menu is drawn when it opens.
func (s *shell) apply(app view.App) {
	s.last = app
	s.setIcon(app.Icon)
	s.syncWindows(app.Windows)
	s.keepAwake(app.Busy)
}

// keepAwake holds an activity while the app is at work (reason is why) and ends it once the
// app is idle. User-initiated keeps App Nap off; the system may still sleep when idle.
func (s *shell) keepAwake(reason string) {
	info := foundation.ProcessInfo_ProcessInfo()
	switch {
	case reason != "" && s.activity.IsNil():
		s.activity = info.BeginActivityWithOptionsReason(foundation.ActivityUserInitiatedAllowingIdleSystemSleep, reason)
		// The activity lasts as long as its object: keep it until endActivity:.
		s.activity.Retain()
	case reason == "" && !s.activity.IsNil():
		info.EndActivity(s.activity)
		s.activity.Release()
		s.activity = objc.Object{}
	}
}

// mainMenu is the app's main menu: never shown (the app has no menu bar of its own), it is
// what gives the standard keys to Settings and Choose sites…. Its items have no target, so
// each goes to the first responder that answers it: the text field being typed in, the key
// window.
func mainMenu() appkit.Menu {
	main := appkit.NewMenuWithTitle("")
	add := func(title string, items ...appkit.MenuItem) {
		sub := appkit.NewMenuWithTitle(title)
		for _, it := range items {
			sub.AddItem(it)
		}
		item := appkit.NewMenuItemWithSelector(title, "", objc.Selector{})
		item.SetSubmenu(sub)
		main.AddItem(item)
	}
	redo := appkit.NewMenuItemWithSelector("Redo", "z", objc.Sel("redo:"))
	redo.SetKeyEquivalentModifierMask(appkit.EventModifierFlagCommand | appkit.EventModifierFlagShift)
	add(fallbackTitle,
		appkit.NewMenuItemWithSelector("Quit OpenWorker", "q", objc.Sel("terminate:")))
	add("Edit",
		appkit.NewMenuItemWithSelector("Undo", "z", objc.Sel("undo:")),
		redo,
		appkit.MenuItem_SeparatorItem(),
		appkit.NewMenuItemWithSelector("Cut", "x", objc.Sel("cut:")),
		appkit.NewMenuItemWithSelector("Copy", "c", objc.Sel("copy:")),
		appkit.NewMenuItemWithSelector("Paste", "v", objc.Sel("paste:")),
		appkit.NewMenuItemWithSelector("Select All", "a", objc.Sel("selectAll:")))
	add("Window",
		appkit.NewMenuItemWithSelector("Close", "w", objc.Sel("performClose:")))
	return main
}

// setIcon shows the status icon: the SF Symbol as a template image (macOS 11 and later), else
// the bundled template image, else the app's name, so the item is never invisible.
func (s *shell) setIcon(icon view.StatusIcon) {
	button := s.item.Button()
	img := appkit.Image_ImageWithSystemSymbolNameAccessibilityDescription(icon.Symbol, icon.Tooltip)
	if img.IsNil() && icon.Image != "" {
		// Symbols are sized by the menu bar's font; the bundled image is drawn at the
		// menu bar's glyph size (its @2x file serves Retina screens).
		img = appkit.Image_ImageNamed(appkit.ImageName(icon.Image))
		if !img.IsNil() {
			img.SetSize(foundation.Size{Width: statusIconPoints, Height: statusIconPoints})
		}
	}
	title := badgeTitle(icon.Badge)
	if img.IsNil() {
		button.SetImage(appkit.Image{})
		if title == "" {
			title = fallbackTitle
		} else {
			title = fallbackTitle + " " + title
		}
	} else {
		img.SetTemplate(true)
		img.SetAccessibilityDescription(icon.Tooltip)
		button.SetImage(img)
		button.SetImagePosition(appkit.ImageLeading)
	}
	button.SetTitle(title)
	button.SetToolTip(icon.Tooltip)
}

// act is what every control and menu item calls with its action, on the main thread.
func (s *shell) act(a view.Action) {
	switch a := a.(type) {
	case nil:
		return
	case view.Quit:
		s.app.Terminate(nil)
	case view.OpenPath:
		appkit.Workspace_SharedWorkspace().OpenURL(foundation.URL_FileURLWithPath(a.Path))
	case view.OpenURL:
		appkit.Workspace_SharedWorkspace().OpenURL(foundation.URL_URLWithString(a.URL))
	case view.CopyText:
		pb := appkit.Pasteboard_GeneralPasteboard()
		pb.ClearContents()
		if !pb.SetStringForType(a.Text, appkit.PasteboardTypeString) {
			s.reportError(fmt.Errorf("the text could not be put on the clipboard"))
		}
	case view.PickPath:
		s.pickPath(a)
	default:
		select {
		case s.actions <- a:
		default:
			// Sixty-four actions behind: the backend is stuck. Dropping a click is better
			// than freezing the menu bar; the person sees nothing change and tries again.
			s.reportError(fmt.Errorf("the app is busy; %T was not carried out", a))
		}
	}
}

// dispatchActions carries out the person's actions one at a time, in order, off the main
// thread, and redraws after each (the model's Changes may also tick).
func (s *shell) dispatchActions() {
	for a := range s.actions {
		if err := s.model.Dispatch(a); err != nil {
			s.reportError(err)
		}
		app := s.model.View()
		dispatch.MainQueue().DispatchAsync(func() { s.apply(app) })
	}
}

func (s *shell) reportError(err error) {
	if s.opts.OnError != nil {
		s.opts.OnError(err)
		return
	}
	fmt.Fprintf(os.Stderr, "openworker: %v\n", err)
}

// shouldTerminate answers "may the app quit?": later, once OnQuit has ended the sessions on
// a goroutine of its own, so the menu bar and any card stay responsive while it runs.
func (s *shell) shouldTerminate() appkit.ApplicationTerminateReply {
	if s.opts.OnQuit == nil {
		return appkit.TerminateNow
	}
	if s.quitting {
		return appkit.TerminateLater // already ending; the reply comes when cleanup is done
	}
	s.quitting = true
	onQuit := s.opts.OnQuit
	go func() {
		onQuit()
		dispatch.MainQueue().DispatchAsync(func() { s.app.ReplyToApplicationShouldTerminate(true) })
	}()
	return appkit.TerminateLater
}

// fillMenu replaces menu's items with m's.
func fillMenu(menu appkit.Menu, m view.Menu, act func(view.Action)) {
	menu.RemoveAllItems()
	for _, it := range m.Items {
		menu.AddItem(menuItem(it, act))
	}
}

// menuItem is one item of a view menu.
func menuItem(it view.MenuItem, act func(view.Action)) appkit.MenuItem {
	if it.Separator {
		return appkit.MenuItem_SeparatorItem()
	}
	var item appkit.MenuItem
	if it.Action != nil && it.Submenu == nil && !it.Disabled {
		a := it.Action
		item = appkit.NewMenuItemWithAction(it.Title, "", func(objc.Object) { act(a) })
	} else {
		item = appkit.NewMenuItemWithSelector(it.Title, "", objc.Selector{})
	}
	item.SetEnabled(!it.Disabled)
	if it.Checked {
		item.SetState(appkit.ControlStateValueOn)
	}
	if it.Indent > 0 {
		item.SetIndentationLevel(it.Indent)
	}
	if it.Submenu != nil {
		sub := appkit.NewMenuWithTitle(it.Title)
		sub.SetAutoenablesItems(false)
		fillMenu(sub, *it.Submenu, act)
		item.SetSubmenu(sub)
	}
	return item
}
