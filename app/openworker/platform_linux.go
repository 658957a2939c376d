package main

import (
	"github.com/openworker/openworker/core/linux"
	"github.com/openworker/openworker/core/sandbox"
)

func nativeProvider() sandbox.Provider { return &linux.Provider{} }
