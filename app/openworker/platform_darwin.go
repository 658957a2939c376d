package main

import (
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/seatbelt"
)

func nativeProvider() sandbox.Provider { return &seatbelt.Provider{} }
