package main

import (
	"github.com/openworker/openworker/core/linux"
	"github.com/openworker/openworker/core/sandbox"
)

func nativeProvider() sandbox.Provider { return &linux.Provider{} }

// checkIn has native's own check use dir, a recorded folder, as its private tmp.
func checkIn(native sandbox.Provider, dir string) {
	if p, ok := native.(*linux.Provider); ok {
		p.CheckTmp = dir
	}
}

// javaMissing is nil: on Linux a java on PATH is a Java.
var javaMissing func() string
