//go:build darwin && !cgo

package cocoa

import "errors"

// Run always fails here: darwinkit reaches Cocoa through cgo, and this
// binary was built without it.
func Run(opts Options) error {
	return errors.New("this openworker was built without cgo, so it has no menu-bar app; build the app with ./build.sh app, or use the command line (openworker --help)")
}
