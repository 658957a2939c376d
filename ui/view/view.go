// Package view is the menu-bar app's declarative view tree: what the person sees, as plain
// values. The presenter builds trees from the backend's state; the Cocoa shell and the HTML
// previews render any tree generically, so what the person sees is decided and tested in
// OS-neutral code.
//
// Nothing here holds a callback. Every control carries an Action value; the shell hands it
// back to the presenter when the person uses the control, and tests compare trees and actions
// as values.
package view

// Action is what a control sends when the person uses it: a comparable value that the
// presenter's Dispatch understands (presenter.AnswerCard, presenter.TickGroup, ...) or one of
// the shell actions below. A nil Action is a control that does nothing.
type Action any

// TextAction is an action that needs the text the person typed or chose: the shell calls
// WithText with the field's text (or the chosen path) and dispatches the result.
type TextAction interface {
	WithText(text string) Action
}

// Shell actions are carried out by the shell itself, not the presenter.
type (
	// Quit quits the app (the shell ends the sessions first).
	Quit struct{}
	// OpenPath opens a file or folder with the person's default app (the audit log).
	OpenPath struct{ Path string }
	// OpenURL opens a web address with the person's browser (a session's server, published
	// on this machine's loopback).
	OpenURL struct{ URL string }
	// CopyText puts Text on the clipboard (a report the person sends).
	CopyText struct{ Text string }
	// PickPath shows the system's open panel; the chosen path goes to Then.WithText. With
	// Files and Folders both false it offers both.
	PickPath struct {
		Prompt         string
		Files, Folders bool
		Then           TextAction
	}
)

// Node is one element of a view tree: one of the types below.
type Node interface{ node() }

// Axis is a stack's direction.
type Axis int

const (
	Vertical Axis = iota
	Horizontal
)

// Align is how a stack places its children across its axis (vertical) or along it
// (horizontal: Trailing puts a row of buttons at the right, as macOS dialogs do).
type Align int

const (
	Leading Align = iota
	Center
	Trailing
	Fill
)

// Stack lays its children out in a line.
type Stack struct {
	Axis     Axis
	Align    Align
	Children []Node
}

// LabelStyle is a label's typographic role, mapped to the system's fonts.
type LabelStyle int

const (
	Body      LabelStyle = iota
	Headline             // bold, the title of a card or a section
	Secondary            // smaller, in the secondary label colour
	Monospace            // a host:port, a command, a path
)

// Label is text the person reads.
type Label struct {
	Text  string
	Style LabelStyle
}

// ButtonRole says what a button does, for its look and its key equivalent.
type ButtonRole int

const (
	Normal ButtonRole = iota
	// Primary is the button that becomes the default (Return, accent colour) when its window
	// lets it: see Button.Default.
	Primary
	Cancel      // Escape, when Button.Key says so
	Destructive // Deny, Remove: never the default
)

// Key equivalents a button may carry.
const (
	KeyReturn = "return"
	KeyEscape = "escape"
)

// Button is a push button.
type Button struct {
	Title string
	Role  ButtonRole
	// Default is whether this is the window's default button now (drawn in the accent
	// colour, pressed by Return). A card has none until the person clicks into it, so a
	// keystroke meant for another app never answers it.
	Default bool
	// Key is the key equivalent in force now ("" none, KeyReturn, KeyEscape).
	Key      string
	Disabled bool
	Action   Action
}

// Checkbox is a tick box. Action already names the new state: the action of an unticked box
// ticks it.
type Checkbox struct {
	Title    string
	Detail   string // secondary text under the title
	Checked  bool
	Mixed    bool // some, not all, of what it stands for is on
	Disabled bool
	Action   Action
}

// Switch is an on/off switch (NSSwitch) with its title beside it; Action names the new state.
type Switch struct {
	Title    string
	Detail   string
	On       bool
	Disabled bool
	Action   Action
}

// Radio is a group of mutually exclusive choices.
type Radio struct {
	Title   string
	Options []RadioOption
}

// RadioOption is one choice of a Radio; Action selects it.
type RadioOption struct {
	Title    string
	Detail   string
	Selected bool
	Disabled bool
	Action   Action
}

// TextField is a one-line text field with the message of what is wrong with its text.
type TextField struct {
	Title       string // the label before the field
	Placeholder string
	Text        string
	// Message says what is wrong with Text, in the settings file's words; "" when nothing is.
	Message  string
	OnChange TextAction // sent as the person types
	OnSubmit TextAction // sent on Return in the field
}

// List is a bordered list of rows, or Empty when there are none.
type List struct {
	Rows  []Row
	Empty string
}

// Row is one row of a List: its items laid out horizontally, the last at the trailing edge.
type Row struct {
	Items []Node
}

// Separator is a thin line.
type Separator struct{}

// Section is a titled group of a settings pane, with a footnote under it.
type Section struct {
	Title    string
	Footer   string
	Children []Node
}

// MenuButton is a pull-down button ("Add… ▸") that opens Menu.
type MenuButton struct {
	Title    string
	Disabled bool
	Menu     Menu
}

// Menu is a menu: the status item's, a submenu, or a MenuButton's.
type Menu struct {
	Items []MenuItem
}

// MenuItem is one item of a Menu. A Separator item is a line and nothing else; an item with a
// Submenu opens it and sends no action; a Disabled item is greyed (a status line, a header).
type MenuItem struct {
	Title     string
	Separator bool
	Checked   bool
	Disabled  bool
	Indent    int
	Submenu   *Menu
	Action    Action
	// Tooltip is shown when the pointer rests on the item (NSMenuItem's toolTip).
	Tooltip string
}

func (Stack) node()      {}
func (Label) node()      {}
func (Button) node()     {}
func (Checkbox) node()   {}
func (Switch) node()     {}
func (Radio) node()      {}
func (TextField) node()  {}
func (List) node()       {}
func (Separator) node()  {}
func (Section) node()    {}
func (MenuButton) node() {}

// StatusIcon is the status item's look in one state.
type StatusIcon struct {
	// State names the state for tests and the README's table: "off", "allowlist", "open",
	// "refused", "attention".
	State string
	// Symbol is the SF Symbol's name (macOS 11+), drawn as a template image.
	Symbol string
	// Image is the bundled template image (Resources/NAME.png) used when the symbol is missing.
	Image   string
	Tooltip string
	// Badge is the number shown beside the icon (the cards waiting); 0 shows nothing.
	// darwinkit v0.5.0 has no menu badge, so the shell sets it as the button's title.
	Badge int
}

// WindowKind is how the shell shows a window.
type WindowKind int

const (
	// Standard is an ordinary titled window (Settings, Choose sites…).
	Standard WindowKind = iota
	// Card is a floating, non-activating panel on every Space that never takes focus from
	// what the person is typing: NSPanel with the non-activating style mask, shown with
	// OrderFrontRegardless.
	Card
)

// Window is one window the app has open.
type Window struct {
	// ID is stable while the window is open: the shell keeps one native window per ID.
	ID    string
	Kind  WindowKind
	Title string
	Width int // points; the height follows the content
	Body  Node
	// OnClose is sent when the person closes the window.
	OnClose Action
	// OnFocus is sent when the person clicks into the window (it becomes key): a card then
	// gets its default button.
	OnFocus Action
}

// App is everything the app shows at one moment.
type App struct {
	Icon StatusIcon
	// Menu is the status item's menu, rebuilt each time it opens.
	Menu    Menu
	Windows []Window
	// Busy is why the app is at work for someone while it sits in the background (it serves
	// the local API; sessions are running: it is their proxy and API), or "" when it is idle.
	// While it is set, the shell keeps the OS from throttling the app (macOS's App Nap).
	Busy string
}
