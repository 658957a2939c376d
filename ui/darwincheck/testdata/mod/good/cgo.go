//go:build darwin && cgo

package good

/*
#include <stdlib.h>
#include <string.h>
*/
import "C"

import "unsafe"

// cLength calls into C: the checker cannot see C's types, so it must accept
// the calls and still check the Go around them.
func cLength(s string) int {
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	return int(C.strlen(cs))
}
