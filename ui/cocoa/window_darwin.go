//go:build darwin && cgo

package cocoa

import (
	"time"

	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/macos/foundation"
	"github.com/progrium/darwinkit/objc"

	"github.com/openworker/openworker/ui/view"
)

// window is one native window the shell keeps for a view.Window ID. Main thread only.
type window struct {
	ns       appkit.Window
	kind     view.WindowKind
	delegate *appkit.WindowDelegate
	// drawn is the text dump of the tree last drawn: the same tree is not drawn again, so a
	// redraw never disturbs what the person is doing without reason.
	drawn string
	// current is the window as last drawn, for the delegate's callbacks.
	current view.Window
	// fields are the text fields of the tree last drawn, in tree order.
	fields []appkit.TextField
	// body and live are the tree last drawn and its controls that can change in place;
	// body is nil when the tree cannot be updated in place (none drawn yet, or its controls
	// were not drawn in the order inPlace counts them).
	body view.Node
	live *liveControls
	// width and root are the drawn content's width and its top view, and scrolls whether
	// the content is in a scroll view (taller than the screen).
	width   int
	root    appkit.StackView
	scrolls bool
	// closing is set while the shell itself closes the window, so that its OnClose (the
	// person closing it) is not sent back.
	closing bool
	// closed is set when the person closed the window.
	closed bool
	// shown is set once the window was first shown: later redraws keep its top edge where
	// it is (the person may have moved it) instead of growing it from the bottom.
	shown bool
}

// contentInset is the margin around a window's content, as in macOS's own panels.
const contentInset = 20

// syncWindows makes the open windows those of the tree: new ones opened, gone ones closed,
// the others redrawn when their tree changed. A window the person closed stays closed while
// the tree still lists it unchanged (its OnClose is on its way to the model); it comes back
// when its tree changes, as a card stack does with a new card.
func (s *shell) syncWindows(ws []view.Window) {
	want := make(map[string]bool, len(ws))
	for _, w := range ws {
		want[w.ID] = true
		nw := s.windows[w.ID]
		switch {
		case nw == nil:
			s.windows[w.ID] = s.openWindow(w)
		case nw.closed:
			if view.DumpWindow(w) != nw.drawn {
				nw.closed = false
				nw.draw(w, s.act, false)
				s.show(nw)
			}
		default:
			if !nw.draw(w, s.act, true) {
				s.redrawLater()
			}
		}
	}
	for id, nw := range s.windows {
		if !want[id] {
			if !nw.closed {
				nw.closing = true
				nw.ns.Close()
			}
			nw.ns.Release()
			delete(s.windows, id)
		}
	}
}

// openWindow creates the native window for w and shows it.
func (s *shell) openWindow(w view.Window) *window {
	rect := foundation.Rect{Size: foundation.Size{Width: float64(w.Width), Height: 100}}
	nw := &window{kind: w.Kind, current: w}
	if w.Kind == view.Card {
		// A card must never take the keyboard from what the person is typing: a
		// non-activating panel does not activate the app when shown or clicked, and
		// OrderFrontRegardless shows it without making it key. It floats above other
		// windows, follows the person to every Space and stays when another app is active.
		style := appkit.WindowStyleMaskTitled | appkit.WindowStyleMaskClosable | appkit.WindowStyleMaskUtilityWindow | appkit.WindowStyleMaskNonactivatingPanel
		panel := appkit.NewPanelWithContentRectStyleMaskBackingDefer(rect, style, appkit.BackingStoreBuffered, false)
		panel.SetFloatingPanel(true)
		panel.SetBecomesKeyOnlyIfNeeded(false)
		nw.ns = panel.Window
		nw.ns.SetLevel(appkit.FloatingWindowLevel)
		nw.ns.SetCollectionBehavior(appkit.WindowCollectionBehaviorCanJoinAllSpaces | appkit.WindowCollectionBehaviorFullScreenAuxiliary)
	} else {
		style := appkit.WindowStyleMaskTitled | appkit.WindowStyleMaskClosable
		nw.ns = appkit.NewWindowWithContentRectStyleMaskBackingDefer(rect, style, appkit.BackingStoreBuffered, false)
	}
	// The shell owns the window until it closes it: AppKit must not free it on close, and
	// the autoreleased object from darwinkit's constructor must outlive the run loop pass.
	nw.ns.Retain()
	nw.ns.SetReleasedWhenClosed(false)
	nw.ns.SetHidesOnDeactivate(false)

	// One delegate per window, every callback set before SetDelegate.
	nw.delegate = &appkit.WindowDelegate{}
	nw.delegate.SetWindowWillClose(func(foundation.Notification) {
		if nw.closing {
			return
		}
		nw.closed = true
		if a := nw.current.OnClose; a != nil {
			s.act(a)
		}
	})
	nw.delegate.SetWindowDidBecomeKey(func(foundation.Notification) {
		// The person clicked into the window: a card gets its default button from now on.
		if a := nw.current.OnFocus; a != nil {
			s.act(a)
		}
	})
	nw.ns.SetDelegate(nw.delegate)

	nw.draw(w, s.act, false)
	if w.Kind == view.Card {
		placeCard(nw.ns)
	} else {
		nw.ns.Center()
	}
	s.show(nw)
	return nw
}

// show brings a window on screen: a card without taking the keyboard from anyone, any other
// window (Settings, Choose sites…, which the person asked for) forward and key.
func (s *shell) show(nw *window) {
	nw.shown = true
	if nw.kind == view.Card {
		nw.ns.OrderFrontRegardless()
		return
	}
	s.activate()
	nw.ns.MakeKeyAndOrderFront(nil)
}

// activate brings the app forward, for a window or panel the person asked for. From macOS
// 14 NSApplication's activate does it (activateIgnoringOtherApps: is deprecated there, and
// macOS 26 ignores it, so an accessory app's windows came up behind the frontmost app);
// macOS 12 and 13 have no activate, and take the old call.
func (s *shell) activate() {
	if s.app.RespondsToSelector(objc.Sel("activate")) {
		objc.Call[objc.Void](s.app, objc.Sel("activate"))
		return
	}
	s.app.ActivateIgnoringOtherApps(true)
}

// maxContentHeight is the tallest a window's content may be: the main screen's visible
// height less room for the title bar and a margin.
func maxContentHeight() float64 {
	screen := appkit.Screen_MainScreen()
	if screen.IsNil() {
		return 600
	}
	return screen.VisibleFrame().Size.Height - 80
}

// placeCard puts a card at the top right of the main screen, under the menu bar, where
// notifications appear: near the status item that it belongs to and out of the way of work.
func placeCard(w appkit.Window) {
	screen := appkit.Screen_MainScreen()
	if screen.IsNil() {
		w.Center()
		return
	}
	vis := screen.VisibleFrame()
	size := w.Frame().Size
	const margin = 12
	w.SetFrameTopLeftPoint(foundation.Point{
		X: vis.Origin.X + vis.Size.Width - size.Width - margin,
		Y: vis.Origin.Y + vis.Size.Height - margin,
	})
}

// redrawDelay is how long a redraw waits for the mouse button to come up.
const redrawDelay = 100 * time.Millisecond

// redrawLater draws the app's last state again soon: a window's new content waits while a
// mouse button is down. One retry is pending at a time.
func (s *shell) redrawLater() {
	if s.redrawPending {
		return
	}
	s.redrawPending = true
	time.AfterFunc(redrawDelay, func() {
		dispatch.MainQueue().DispatchAsync(func() {
			s.redrawPending = false
			s.apply(s.last)
		})
	})
}

// draw shows w's tree when it changed: on the controls already drawn when only what they can
// change did (titles, default keys, enabled states, a label's text), else as a new content
// view, keeping the keyboard focus in the same text field (by its place in the tree) so
// typing is not interrupted. A new content view is not put in while a mouse button is down
// and mayDefer is set (the window is on screen): the button being clicked would be torn out
// from under the pointer. draw then returns false, and the caller draws again later.
func (nw *window) draw(w view.Window, act func(view.Action), mayDefer bool) bool {
	nw.current = w
	dump := view.DumpWindow(w)
	if dump == nw.drawn {
		return true
	}
	if nw.body != nil && w.Width == nw.width {
		if changes, ok := inPlace(nw.body, w.Body); ok {
			nw.drawn, nw.body = dump, w.Body
			nw.ns.SetTitle(w.Title)
			for _, c := range changes {
				nw.live.update(c)
			}
			nw.fit()
			return true
		}
	}
	if mayDefer && appkit.Event_PressedMouseButtons() != 0 {
		return false
	}
	nw.drawn = dump
	nw.ns.SetTitle(w.Title)

	// The field being typed in has the window's field editor.
	focused := -1
	for i, f := range nw.fields {
		if !f.CurrentEditor().IsNil() {
			focused = i
			break
		}
	}
	r := &renderer{act: act, width: float64(w.Width) - 2*contentInset, live: &liveControls{}}
	content := r.render(w.Body)
	nw.body, nw.live, nw.width = w.Body, r.live, w.Width
	if b, l := liveOrder(w.Body); b != len(r.live.buttons) || l != len(r.live.labels) {
		nw.body = nil // drawn in another order than inPlace counts: always draw anew
	}
	root := appkit.NewVerticalStackView()
	root.SetAlignment(appkit.LayoutAttributeLeading)
	root.SetEdgeInsets(foundation.EdgeInsets{Top: contentInset, Left: contentInset, Bottom: contentInset, Right: contentInset})
	root.AddArrangedSubview(content)
	root.WidthAnchor().ConstraintEqualToConstant(float64(w.Width)).SetActive(true)
	frame := nw.ns.Frame()
	size := root.FittingSize()
	scrolls := false
	if max := maxContentHeight(); size.Height > max {
		scrolls = true
		// Taller than the screen (Settings ▸ Sandbox with many entries): the content
		// scrolls, pinned to the top and as wide as the window.
		scroll := appkit.NewScrollView()
		scroll.SetHasVerticalScroller(true)
		scroll.SetDrawsBackground(false)
		root.SetTranslatesAutoresizingMaskIntoConstraints(false)
		scroll.SetDocumentView(root)
		clip := scroll.ContentView()
		root.TopAnchor().ConstraintEqualToAnchor(clip.TopAnchor()).SetActive(true)
		root.LeadingAnchor().ConstraintEqualToAnchor(clip.LeadingAnchor()).SetActive(true)
		nw.ns.SetContentView(scroll)
		size.Height = max
	} else {
		nw.ns.SetContentView(root)
	}
	nw.root, nw.scrolls = root, scrolls
	nw.ns.SetContentSize(size)
	if nw.shown {
		nw.ns.SetFrameTopLeftPoint(foundation.Point{X: frame.Origin.X, Y: frame.Origin.Y + frame.Size.Height})
	}
	nw.fields = r.fields
	if focused >= 0 && focused < len(r.fields) {
		field := r.fields[focused]
		nw.ns.MakeFirstResponder(field)
		// Making a field first responder selects its text; put the cursor back at the end.
		if editor := field.CurrentEditor(); !editor.IsNil() {
			editor.SetSelectedRange(foundation.Range{Location: uint64(len([]rune(field.StringValue()))), Length: 0})
		}
	}
	return true
}

// fit sizes the window to its content after a change in place, keeping its top edge where
// it is; only a label's text can change the height, and seldom does.
func (nw *window) fit() {
	if nw.scrolls {
		return
	}
	frame := nw.ns.Frame()
	size := nw.root.FittingSize()
	if size.Height == nw.ns.ContentView().Frame().Size.Height {
		return
	}
	nw.ns.SetContentSize(size)
	nw.ns.SetFrameTopLeftPoint(foundation.Point{X: frame.Origin.X, Y: frame.Origin.Y + frame.Size.Height})
}
