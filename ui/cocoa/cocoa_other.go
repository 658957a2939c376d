//go:build !darwin

package cocoa

import (
	"fmt"
	"runtime"
)

// Run always fails here: the menu-bar app is Cocoa, which only macOS has.
func Run(opts Options) error {
	return fmt.Errorf("the menu-bar app needs macOS and this is %s; use the command line instead (openworker --help)", runtime.GOOS)
}
