//go:build darwin && cgo

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/openworker/openworker/ui/cocoa"
)

// noArgs starts the menu-bar app: with no arguments on macOS, openworker is the app.
func noArgs() error {
	state := "Sandbox: off (direct)"
	if e, err := loadEnv(); err == nil && e.settings.Provider != "direct" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st := nativeProvider().Status(ctx)
		cancel()
		if st.OK {
			state = "Sandbox: on (" + e.settings.Provider + ")"
		} else {
			state = "Sessions on this machine are refused: " + st.Reason
		}
	} else if err != nil {
		state = fmt.Sprintf("Settings have problems: %v", err)
	}
	return cocoa.Run(cocoa.Options{SandboxState: state})
}
