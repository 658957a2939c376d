//go:build darwin && cgo

// Package retainlocal ties Objective-C objects' lives to Go variables that
// are collected long before the objects are done.
package retainlocal

import (
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/objc"
)

type shell struct {
	menu appkit.Menu
	item appkit.StatusItem
}

// Show retains a local, a parameter and a field: each is released at the
// next garbage collection (or, for the field, panics in SetFinalizer).
func Show(menu appkit.Menu) *shell {
	item := appkit.StatusBar_SystemStatusBar().StatusItemWithLength(appkit.VariableStatusItemLength)
	objc.Retain(&item)
	objc.Retain(&menu)
	s := &shell{menu: menu, item: item}
	objc.Retain(&s.item)
	return s
}
