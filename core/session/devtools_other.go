//go:build !darwin

package session

// FindDeveloperTools finds nothing off macOS: the developer folder is a Mac's.
func FindDeveloperTools() DeveloperTools { return DeveloperTools{} }
