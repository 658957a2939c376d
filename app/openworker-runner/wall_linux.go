package main

import "github.com/openworker/openworker/core/linux"

// maybeBuildWall becomes the wall builder when the Linux provider started this binary as
// one, and never returns then.
func maybeBuildWall() { linux.MaybeRunInit() }
