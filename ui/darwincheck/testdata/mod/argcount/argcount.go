//go:build darwin && cgo

// Package argcount sends selectors with the wrong number of arguments.
package argcount

import (
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/objc"
)

// Send gets the count wrong every way it can be.
func Send(item appkit.StatusItem, menu appkit.Menu, args []any) {
	objc.Call[objc.Void](item, objc.Sel("setMenu:"))
	objc.Call[objc.Void](item, objc.Sel("setLength:"), 20.0, 1)
	_ = objc.Call[bool](item, objc.Sel("isVisible"), true)
	item.PerformSelectorWithObject(objc.Sel("isVisible"), menu.Object)
	// Neither a slice of arguments nor a selector kept in a variable can
	// be counted.
	objc.Call[objc.Void](item, objc.Sel("setMenu:"), args...)
	sel := objc.Sel("setMenu:")
	objc.Call[objc.Void](item, sel, menu)
}
