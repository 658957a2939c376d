//go:build linux && !amd64

package linux

// legacyModeAttempts: other architectures have only the *at calls.
func legacyModeAttempts() []attempt { return nil }
