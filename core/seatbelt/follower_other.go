//go:build !darwin

package seatbelt

// newLogFollower is nil: denials are read from the macOS unified log, which only macOS has.
func newLogFollower() *LogFollower { return nil }
