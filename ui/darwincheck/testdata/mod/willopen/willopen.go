//go:build darwin && cgo

// Package willopen rebuilds a menu in menuWillOpen:, directly and through its own function,
// where AppKit forbids changing the items; the same work in menuNeedsUpdate: is right.
package willopen

import (
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/objc"
)

// Wire sets the delegates.
func Wire(menu appkit.Menu, titles []string) {
	d := &appkit.MenuDelegate{}
	d.SetMenuWillOpen(func(m appkit.Menu) {
		m.RemoveAllItems()
		fill(m, titles)
		// Changing an item's title is not a change of structure.
		m.ItemAtIndex(0).SetTitle("now")
	})
	d.SetMenuNeedsUpdate(func(m appkit.Menu) { fill(m, titles) })
	menu.SetDelegate(d)

	other := &appkit.MenuDelegate{}
	other.SetMenuWillOpen(rebuild)
	menu.SetDelegate(other)
}

func rebuild(m appkit.Menu) { fill(m, nil) }

func fill(m appkit.Menu, titles []string) {
	for _, t := range titles {
		m.AddItem(appkit.NewMenuItemWithSelector(t, "", objc.Selector{}))
	}
}
