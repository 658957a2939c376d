package randbytes

import (
	"bytes"
	"testing"
)

func TestReadFillsAndDiffers(t *testing.T) {
	a, b := make([]byte, 300), make([]byte, 300)
	if err := Read(a); err != nil {
		t.Fatal(err)
	}
	if err := Read(b); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) || bytes.Equal(a, make([]byte, 300)) {
		t.Errorf("two reads gave the same bytes, or zeros")
	}
}
