//go:build !linux

package runner

import "errors"

// mountReadOnly is not answered here: only a Linux sandbox is asked for Unwritable, and
// elsewhere the check fails rather than pass unproven.
func mountReadOnly(path string) (bool, error) {
	return false, errors.New("not checked on this system")
}
