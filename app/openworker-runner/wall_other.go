//go:build !linux

package main

// maybeBuildWall does nothing here: only Linux has a wall builder, and the helper links
// nothing of it elsewhere.
func maybeBuildWall() {}
