package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadBindings reads the real darwinkit release the app uses and checks
// the names the Cocoa shell relies on are there and a misspelling is not.
func TestLoadBindings(t *testing.T) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", darwinkitModule)
	cmd.Dir = testModule
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("finding darwinkit's source: %v", err)
	}
	b, err := loadBindings(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	// v0.5.0's generated files: 16,862 distinct selectors, 1,807 classes.
	if len(b.selectors) < 16000 || len(b.classes) < 1800 {
		t.Errorf("read %d selectors and %d classes, want about 16,862 and 1,807", len(b.selectors), len(b.classes))
	}
	t.Logf("%d selectors, %d classes, %d protocols", len(b.selectors), len(b.classes), len(b.protocols))
	for _, sel := range []string{"menuWillOpen:", "setHidesOnDeactivate:", "orderFrontRegardless", "imageWithSystemSymbolName:accessibilityDescription:", "statusItemWithLength:"} {
		if !b.selectors[sel] {
			t.Errorf("selector %q missing", sel)
		}
	}
	for _, class := range []string{"NSStatusItem", "NSPanel", "NSOpenPanel", "NSMenu"} {
		if !b.classes[class] {
			t.Errorf("class %q missing", class)
		}
	}
	for _, proto := range []string{"NSApplicationDelegate", "NSMenuDelegate", "NSWindowDelegate", "NSTextFieldDelegate", "NSControlTextEditingDelegate"} {
		if !b.protocols[proto] {
			t.Errorf("protocol %q missing", proto)
		}
	}
	if b.protocols["NSMenuDelegat"] {
		t.Error("a misspelt protocol was found")
	}
	for _, bad := range []string{"setVisibel:", "menuWillOpen", ""} {
		if b.selectors[bad] {
			t.Errorf("selector %q should not be there", bad)
		}
	}
}

// A directory without darwinkit's generated files must not yield an empty
// (or tiny) set that would make the check meaningless.
func TestLoadBindingsRefusesOtherDirs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.gen.go"), []byte(`package a; var _ = objc.Sel("init")`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadBindings(dir); err == nil || !strings.Contains(err.Error(), "not a darwinkit module") {
		t.Errorf("loadBindings of a near-empty directory: err = %v, want a refusal", err)
	}
}
