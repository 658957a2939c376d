package view

import (
	"strings"
	"testing"
)

type pick struct{ Path string }

func (pick) WithText(s string) Action { return pick{Path: s} }

func TestDump(t *testing.T) {
	sub := Menu{Items: []MenuItem{{Title: "Revoke", Action: pick{Path: "x"}}}}
	app := App{
		Icon: StatusIcon{State: "attention", Symbol: "hand.raised.fill", Image: "StatusIconTemplate", Tooltip: "t", Badge: 2},
		Menu: Menu{Items: []MenuItem{{Title: "Status", Disabled: true}, {Separator: true}, {Title: "Access", Submenu: &sub}, {Title: "On", Checked: true, Indent: 1}}},
		Windows: []Window{{ID: "w", Kind: Card, Title: "T", Width: 300, OnFocus: pick{}, Body: Stack{Children: []Node{
			Label{Text: "host:443", Style: Headline},
			Stack{Axis: Horizontal, Align: Trailing, Children: []Node{
				Button{Title: "Deny", Role: Destructive, Action: pick{Path: "deny"}},
				Button{Title: "Allow", Role: Primary, Default: true, Key: KeyReturn},
			}},
			Section{Title: "S", Footer: "F", Children: []Node{Checkbox{Title: "GitHub", Mixed: true}, Switch{Title: "~/.cargo", On: true}}},
			Radio{Options: []RadioOption{{Title: "a", Selected: true}, {Title: "b", Disabled: true}}},
			TextField{Title: "Add", Text: "x y", Message: "bad", OnChange: pick{}},
			List{Empty: "none"},
			Separator{},
			MenuButton{Title: "Add…", Menu: sub},
		}}}},
	}
	want := `icon attention symbol="hand.raised.fill" image="StatusIconTemplate" badge=2 tooltip="t"
menu
  item "Status" [disabled]
  ---
  item "Access"
    item "Revoke" -> view.pick{Path:x}
  item   "On" [checked]
card-panel w "T" width=300
  on-focus -> view.pick{Path:}
  vstack
    headline "host:443"
    hstack trailing
      button "Deny" role=destructive -> view.pick{Path:deny}
      button "Allow" role=primary [default] key=return
    section "S"
      checkbox "GitHub" [mixed]
      switch "~/.cargo" [on]
      footer "F"
    radio ""
      option "a" [selected]
      option "b" [disabled]
    field "Add" placeholder="" text="x y"
      message "bad"
      on-change -> view.pick{Path:}
    list
      empty "none"
    ---
    menu-button "Add…"
      item "Revoke" -> view.pick{Path:x}
`
	if got := Dump(app); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	var n int
	Walk(app.Windows[0].Body, func(Node) { n++ })
	if n != 13 {
		t.Fatalf("Walk visited %d nodes", n)
	}
	if !strings.Contains(DumpNode(Label{Text: "a"}), `label "a"`) {
		t.Fatal("DumpNode")
	}
}
