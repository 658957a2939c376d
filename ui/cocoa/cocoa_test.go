package cocoa

import "testing"

func TestStateLine(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "as_given", in: "Sandbox: off (direct)", want: "Sandbox: off (direct)"},
		{name: "empty_is_unknown", in: "", want: unknownState},
		{name: "blank_is_unknown", in: " \t\n", want: unknownState},
		// A menu item shows one line; a stray newline would cut the state
		// in half.
		{name: "one_line", in: "Sandbox: on\n(seatbelt)  ", want: "Sandbox: on (seatbelt)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stateLine(tt.in); got != tt.want {
				t.Errorf("stateLine(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
