//go:build !darwin

package session

import "os"

// AccountShell is this user's login shell from the account record (the passwd file), for a
// daemon whose environment has no SHELL; "" when it cannot be read.
func AccountShell() string { return passwdShell("/etc/passwd", os.Getuid()) }
