//go:build darwin && cgo

package cocoa

import (
	"fmt"

	"github.com/progrium/darwinkit/helper/action"
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/macos/foundation"
	"github.com/progrium/darwinkit/objc"

	"github.com/openworker/openworker/ui/view"
)

// renderer turns a view tree into AppKit views, one mapper per node kind. It decides nothing:
// every title, state and action comes from the tree. Main thread only.
type renderer struct {
	act func(view.Action)
	// width is the room the node being drawn has, in points: wrapping labels and rows that
	// push their last item to the trailing edge need it.
	width float64
	// fields are the text fields drawn, in tree order (to keep the focus across redraws).
	fields []appkit.TextField
	// live are the buttons and labels drawn, in the order inPlace numbers them, shared by
	// the copies of the renderer that draw a list's rows.
	live *liveControls
}

// liveControls are the controls of a drawn tree that a later tree may change in place.
type liveControls struct {
	buttons []liveButton
	labels  []appkit.TextField
}

// liveButton is a drawn button and the action it sends, which an update in place replaces.
type liveButton struct {
	b      appkit.Button
	action *view.Action
}

// update shows a change on the control already drawn.
func (lc *liveControls) update(c liveChange) {
	switch n := c.Node.(type) {
	case view.Button:
		lb := lc.buttons[c.Index]
		lb.b.SetTitle(n.Title)
		lb.b.SetKeyEquivalent(keyEquivalent(n))
		lb.b.SetEnabled(!n.Disabled)
		*lb.action = n.Action
	case view.Label:
		lc.labels[c.Index].SetStringValue(n.Text)
	}
}

// Font sizes and spacing of macOS's own windows.
const (
	bodySize      = 13
	secondarySize = 11
	monoSize      = 12
	stackSpacing  = 8
	detailIndent  = 20
	listPadding   = 8
)

func (r *renderer) render(n view.Node) appkit.IView {
	switch n := n.(type) {
	case view.Stack:
		return r.stack(n)
	case view.Label:
		l := r.label(n.Text, n.Style)
		r.live.labels = append(r.live.labels, l)
		return l
	case view.Button:
		return r.button(n)
	case view.Checkbox:
		return r.checkbox(n)
	case view.Switch:
		return r.switchControl(n)
	case view.Radio:
		return r.radio(n)
	case view.TextField:
		return r.textField(n)
	case view.List:
		return r.list(n)
	case view.Separator:
		return separator(r.width)
	case view.Section:
		return r.section(n)
	case view.MenuButton:
		return r.menuButton(n)
	case nil:
		return appkit.NewView()
	default:
		// A node kind this shell does not know yet: show that, rather than nothing, so a
		// missing mapper is seen at once.
		return r.label(fmt.Sprintf("(%T)", n), view.Secondary)
	}
}

func (r *renderer) stack(n view.Stack) appkit.IView {
	if n.Axis == view.Horizontal {
		st := appkit.NewHorizontalStackView()
		st.SetSpacing(stackSpacing)
		gravity := appkit.StackViewGravityLeading
		switch n.Align {
		case view.Trailing:
			gravity = appkit.StackViewGravityTrailing
		case view.Center:
			gravity = appkit.StackViewGravityCenter
		}
		if gravity != appkit.StackViewGravityLeading || n.Align == view.Fill {
			// Trailing or centred items need the row to span the room it has.
			st.WidthAnchor().ConstraintEqualToConstant(r.width).SetActive(true)
		}
		for _, c := range n.Children {
			st.AddViewInGravity(r.render(c), gravity)
		}
		return st
	}
	st := appkit.NewVerticalStackView()
	st.SetSpacing(stackSpacing)
	switch n.Align {
	case view.Center:
		st.SetAlignment(appkit.LayoutAttributeCenterX)
	case view.Trailing:
		st.SetAlignment(appkit.LayoutAttributeTrailing)
	default:
		st.SetAlignment(appkit.LayoutAttributeLeading)
	}
	for _, c := range n.Children {
		v := r.render(c)
		st.AddArrangedSubview(v)
		if n.Align == view.Fill {
			asView(v).WidthAnchor().ConstraintEqualToAnchor(st.WidthAnchor()).SetActive(true)
		}
	}
	return st
}

// asView is an AppKit view as the NSView it is, for its layout anchors.
func asView(v appkit.IView) appkit.View { return appkit.ViewFrom(v.Ptr()) }

func (r *renderer) label(text string, style view.LabelStyle) appkit.TextField {
	l := appkit.TextField_WrappingLabelWithString(text)
	switch style {
	case view.Headline:
		l.SetFont(appkit.Font_BoldSystemFontOfSize(bodySize))
	case view.Secondary:
		l.SetFont(appkit.Font_SystemFontOfSize(secondarySize))
		l.SetTextColor(appkit.Color_SecondaryLabelColor())
	case view.Monospace:
		l.SetFont(appkit.Font_MonospacedSystemFontOfSizeWeight(monoSize, appkit.FontWeightRegular))
		l.SetSelectable(true) // a host or a path is worth copying
	default:
		l.SetFont(appkit.Font_SystemFontOfSize(bodySize))
	}
	l.SetPreferredMaxLayoutWidth(r.width)
	return l
}

// on wires a control's target/action to the tree's action. helper/action goes through cgo
// exports, not darwinkit's libffi delegate bridge.
func (r *renderer) on(c action.CanSet, a view.Action) {
	if a == nil {
		return
	}
	act := r.act
	action.Set(c, func(objc.Object) { act(a) })
}

func (r *renderer) button(n view.Button) appkit.Button {
	b := appkit.NewButtonWithTitle(n.Title)
	b.SetBezelStyle(appkit.BezelStyleRounded)
	// Only the tree's default button answers Return: a card has none until the person
	// clicks into it.
	b.SetKeyEquivalent(keyEquivalent(n))
	if n.Role == view.Destructive {
		b.SetHasDestructiveAction(true) // macOS 11
	}
	b.SetEnabled(!n.Disabled)
	// The action is read when clicked: an update in place may have replaced it.
	a, act := new(view.Action), r.act
	*a = n.Action
	action.Set(b, func(objc.Object) {
		if *a != nil {
			act(*a)
		}
	})
	r.live.buttons = append(r.live.buttons, liveButton{b: b, action: a})
	return b
}

func (r *renderer) withDetail(control appkit.IView, detail string) appkit.IView {
	if detail == "" {
		return control
	}
	st := appkit.NewVerticalStackView()
	st.SetAlignment(appkit.LayoutAttributeLeading)
	st.SetSpacing(2)
	st.AddArrangedSubview(control)
	inner := *r
	inner.width = r.width - detailIndent
	d := inner.label(detail, view.Secondary)
	indent := appkit.NewVerticalStackView()
	indent.SetEdgeInsets(foundation.EdgeInsets{Left: detailIndent})
	indent.AddArrangedSubview(d)
	st.AddArrangedSubview(indent)
	return st
}

func state(on bool) appkit.ControlStateValue {
	if on {
		return appkit.ControlStateValueOn
	}
	return appkit.ControlStateValueOff
}

func (r *renderer) checkbox(n view.Checkbox) appkit.IView {
	b := appkit.NewCheckBox(n.Title)
	if n.Mixed {
		b.SetAllowsMixedState(true)
		b.SetState(appkit.ControlStateValueMixed)
	} else {
		b.SetState(state(n.Checked))
	}
	b.SetEnabled(!n.Disabled)
	r.on(b, n.Action)
	return r.withDetail(b, n.Detail)
}

func (r *renderer) switchControl(n view.Switch) appkit.IView {
	sw := appkit.NewSwitch() // macOS 10.15
	sw.SetState(state(n.On))
	sw.SetEnabled(!n.Disabled)
	r.on(sw, n.Action)
	row := appkit.NewHorizontalStackView()
	row.SetSpacing(stackSpacing)
	row.AddArrangedSubview(sw)
	inner := *r
	inner.width = r.width - 50
	row.AddArrangedSubview(inner.label(n.Title, view.Body))
	return r.withDetail(row, n.Detail)
}

func (r *renderer) radio(n view.Radio) appkit.IView {
	st := appkit.NewVerticalStackView()
	st.SetAlignment(appkit.LayoutAttributeLeading)
	st.SetSpacing(6)
	if n.Title != "" {
		st.AddArrangedSubview(r.label(n.Title, view.Body))
	}
	for _, o := range n.Options {
		b := appkit.NewRadioButton(o.Title)
		b.SetState(state(o.Selected))
		b.SetEnabled(!o.Disabled)
		r.on(b, o.Action)
		st.AddArrangedSubview(r.withDetail(b, o.Detail))
	}
	return st
}

func (r *renderer) textField(n view.TextField) appkit.IView {
	st := appkit.NewVerticalStackView()
	st.SetAlignment(appkit.LayoutAttributeLeading)
	st.SetSpacing(4)
	if n.Title != "" {
		st.AddArrangedSubview(r.label(n.Title, view.Body))
	}
	f := appkit.TextField_TextFieldWithString(n.Text)
	f.SetPlaceholderString(n.Placeholder)
	f.WidthAnchor().ConstraintEqualToConstant(r.width).SetActive(true)
	if n.OnSubmit != nil {
		// A text field sends its action on Return.
		submit, act := n.OnSubmit, r.act
		action.Set(f, func(objc.Object) { act(submit.WithText(f.StringValue())) })
	}
	if n.OnChange != nil {
		r.onChange(f, n.OnChange)
	}
	r.fields = append(r.fields, f)
	st.AddArrangedSubview(f)
	if n.Message != "" {
		m := r.label(n.Message, view.Secondary)
		m.SetTextColor(appkit.Color_SystemRedColor())
		st.AddArrangedSubview(m)
	}
	return st
}

// onChange sends the field's text as the person types, through the field's own delegate of
// the NSTextFieldDelegate protocol (its callback set before it is installed).
func (r *renderer) onChange(f appkit.TextField, change view.TextAction) {
	act := r.act
	d := &appkit.TextFieldDelegate{}
	d.SetControlTextDidChange(func(foundation.Notification) { act(change.WithText(f.StringValue())) })
	// darwinkit keeps the delegate with the field (a control does not retain its delegate).
	f.SetDelegate(d)
}

func (r *renderer) list(n view.List) appkit.IView {
	box := appkit.NewBox()
	box.SetTitlePosition(appkit.NoTitle)
	box.SetContentViewMargins(foundation.Size{Width: listPadding, Height: listPadding})
	inner := *r
	inner.width = r.width - 2*listPadding - 4
	st := appkit.NewVerticalStackView()
	st.SetAlignment(appkit.LayoutAttributeLeading)
	st.SetSpacing(6)
	if len(n.Rows) == 0 {
		st.AddArrangedSubview(inner.label(n.Empty, view.Secondary))
	}
	for i, row := range n.Rows {
		if i > 0 {
			st.AddArrangedSubview(separator(inner.width))
		}
		st.AddArrangedSubview(inner.row(row))
	}
	r.fields = append(r.fields, inner.fields[len(r.fields):]...)
	box.SetContentView(st)
	box.WidthAnchor().ConstraintEqualToConstant(r.width).SetActive(true)
	return box
}

// row lays a list row's items out in a line, the last one at the trailing edge.
func (r *renderer) row(row view.Row) appkit.IView {
	st := appkit.NewHorizontalStackView()
	st.SetSpacing(stackSpacing)
	st.WidthAnchor().ConstraintEqualToConstant(r.width).SetActive(true)
	for i, it := range row.Items {
		gravity := appkit.StackViewGravityLeading
		if i == len(row.Items)-1 && i > 0 {
			gravity = appkit.StackViewGravityTrailing
		}
		st.AddViewInGravity(r.render(it), gravity)
	}
	return st
}

func separator(width float64) appkit.IView {
	b := appkit.NewBox()
	b.SetBoxType(appkit.BoxSeparator)
	b.WidthAnchor().ConstraintEqualToConstant(width).SetActive(true)
	return b
}

func (r *renderer) section(n view.Section) appkit.IView {
	st := appkit.NewVerticalStackView()
	st.SetAlignment(appkit.LayoutAttributeLeading)
	st.SetSpacing(stackSpacing)
	if n.Title != "" {
		st.AddArrangedSubview(r.label(n.Title, view.Headline))
	}
	for _, c := range n.Children {
		st.AddArrangedSubview(r.render(c))
	}
	if n.Footer != "" {
		st.AddArrangedSubview(r.label(n.Footer, view.Secondary))
	}
	return st
}

// menuButton is a push button that pulls its menu down under itself ("Add… ▸").
func (r *renderer) menuButton(n view.MenuButton) appkit.IView {
	b := appkit.NewButtonWithTitle(n.Title)
	b.SetBezelStyle(appkit.BezelStyleRounded)
	b.SetEnabled(!n.Disabled)
	m, act := n.Menu, r.act
	action.Set(b, func(objc.Object) {
		menu := appkit.NewMenuWithTitle(n.Title)
		menu.SetAutoenablesItems(false)
		fillMenu(menu, m, act)
		// Under the button: a button's coordinates are flipped, so its height is its bottom.
		at := foundation.Point{X: 0, Y: b.Bounds().Size.Height + 4}
		menu.PopUpMenuPositioningItemAtLocationInView(appkit.MenuItem{}, at, b)
	})
	return b
}
