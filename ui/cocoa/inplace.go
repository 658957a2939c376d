package cocoa

import "github.com/openworker/openworker/ui/view"

// A window's content is replaced only when its structure changed. What changes most often, a
// card's buttons when the person clicks into it (the primary becomes the default), the
// "(N minutes ago)" of a card each minute, the count of a repeated ask, is changed on the
// controls already drawn: replacing the content view would tear the button under the pointer
// out while it still tracks the click that made the window key, and the click would be lost.

// liveChange is one control to update in place: the index-th button or label of the tree,
// in the order the renderer draws them (liveOrder), and what it is to show now.
type liveChange struct {
	Index int
	Node  view.Node // a view.Button or a view.Label
}

// inPlace reports whether the tree now differs from the tree drawn only in what the drawn
// controls can change in place, a button's title, default key, enabled state and action, a
// label's text, and which controls change. Any other difference needs a new content view.
func inPlace(drawn, now view.Node) ([]liveChange, bool) {
	w := &inPlaceWalk{}
	if !w.same(drawn, now) {
		return nil, false
	}
	return w.changes, true
}

type inPlaceWalk struct {
	buttons, labels int
	changes         []liveChange
}

// same walks both trees in the renderer's order, counting buttons and labels as liveOrder
// does, and collects the changed ones; false at the first difference of structure.
func (w *inPlaceWalk) same(a, b view.Node) bool {
	switch a := a.(type) {
	case view.Button:
		b, ok := b.(view.Button)
		if !ok || a.Role != b.Role {
			return false
		}
		i := w.buttons
		w.buttons++
		if view.DumpNode(a) != view.DumpNode(b) {
			w.changes = append(w.changes, liveChange{Index: i, Node: b})
		}
		return true
	case view.Label:
		b, ok := b.(view.Label)
		if !ok || a.Style != b.Style {
			return false
		}
		i := w.labels
		w.labels++
		if a.Text != b.Text {
			w.changes = append(w.changes, liveChange{Index: i, Node: b})
		}
		return true
	case view.Stack:
		b, ok := b.(view.Stack)
		return ok && a.Axis == b.Axis && a.Align == b.Align && w.all(a.Children, b.Children)
	case view.Section:
		b, ok := b.(view.Section)
		return ok && a.Title == b.Title && a.Footer == b.Footer && w.all(a.Children, b.Children)
	case view.List:
		b, ok := b.(view.List)
		if !ok || a.Empty != b.Empty || len(a.Rows) != len(b.Rows) {
			return false
		}
		for i := range a.Rows {
			if !w.all(a.Rows[i].Items, b.Rows[i].Items) {
				return false
			}
		}
		return true
	case nil:
		return b == nil
	}
	// Any other control (a checkbox, a switch, a text field…) is drawn anew when it changes.
	return b != nil && view.DumpNode(a) == view.DumpNode(b)
}

func (w *inPlaceWalk) all(a, b []view.Node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !w.same(a[i], b[i]) {
			return false
		}
	}
	return true
}

// liveOrder counts the buttons and labels of a tree as the renderer draws them and inPlace
// numbers them: depth first, a stack's, a section's and a list row's children in order.
func liveOrder(n view.Node) (buttons, labels int) {
	w := &inPlaceWalk{}
	w.same(n, n)
	return w.buttons, w.labels
}
