//go:build darwin && cgo

// Package wrongarg passes darwinkit arguments of the wrong type.
package wrongarg

import "github.com/progrium/darwinkit/macos/appkit"

// Menu builds a menu, passing an int for its title and a string for an item.
func Menu() appkit.Menu {
	menu := appkit.NewMenuWithTitle(42)
	menu.AddItem("Quit")
	return menu
}
