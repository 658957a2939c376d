//go:build !darwin || !cgo

package cocoa

import (
	"strings"
	"testing"
)

// Without Cocoa, Run must refuse rather than pretend a menu bar is showing,
// and say what to use instead.
func TestRunWithoutCocoa(t *testing.T) {
	err := Run(Options{})
	if err == nil {
		t.Fatal("Run succeeded without Cocoa")
	}
	if !strings.Contains(err.Error(), "menu-bar app") || !strings.Contains(err.Error(), "openworker --help") {
		t.Errorf("error does not say what cannot run and what to use instead: %v", err)
	}
}
