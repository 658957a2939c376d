package cocoa

import (
	"testing"

	"github.com/openworker/openworker/ui/presenter"
	"github.com/openworker/openworker/ui/view"
)

func TestInPlace(t *testing.T) {
	card := func(ago string, focused bool, extra ...view.Node) view.Node {
		children := []view.Node{
			view.Label{Text: "github.com:443", Style: view.Headline},
			view.Label{Text: "blocked " + ago, Style: view.Secondary},
			view.Stack{Axis: view.Horizontal, Children: []view.Node{
				view.Button{Title: "Deny", Role: view.Destructive, Action: "deny"},
				view.Button{Title: "Allow", Role: view.Primary, Default: focused, Action: "allow"},
			}},
		}
		return view.Stack{Children: append(children, extra...)}
	}
	tests := []struct {
		name        string
		drawn, now  view.Node
		wantInPlace bool
		want        []liveChange
	}{
		{name: "unchanged", drawn: card("1 minute ago", false), now: card("1 minute ago", false), wantInPlace: true},
		{name: "focused", drawn: card("1 minute ago", false), now: card("1 minute ago", true), wantInPlace: true,
			want: []liveChange{{Index: 1, Node: view.Button{Title: "Allow", Role: view.Primary, Default: true, Action: "allow"}}}},
		{name: "minute_tick", drawn: card("1 minute ago", true), now: card("2 minutes ago", true), wantInPlace: true,
			want: []liveChange{{Index: 1, Node: view.Label{Text: "blocked 2 minutes ago", Style: view.Secondary}}}},
		{name: "a_second_card", drawn: card("1 minute ago", true), now: card("1 minute ago", true, view.Separator{}), wantInPlace: false},
		{name: "label_restyled", drawn: view.Label{Text: "a"}, now: view.Label{Text: "a", Style: view.Headline}, wantInPlace: false},
		{name: "button_role", drawn: view.Button{Title: "Deny"}, now: view.Button{Title: "Deny", Role: view.Destructive}, wantInPlace: false},
		{name: "label_became_button", drawn: view.Label{Text: "a"}, now: view.Button{Title: "a"}, wantInPlace: false},
		{name: "field_text", drawn: view.TextField{Text: "git"}, now: view.TextField{Text: "gith"}, wantInPlace: false},
		{name: "section_title", drawn: view.Section{Title: "A"}, now: view.Section{Title: "B"}, wantInPlace: false},
		{name: "list_row_button", wantInPlace: true,
			drawn: view.List{Rows: []view.Row{{Items: []view.Node{view.Label{Text: "x"}, view.Button{Title: "Remove"}}}}},
			now:   view.List{Rows: []view.Row{{Items: []view.Node{view.Label{Text: "x"}, view.Button{Title: "Remove", Disabled: true}}}}},
			want:  []liveChange{{Index: 0, Node: view.Button{Title: "Remove", Disabled: true}}}},
		{name: "list_grew", wantInPlace: false,
			drawn: view.List{Rows: []view.Row{{Items: []view.Node{view.Label{Text: "x"}}}}},
			now:   view.List{Rows: []view.Row{{Items: []view.Node{view.Label{Text: "x"}}}, {Items: []view.Node{view.Label{Text: "y"}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := inPlace(tt.drawn, tt.now)
			if ok != tt.wantInPlace {
				t.Fatalf("inPlace = %v, want %v", ok, tt.wantInPlace)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("changes = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i].Index != tt.want[i].Index || view.DumpNode(got[i].Node) != view.DumpNode(tt.want[i].Node) {
					t.Errorf("change %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// Clicking into a card stack must not rebuild it: the presenter's focused card differs from
// the unfocused one only in what the drawn buttons change in place.
func TestCardFocusIsInPlace(t *testing.T) {
	byName := map[string]view.App{}
	for _, pv := range presenter.Previews() {
		byName[pv.Name] = presenter.Build(pv.State)
	}
	drawn, now := byName["one-card"], byName["one-card-focused"]
	if len(drawn.Windows) != 1 || len(now.Windows) != 1 {
		t.Fatalf("the previews have %d and %d windows, want one card stack each", len(drawn.Windows), len(now.Windows))
	}
	changes, ok := inPlace(drawn.Windows[0].Body, now.Windows[0].Body)
	if !ok {
		t.Fatalf("focusing the card needs a new content view:\n%s\nthen\n%s", view.DumpWindow(drawn.Windows[0]), view.DumpWindow(now.Windows[0]))
	}
	if len(changes) == 0 {
		t.Fatal("focusing the card changed nothing in place; the default button is not set")
	}
	for _, c := range changes {
		if _, ok := c.Node.(view.Button); !ok {
			t.Errorf("focusing changed a %T in place, want only buttons", c.Node)
		}
	}
}

func TestLiveOrder(t *testing.T) {
	n := view.Stack{Children: []view.Node{
		view.Label{Text: "a"},
		view.Section{Title: "not a live label", Children: []view.Node{view.Button{Title: "b"}}},
		view.List{Rows: []view.Row{{Items: []view.Node{view.Label{Text: "c"}, view.Button{Title: "d"}}}}},
		view.Checkbox{Title: "drawn with its own title"},
	}}
	if b, l := liveOrder(n); b != 2 || l != 2 {
		t.Errorf("liveOrder = %d buttons, %d labels; want 2, 2", b, l)
	}
}
