//go:build darwin && cgo

package wrongarg

// #include <stdlib.h>
import "C"

import "github.com/progrium/darwinkit/macos/appkit"

// title sits in a cgo file: the Go in it is checked like any other.
func title(item appkit.StatusItem) {
	C.free(nil)
	item.Button().SetTitle(item)
}
