package main

import (
	"fmt"
	"html"
	"strings"

	"github.com/openworker/openworker/ui/presenter"
	"github.com/openworker/openworker/ui/view"
)

// page is one preview's HTML: a menu bar with the status item, its menu drawn open, and the
// app's windows, all from the same view tree the Cocoa shell renders.
func page(pv presenter.Preview, app view.App) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s — OpenWorker preview</title>\n<link rel=\"stylesheet\" href=\"style.css\"></head>\n<body>\n", esc(pv.Title))
	fmt.Fprintf(&b, "<div class=\"menubar\"><span class=\"apple\"></span><b>Finder</b><span>File</span><span>Edit</span><span>View</span><span class=\"spacer\"></span>%s<span>Tue 1 Dec 10:16</span></div>\n", statusItem(app.Icon))
	b.WriteString("<main>\n<div class=\"menus\">\n")
	menu(&b, app.Menu, pv.Menu)
	b.WriteString("</div>\n<div class=\"windows\">\n")
	for _, w := range app.Windows {
		window(&b, w, pv.Expand)
	}
	if len(app.Windows) == 0 {
		b.WriteString("<p class=\"nowin\">No window is open.</p>\n")
	}
	fmt.Fprintf(&b, "</div>\n</main>\n<footer><a href=\"index.html\">All previews</a> · %s · tooltip: <q>%s</q></footer>\n</body></html>\n", esc(pv.Name), esc(app.Icon.Tooltip))
	return b.String()
}

func esc(s string) string { return html.EscapeString(s) }

func act(a view.Action) string {
	if a == nil {
		return ""
	}
	return fmt.Sprintf(" data-action=\"%s\"", esc(fmt.Sprintf("%T%+v", a, a)))
}

// symbols draws the status item's SF Symbols as small template glyphs (the real ones are
// the system's; these only stand in for them in a browser).
var symbols = map[string]string{
	"shield.slash":           `<path d="M8 1.5 2.5 3.5v4c0 3.3 2.3 5.9 5.5 7 3.2-1.1 5.5-3.7 5.5-7v-4z" fill="none" stroke="currentColor" stroke-width="1.3"/><path d="M2 2 14 14" stroke="currentColor" stroke-width="1.3"/>`,
	"lock.shield":            `<path d="M8 1.5 2.5 3.5v4c0 3.3 2.3 5.9 5.5 7 3.2-1.1 5.5-3.7 5.5-7v-4z" fill="none" stroke="currentColor" stroke-width="1.3"/><rect x="5.6" y="7" width="4.8" height="3.6" rx=".6" fill="currentColor"/><path d="M6.5 7V5.8a1.5 1.5 0 0 1 3 0V7" fill="none" stroke="currentColor" stroke-width="1.1"/>`,
	"shield.lefthalf.fill":   `<path d="M8 1.5 2.5 3.5v4c0 3.3 2.3 5.9 5.5 7 3.2-1.1 5.5-3.7 5.5-7v-4z" fill="none" stroke="currentColor" stroke-width="1.3"/><path d="M8 1.5 2.5 3.5v4c0 3.3 2.3 5.9 5.5 7z" fill="currentColor"/>`,
	"exclamationmark.shield": `<path d="M8 1.5 2.5 3.5v4c0 3.3 2.3 5.9 5.5 7 3.2-1.1 5.5-3.7 5.5-7v-4z" fill="none" stroke="currentColor" stroke-width="1.3"/><path d="M8 4.5v4.5" stroke="currentColor" stroke-width="1.6"/><circle cx="8" cy="11.2" r=".9" fill="currentColor"/>`,
	"hand.raised.fill":       `<path d="M5 8V3.5a1 1 0 0 1 2 0V7.5V2.5a1 1 0 0 1 2 0v5-4a1 1 0 0 1 2 0v5-2.5a1 1 0 0 1 2 0V10c0 2.5-2 4.5-4.5 4.5-1.8 0-3-.8-4-2.2L2.7 9.6a1 1 0 0 1 1.6-1.2z" fill="currentColor"/>`,
}

func statusItem(icon view.StatusIcon) string {
	glyph, ok := symbols[icon.Symbol]
	if !ok {
		glyph = `<rect x="3" y="3" width="10" height="10" rx="2" fill="currentColor"/>`
	}
	badge := ""
	if icon.Badge > 0 {
		badge = fmt.Sprintf("<span class=\"badge\">%d</span>", icon.Badge)
	}
	return fmt.Sprintf("<span class=\"status open\" title=\"%s\" data-symbol=\"%s\"><svg viewBox=\"0 0 16 16\" width=\"16\" height=\"16\">%s</svg>%s</span>", esc(icon.Tooltip), esc(icon.Symbol), glyph, badge)
}

// menu draws m, and the submenus whose titles start with open[0], open[1], … beside it.
func menu(b *strings.Builder, m view.Menu, open []string) {
	b.WriteString("<div class=\"menu\">\n")
	var next *view.Menu
	for _, it := range m.Items {
		if it.Separator {
			b.WriteString("<div class=\"menusep\"></div>\n")
			continue
		}
		cls := []string{"item"}
		if it.Disabled {
			cls = append(cls, "disabled")
		}
		expanded := it.Submenu != nil && len(open) > 0 && strings.HasPrefix(it.Title, open[0]) && next == nil
		if expanded {
			cls = append(cls, "selected")
			next = it.Submenu
		}
		check := ""
		if it.Checked {
			check = "✓"
		}
		arrow := ""
		if it.Submenu != nil {
			arrow = "<span class=\"arrow\">›</span>"
		}
		fmt.Fprintf(b, "<div class=\"%s\"%s><span class=\"check\">%s</span><span class=\"title\" style=\"padding-left:%dpx\">%s</span>%s</div>\n",
			strings.Join(cls, " "), act(it.Action), check, it.Indent*12, esc(it.Title), arrow)
	}
	b.WriteString("</div>\n")
	if next != nil {
		menu(b, *next, open[1:])
	}
}

func window(b *strings.Builder, w view.Window, expand []string) {
	kind := "window"
	if w.Kind == view.Card {
		kind = "window panel"
	}
	fmt.Fprintf(b, "<section class=\"%s\" style=\"width:%dpx\" data-window=\"%s\"%s>\n", kind, w.Width, esc(w.ID), act(w.OnClose))
	fmt.Fprintf(b, "<header><span class=\"lights\"><i></i><i></i><i></i></span><span class=\"wtitle\">%s</span></header>\n<div class=\"content\">\n", esc(w.Title))
	node(b, w.Body, expand)
	b.WriteString("</div>\n</section>\n")
}

func node(b *strings.Builder, n view.Node, expand []string) {
	switch n := n.(type) {
	case view.Stack:
		cls := "vstack"
		if n.Axis == view.Horizontal {
			cls = "hstack"
		}
		cls += [...]string{"", " center", " trailing", " fill"}[n.Align]
		fmt.Fprintf(b, "<div class=\"%s\">\n", cls)
		for _, c := range n.Children {
			node(b, c, expand)
		}
		b.WriteString("</div>\n")
	case view.Label:
		cls := [...]string{"label", "headline", "secondary", "mono"}[n.Style]
		fmt.Fprintf(b, "<div class=\"%s\">%s</div>\n", cls, esc(n.Text))
	case view.Button:
		cls := []string{"btn", [...]string{"normal", "primary", "cancel", "destructive"}[n.Role]}
		if n.Default {
			cls = append(cls, "default")
		}
		dis := ""
		if n.Disabled {
			dis = " disabled"
		}
		key := ""
		if n.Key != "" {
			key = fmt.Sprintf(" data-key=\"%s\"", esc(n.Key))
		}
		fmt.Fprintf(b, "<button class=\"%s\"%s%s%s>%s</button>\n", strings.Join(cls, " "), dis, key, act(n.Action), esc(n.Title))
	case view.Checkbox:
		mark, cls := "", "box"
		switch {
		case n.Mixed:
			mark, cls = "–", "box on"
		case n.Checked:
			mark, cls = "✓", "box on"
		}
		fmt.Fprintf(b, "<div class=\"control%s\"%s><span class=\"%s\">%s</span><div><div>%s</div>%s</div></div>\n", disabled(n.Disabled), act(n.Action), cls, mark, esc(n.Title), detail(n.Detail))
	case view.Switch:
		cls := "switch"
		if n.On {
			cls += " on"
		}
		fmt.Fprintf(b, "<div class=\"control switchrow%s\"%s><div><div>%s</div>%s</div><span class=\"%s\"><i></i></span></div>\n", disabled(n.Disabled), act(n.Action), esc(n.Title), detail(n.Detail), cls)
	case view.Radio:
		b.WriteString("<div class=\"radio\">\n")
		if n.Title != "" {
			fmt.Fprintf(b, "<div class=\"rtitle\">%s</div>\n", esc(n.Title))
		}
		for _, o := range n.Options {
			cls := "dot"
			if o.Selected {
				cls += " on"
			}
			fmt.Fprintf(b, "<div class=\"control%s\"%s><span class=\"%s\"></span><div><div>%s</div>%s</div></div>\n", disabled(o.Disabled), act(o.Action), cls, esc(o.Title), detail(o.Detail))
		}
		b.WriteString("</div>\n")
	case view.TextField:
		cls := "field"
		if n.Message != "" {
			cls += " invalid"
		}
		fmt.Fprintf(b, "<div class=\"%s\"><label>%s</label><input type=\"text\" value=\"%s\" placeholder=\"%s\">", cls, esc(n.Title), esc(n.Text), esc(n.Placeholder))
		if n.Message != "" {
			fmt.Fprintf(b, "<div class=\"message\">%s</div>", esc(n.Message))
		}
		b.WriteString("</div>\n")
	case view.List:
		b.WriteString("<div class=\"list\">\n")
		if len(n.Rows) == 0 {
			fmt.Fprintf(b, "<div class=\"row empty\">%s</div>\n", esc(n.Empty))
		}
		for _, r := range n.Rows {
			b.WriteString("<div class=\"row\">\n")
			for _, it := range r.Items {
				node(b, it, expand)
			}
			b.WriteString("</div>\n")
		}
		b.WriteString("</div>\n")
	case view.Separator:
		b.WriteString("<hr>\n")
	case view.Section:
		fmt.Fprintf(b, "<div class=\"section\"><div class=\"stitle\">%s</div>\n<div class=\"group\">\n", esc(n.Title))
		for _, c := range n.Children {
			node(b, c, expand)
		}
		b.WriteString("</div>\n")
		if n.Footer != "" {
			fmt.Fprintf(b, "<div class=\"footer\">%s</div>\n", esc(n.Footer))
		}
		b.WriteString("</div>\n")
	case view.MenuButton:
		open := len(expand) > 0 && strings.HasPrefix(n.Title, expand[0])
		fmt.Fprintf(b, "<div class=\"menubutton\"><button class=\"btn normal pulldown\"%s>%s</button>\n", disabled(n.Disabled), esc(n.Title))
		if open {
			b.WriteString("<div class=\"popup\">\n")
			menu(b, n.Menu, expand[1:])
			b.WriteString("</div>\n")
		}
		b.WriteString("</div>\n")
	case nil:
	default:
		fmt.Fprintf(b, "<div class=\"unknown\">%T</div>\n", n)
	}
}

func disabled(d bool) string {
	if d {
		return " disabled"
	}
	return ""
}

func detail(s string) string {
	if s == "" {
		return ""
	}
	return "<div class=\"detail\">" + esc(s) + "</div>"
}

// index lists the previews.
func index(pvs []presenter.Preview) string {
	var b strings.Builder
	b.WriteString("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>OpenWorker previews</title>\n<link rel=\"stylesheet\" href=\"style.css\"></head>\n<body class=\"index\">\n<h1>OpenWorker menu-bar app: previews</h1>\n<p>Each page is drawn from the view tree the Cocoa shell renders.</p>\n<ul>\n")
	for _, pv := range pvs {
		fmt.Fprintf(&b, "<li><a href=\"%s.html\">%s</a> <code>%s</code></li>\n", esc(pv.Name), esc(pv.Title), esc(pv.Name))
	}
	b.WriteString("</ul>\n</body></html>\n")
	return b.String()
}
