package main

import (
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/seatbelt"
)

// native is this process's one instance, so that what Prepare starts early is what the
// session's Start takes.
var native = &seatbelt.Provider{}

func nativeProvider() sandbox.Provider { return native }
