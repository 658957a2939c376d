package view

// Walk calls fn on n and on every node inside it, depth first, in order: a Stack's and a
// Section's children, a List's rows' items. Menus are not nodes; walk them as values.
func Walk(n Node, fn func(Node)) {
	fn(n)
	switch n := n.(type) {
	case Stack:
		for _, c := range n.Children {
			Walk(c, fn)
		}
	case Section:
		for _, c := range n.Children {
			Walk(c, fn)
		}
	case List:
		for _, r := range n.Rows {
			for _, c := range r.Items {
				Walk(c, fn)
			}
		}
	}
}
