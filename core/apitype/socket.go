package apitype

import "fmt"

// CheckSocketPath says, before anything tries it, that a socket path is longer than a Unix
// socket's address can hold (the kernel's refusal is a bare "invalid argument"), with the
// limit and how to move the state folder.
func CheckSocketPath(path string) error {
	if len(path) <= maxSocketPath {
		return nil
	}
	return fmt.Errorf("the local API's socket path %s is %d bytes, too long: a Unix socket's path may have at most %d on this OS; %s",
		path, len(path), maxSocketPath, moveStateDir)
}
