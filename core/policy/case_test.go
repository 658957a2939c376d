package policy

import (
	"os"
	"path/filepath"
	"testing"
)

// Where names are found in any case, a folder named in another case than its own is spelled
// as on disk; elsewhere, and for names not there, as given.
func TestOnDiskCase(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "Src", "myApp"), 0o755); err != nil {
		t.Fatal(err)
	}
	defer func(was bool) { caseInsensitive = was }(caseInsensitive)
	caseInsensitive = true
	for in, want := range map[string]string{
		filepath.Join(root, "src", "MYAPP"):  filepath.Join(root, "Src", "myApp"),
		filepath.Join(root, "Src", "myApp"):  filepath.Join(root, "Src", "myApp"),
		filepath.Join(root, "src", "absent"): filepath.Join(root, "Src", "absent"),
	} {
		if got := onDiskCase(in); got != want {
			t.Errorf("onDiskCase(%s) = %s, want %s", in, got, want)
		}
	}
	caseInsensitive = false
	if p := filepath.Join(root, "src"); onDiskCase(p) != p {
		t.Errorf("a case-sensitive system's path was changed")
	}
}
