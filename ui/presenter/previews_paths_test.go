package presenter

import (
	"encoding/json"
	"strings"
	"testing"
)

// The previews are of the Mac app: every path they show is where macOS keeps it.
func TestPreviewsShowMacPaths(t *testing.T) {
	for _, pv := range Previews() {
		b, err := json.Marshal(Build(pv.State))
		if err != nil {
			t.Fatalf("%s: %v", pv.Name, err)
		}
		if strings.Contains(string(b), "/.config/openworker") || strings.Contains(string(b), "/.local/state") {
			t.Errorf("the preview %s shows a Linux path: %s", pv.Name, b)
		}
	}
}
