//go:build !darwin || !cgo

package main

import (
	"fmt"
	"os"
)

// noArgs prints the usage: only a macOS build with cgo has the menu-bar app.
func noArgs() error {
	fmt.Fprint(os.Stderr, usage)
	return exitError{2}
}
