package cocoa

import (
	"testing"

	"github.com/openworker/openworker/ui/view"
)

func TestBadgeTitle(t *testing.T) {
	for n, want := range map[int]string{-1: "", 0: "", 1: "1", 3: "3", 99: "99", 100: "99+"} {
		if got := badgeTitle(n); got != want {
			t.Errorf("badgeTitle(%d) = %q, want %q", n, got, want)
		}
	}
}

// A button gets Return only while the tree says it is the default; a card's buttons have no
// key until the person clicks into it, and Deny is never pressed by Return.
func TestKeyEquivalent(t *testing.T) {
	tests := []struct {
		name string
		b    view.Button
		want string
	}{
		{name: "primary_not_yet_default", b: view.Button{Title: "Allow for this session", Role: view.Primary}, want: ""},
		{name: "primary_default", b: view.Button{Title: "Allow for this session", Role: view.Primary, Default: true, Key: view.KeyReturn}, want: "\r"},
		{name: "default_disabled", b: view.Button{Title: "Add", Role: view.Primary, Default: true, Disabled: true}, want: ""},
		{name: "destructive_never_return", b: view.Button{Title: "Deny", Role: view.Destructive, Default: true}, want: ""},
		{name: "cancel_escape", b: view.Button{Title: "Cancel", Role: view.Cancel, Key: view.KeyEscape}, want: "\x1b"},
		{name: "return_without_default", b: view.Button{Title: "Always allow", Key: view.KeyReturn}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keyEquivalent(tt.b); got != tt.want {
				t.Errorf("keyEquivalent(%+v) = %q, want %q", tt.b, got, tt.want)
			}
		})
	}
}

func TestShellAction(t *testing.T) {
	for _, a := range []view.Action{view.Quit{}, view.OpenPath{Path: "/x"}, view.OpenURL{URL: "http://127.0.0.1:3000/"}, view.PickPath{}, view.CopyText{Text: "report"}} {
		if !shellAction(a) {
			t.Errorf("%T is the shell's own action", a)
		}
	}
	if shellAction(struct{ ID string }{"c1"}) || shellAction(nil) {
		t.Error("a presenter action was taken for the shell's")
	}
}
