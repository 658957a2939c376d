package main

import (
	"github.com/openworker/openworker/core/linux"
	"github.com/openworker/openworker/core/sandbox"
)

// native is this process's one instance, so that what Prepare starts early is what the
// session's Start takes.
var native = &linux.Provider{}

func nativeProvider() sandbox.Provider { return native }
