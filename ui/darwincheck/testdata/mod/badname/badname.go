//go:build darwin && cgo

// Package badname names selectors and classes darwinkit does not bind.
package badname

import (
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/objc"
)

// Hide misspells a selector and a class.
func Hide(item appkit.StatusItem, name string) {
	objc.Call[objc.Void](item, objc.Sel("setVisibel:"), false)
	_ = objc.GetClass("NSStatusItm")
	_ = objc.GetProtocol("NSMenuDelegat")
	// A name made at run time cannot be checked at all.
	_ = objc.Sel(name)
}

// View names a superclass that does not exist.
type View struct {
	appkit.View `objc:"NSVeiw"`
}
