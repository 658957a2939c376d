//go:build darwin && cgo

// Package missingpkg imports a darwinkit package that does not exist.
package missingpkg

import "github.com/progrium/darwinkit/macos/statusmenu"

var _ = statusmenu.New
