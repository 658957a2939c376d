package backend

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A path that is not there is refused, saying so; a wrong label is refused in words, not
// at a line and column of a file that does not exist.
func TestAddCredentialPathRefusals(t *testing.T) {
	f := newFixture(t, "")
	home := f.b.Manager().UserHome()
	if _, err := f.b.AddCredentialPath("~/.config/nothere", "configuration", nil, "", true); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("add-path of a path that is not there: %v; want it refused, saying so", err)
	}
	os.MkdirAll(filepath.Join(home, ".config", "tool"), 0o755)
	_, err := f.b.AddCredentialPath("~/.config/tool", "secret", nil, "", true)
	if err == nil || strings.Contains(err.Error(), "the new entry:") || !strings.Contains(err.Error(), "label") {
		t.Errorf("add-path --label secret: %v; want the label refused in words", err)
	}
	if _, err := f.b.AddCredentialPath("~/.config/tool", "configuration", nil, "", true); err != nil {
		t.Errorf("add-path of a folder that is there: %v", err)
	}
}
