package main

import (
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/seatbelt"
)

func nativeProvider() sandbox.Provider { return &seatbelt.Provider{} }

// checkTmpRoot is where `sandbox check` makes its folder: not under TMPDIR, which on a Mac
// lies in /private/var/folders (see seatbelt.TmpRoot).
const checkTmpRoot = seatbelt.TmpRoot
