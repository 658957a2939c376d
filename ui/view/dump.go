package view

import (
	"fmt"
	"strings"
)

// Dump writes an app's state as indented text, one node a line: the golden files keep it, so
// a change to what the person sees shows in a diff.
func Dump(a App) string {
	var d dumper
	d.line(0, "icon %s symbol=%q image=%q badge=%d tooltip=%q", a.Icon.State, a.Icon.Symbol, a.Icon.Image, a.Icon.Badge, a.Icon.Tooltip)
	if a.Busy != "" {
		d.line(0, "busy %q", a.Busy)
	}
	d.line(0, "menu")
	d.menu(1, a.Menu)
	for _, w := range a.Windows {
		d.window(0, w)
	}
	return d.String()
}

// DumpNode writes one tree as Dump does.
func DumpNode(n Node) string {
	var d dumper
	d.node(0, n)
	return d.String()
}

// DumpWindow writes one window as Dump does.
func DumpWindow(w Window) string {
	var d dumper
	d.window(0, w)
	return d.String()
}

type dumper struct{ strings.Builder }

func (d *dumper) line(depth int, format string, args ...any) {
	d.WriteString(strings.Repeat("  ", depth))
	fmt.Fprintf(d, format, args...)
	d.WriteString("\n")
}

func act(a Action) string {
	if a == nil {
		return ""
	}
	return fmt.Sprintf(" -> %T%+v", a, a)
}

func flags(pairs ...any) string {
	var s string
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1].(bool) {
			s += " [" + pairs[i].(string) + "]"
		}
	}
	return s
}

func (d *dumper) window(depth int, w Window) {
	kind := "window"
	if w.Kind == Card {
		kind = "card-panel"
	}
	d.line(depth, "%s %s %q width=%d%s", kind, w.ID, w.Title, w.Width, act(w.OnClose))
	if w.OnFocus != nil {
		d.line(depth+1, "on-focus%s", act(w.OnFocus))
	}
	if w.Body != nil {
		d.node(depth+1, w.Body)
	}
}

func (d *dumper) menu(depth int, m Menu) {
	for _, it := range m.Items {
		if it.Separator {
			d.line(depth, "---")
			continue
		}
		d.line(depth, "item %s%q%s%s", strings.Repeat("  ", it.Indent), it.Title, flags("checked", it.Checked, "disabled", it.Disabled), act(it.Action))
		if it.Tooltip != "" {
			d.line(depth+1, "tooltip %q", it.Tooltip)
		}
		if it.Submenu != nil {
			d.menu(depth+1, *it.Submenu)
		}
	}
}

var styles = map[LabelStyle]string{Body: "label", Headline: "headline", Secondary: "secondary", Monospace: "mono"}
var roles = map[ButtonRole]string{Normal: "", Primary: " role=primary", Cancel: " role=cancel", Destructive: " role=destructive"}
var axes = map[Axis]string{Vertical: "vstack", Horizontal: "hstack"}
var aligns = map[Align]string{Leading: "", Center: " center", Trailing: " trailing", Fill: " fill"}

func (d *dumper) node(depth int, n Node) {
	switch n := n.(type) {
	case Stack:
		d.line(depth, "%s%s", axes[n.Axis], aligns[n.Align])
		for _, c := range n.Children {
			d.node(depth+1, c)
		}
	case Label:
		d.line(depth, "%s %q", styles[n.Style], n.Text)
	case Button:
		key := ""
		if n.Key != "" {
			key = " key=" + n.Key
		}
		d.line(depth, "button %q%s%s%s%s", n.Title, roles[n.Role], flags("default", n.Default, "disabled", n.Disabled), key, act(n.Action))
	case Checkbox:
		d.line(depth, "checkbox %q%s%s", n.Title, flags("checked", n.Checked, "mixed", n.Mixed, "disabled", n.Disabled), act(n.Action))
		if n.Detail != "" {
			d.line(depth+1, "detail %q", n.Detail)
		}
	case Switch:
		d.line(depth, "switch %q%s%s", n.Title, flags("on", n.On, "disabled", n.Disabled), act(n.Action))
		if n.Detail != "" {
			d.line(depth+1, "detail %q", n.Detail)
		}
	case Radio:
		d.line(depth, "radio %q", n.Title)
		for _, o := range n.Options {
			d.line(depth+1, "option %q%s%s", o.Title, flags("selected", o.Selected, "disabled", o.Disabled), act(o.Action))
			if o.Detail != "" {
				d.line(depth+2, "detail %q", o.Detail)
			}
		}
	case TextField:
		d.line(depth, "field %q placeholder=%q text=%q", n.Title, n.Placeholder, n.Text)
		if n.Message != "" {
			d.line(depth+1, "message %q", n.Message)
		}
		if n.OnChange != nil {
			d.line(depth+1, "on-change%s", act(n.OnChange))
		}
		if n.OnSubmit != nil {
			d.line(depth+1, "on-submit%s", act(n.OnSubmit))
		}
	case List:
		d.line(depth, "list")
		if len(n.Rows) == 0 && n.Empty != "" {
			d.line(depth+1, "empty %q", n.Empty)
		}
		for _, r := range n.Rows {
			d.line(depth+1, "row")
			for _, it := range r.Items {
				d.node(depth+2, it)
			}
		}
	case Separator:
		d.line(depth, "---")
	case Section:
		d.line(depth, "section %q", n.Title)
		for _, c := range n.Children {
			d.node(depth+1, c)
		}
		if n.Footer != "" {
			d.line(depth+1, "footer %q", n.Footer)
		}
	case MenuButton:
		d.line(depth, "menu-button %q%s", n.Title, flags("disabled", n.Disabled))
		d.menu(depth+1, n.Menu)
	case nil:
		d.line(depth, "nil")
	default:
		d.line(depth, "unknown %T", n)
	}
}
