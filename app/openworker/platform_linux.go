package main

import (
	"github.com/openworker/openworker/core/linux"
	"github.com/openworker/openworker/core/sandbox"
)

func nativeProvider() sandbox.Provider { return &linux.Provider{} }

// checkTmpRoot is where `sandbox check` makes its folder: the default temporary folder.
const checkTmpRoot = ""
