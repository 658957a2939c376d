package main

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"reflect"
	"strconv"
	"strings"
)

// The checks below catch what type-checking cannot: darwinkit's objc layer
// takes selectors and class names as strings and arguments as ...any, and
// AppKit's thread rule and the Go collector's view of Objective-C objects are
// invisible to go/types. Each one is a way the app has crashed or misbehaved
// only at run time on a Mac.

const (
	objcPkg     = darwinkitModule + "/objc"
	dispatchPkg = darwinkitModule + "/dispatch"
	appkitPkg   = darwinkitModule + "/macos/appkit"
)

// menuStructure are the calls that change a menu's items, which AppKit forbids in
// menuWillOpen: (they belong in menuNeedsUpdate:).
var menuStructure = map[string]bool{
	"Menu.AddItem": true, "Menu.AddItemWithTitleActionKeyEquivalent": true,
	"Menu.InsertItemAtIndex": true, "Menu.InsertItemWithTitleActionKeyEquivalentAtIndex": true,
	"Menu.RemoveItem": true, "Menu.RemoveItemAtIndex": true, "Menu.RemoveAllItems": true,
	"Menu.SetItemArray": true, "Menu.SetSubmenuForItem": true, "MenuItem.SetSubmenu": true,
}

// appKitPackages are darwinkit packages whose functions and methods touch
// AppKit objects, which may only be used on the main thread.
var appKitPackages = map[string]bool{
	darwinkitModule + "/macos/appkit":     true,
	darwinkitModule + "/helper/action":    true,
	darwinkitModule + "/helper/layout":    true,
	darwinkitModule + "/helper/widgets":   true,
	darwinkitModule + "/macos/webkit":     true,
	darwinkitModule + "/macos/quartz":     true,
	darwinkitModule + "/macos/avkit":      true,
	darwinkitModule + "/macos/contactsui": true,
}

// selectorSenders is, for the objc functions and methods that send a selector,
// the index of the selector argument and how many message arguments follow
// it (-1: all remaining call arguments).
var selectorSenders = map[string]struct {
	selArg int
	params int
}{
	"Call":                             {selArg: 1, params: -1},
	"Object.PerformSelector":           {selArg: 0, params: 0},
	"Object.PerformSelectorWithObject": {selArg: 0, params: 1},
	"Object.PerformSelectorWithObjectWithObject": {selArg: 0, params: 2},
}

// lint runs the darwinkit checks over one checked (not dependency-only)
// package. bind is nil when the build has no darwinkit; then no code can
// call objc and the string checks have nothing to look at.
type lint struct {
	c     *checker
	pkg   *types.Package
	info  *types.Info
	files []*ast.File
	bind  func() (*bindings, error)

	decls   map[*types.Func]*ast.FuncDecl
	reaches map[*types.Func]*appKitCall // memo; an entry with nil value is "in progress" or "none"

	// runs are the package's calls of Application.Run, and setsMainMenu whether it calls
	// Application.SetMainMenu anywhere.
	runs         []token.Pos
	setsMainMenu bool
	// found memoizes reachesWhere, by rule and function.
	found map[string]map[*types.Func]*appKitCall
}

// appKitCall is the first AppKit call a function makes off the main queue.
type appKitCall struct {
	pos  token.Pos
	name string
}

func (l *lint) run() {
	l.decls = make(map[*types.Func]*ast.FuncDecl)
	l.reaches = make(map[*types.Func]*appKitCall)
	for _, f := range l.files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if fn, ok := l.info.Defs[fd.Name].(*types.Func); ok {
					l.decls[fn] = fd
				}
			}
		}
	}
	for _, f := range l.files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				l.checkActivation(fd.Body)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				l.checkCall(n)
			case *ast.StructType:
				l.checkTags(n)
			case *ast.GoStmt:
				l.checkGo(n)
			}
			return true
		})
	}
	if !l.setsMainMenu {
		for _, pos := range l.runs {
			l.report(pos, "the application runs without a main menu: an accessory (menu-bar) app never shows one, but ⌘C ⌘V ⌘X ⌘A ⌘Z ⌘W ⌘Q are its items, and without them those keys do nothing in the app's windows; call Application.SetMainMenu with nil-targeted Edit and Window items before Run")
		}
	}
}

func (l *lint) report(pos token.Pos, format string, args ...any) {
	l.c.report(l.c.fset.Position(pos), fmt.Sprintf(format, args...))
}

// callee is the function or method a call expression calls, generic
// instantiations included, or nil for a call of a function value, a
// conversion or a builtin.
func (l *lint) callee(call *ast.CallExpr) *types.Func {
	fun := ast.Unparen(call.Fun)
	switch f := fun.(type) {
	case *ast.IndexExpr:
		fun = f.X
	case *ast.IndexListExpr:
		fun = f.X
	}
	var id *ast.Ident
	switch f := ast.Unparen(fun).(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		if sel, ok := l.info.Selections[f]; ok {
			fn, _ := sel.Obj().(*types.Func)
			if fn != nil {
				return fn.Origin()
			}
			return nil
		}
		id = f.Sel
	default:
		return nil
	}
	fn, _ := l.info.Uses[id].(*types.Func)
	if fn == nil {
		return nil
	}
	return fn.Origin()
}

// qualifiedName is "Func" or "Type.Method" for a function of pkgPath, or ""
// when fn belongs to another package.
func qualifiedName(fn *types.Func, pkgPath string) string {
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != pkgPath {
		return ""
	}
	sig, _ := fn.Type().(*types.Signature)
	if sig == nil || sig.Recv() == nil {
		return fn.Name()
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name() + "." + fn.Name()
	}
	return fn.Name()
}

// constString is the value of a constant string expression.
func (l *lint) constString(e ast.Expr) (string, bool) {
	tv, ok := l.info.Types[e]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return "", false
	}
	return constant.StringVal(tv.Value), true
}

func (l *lint) checkCall(call *ast.CallExpr) {
	fn := l.callee(call)
	switch qualifiedName(fn, objcPkg) {
	case "Sel":
		l.checkName(call, "selector", "objc.Sel", func(b *bindings) map[string]bool { return b.selectors })
	case "GetClass":
		l.checkName(call, "class", "objc.GetClass", func(b *bindings) map[string]bool { return b.classes })
	case "GetProtocol", "WrapAsProtocol":
		l.checkName(call, "protocol", "objc."+fn.Name(), func(b *bindings) map[string]bool { return b.protocols })
	case "Retain":
		l.checkRetain(call)
	}
	if s, ok := selectorSenders[qualifiedName(fn, objcPkg)]; ok {
		l.checkArgCount(call, s.selArg, s.params)
	}
	if fn != nil {
		l.checkSpawn(call, fn)
	}
	switch q := qualifiedName(fn, appkitPkg); {
	case q == "Application.Run":
		l.runs = append(l.runs, callPos(call))
	case q == "Application.SetMainMenu":
		l.setsMainMenu = true
	case q == "MenuDelegate.SetMenuWillOpen" && len(call.Args) == 1:
		l.checkCallback(call.Args[0], "menuWillOpen:", "menu", func(c *types.Func) bool { return menuStructure[qualifiedName(c, appkitPkg)] },
			"changes the menu's items in menuWillOpen:, where AppKit forbids it (the menu may show stale or mis-sized); build it in menuNeedsUpdate: (MenuDelegate.SetMenuNeedsUpdate)")
	case strings.HasPrefix(q, "WindowDelegate.Set") && len(call.Args) == 1:
		cb := strings.TrimPrefix(q, "WindowDelegate.Set")
		l.checkCallback(call.Args[0], cb, "contentview", func(c *types.Func) bool { return qualifiedName(c, appkitPkg) == "Window.SetContentView" },
			"replaces a window's content view from the window delegate's "+cb+" callback: when the window becomes key on a click, the view under the pointer is torn out while its button still tracks that click, and the click is lost; update the controls in place")
	}
}

// checkCallback reports the calls a callback (a function literal or a function of this
// package) makes, directly or through the package's functions, that bad says must not be
// made from it. rule names the memo.
func (l *lint) checkCallback(arg ast.Expr, callback, rule string, bad func(*types.Func) bool, why string) {
	arg = ast.Unparen(arg)
	report := func(pos token.Pos, name string, via *appKitCall) {
		if via != nil {
			l.report(pos, "%s, called from %s, reaches %s (%s), which %s", name, callback, via.name, l.position(via.pos), why)
			return
		}
		l.report(pos, "%s, called from %s, %s", name, callback, why)
	}
	if lit, ok := arg.(*ast.FuncLit); ok {
		ast.Inspect(lit.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			c := l.callee(call)
			if c == nil {
				return true
			}
			if bad(c) {
				report(callPos(call), appKitName(c), nil)
			} else if hit := l.reachesWhere(c, rule, bad); hit != nil {
				report(callPos(call), c.Name(), hit)
			}
			return true
		})
		return
	}
	var id *ast.Ident
	switch e := arg.(type) {
	case *ast.Ident:
		id = e
	case *ast.SelectorExpr:
		id = e.Sel
	default:
		return
	}
	if c, ok := l.info.Uses[id].(*types.Func); ok {
		if hit := l.reachesWhere(c.Origin(), rule, bad); hit != nil {
			report(id.Pos(), c.Name(), hit)
		}
	}
}

// reachesWhere is the first call for which bad is true that fn (a function of this package)
// makes, directly or through the package's other functions, or nil.
func (l *lint) reachesWhere(fn *types.Func, rule string, bad func(*types.Func) bool) *appKitCall {
	if fn == nil || fn.Pkg() != l.pkg {
		return nil
	}
	if l.found == nil {
		l.found = make(map[string]map[*types.Func]*appKitCall)
	}
	memo := l.found[rule]
	if memo == nil {
		memo = make(map[*types.Func]*appKitCall)
		l.found[rule] = memo
	}
	if hit, seen := memo[fn]; seen {
		return hit
	}
	memo[fn] = nil // recursion: assume none while walking
	decl := l.decls[fn]
	if decl == nil {
		return nil
	}
	var first *appKitCall
	ast.Inspect(decl.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || first != nil {
			return first == nil
		}
		c := l.callee(call)
		if c == nil {
			return true
		}
		if bad(c) {
			first = &appKitCall{pos: callPos(call), name: appKitName(c)}
		} else if hit := l.reachesWhere(c, rule, bad); hit != nil {
			first = hit
		}
		return first == nil
	})
	memo[fn] = first
	return first
}

// checkName checks that a selector or class name passed as a string is a
// constant darwinkit's bindings use.
func (l *lint) checkName(call *ast.CallExpr, kind, fname string, set func(*bindings) map[string]bool) {
	if len(call.Args) == 0 {
		return
	}
	name, ok := l.constString(call.Args[0])
	if !ok {
		l.report(call.Args[0].Pos(), "the %s passed to %s is not a constant string, so it cannot be checked against darwinkit's bindings; write the name literally", kind, fname)
		return
	}
	b, err := l.bind()
	if err != nil {
		l.report(call.Args[0].Pos(), "cannot check the %s %q: %v", kind, name, err)
		return
	}
	if !set(b)[name] {
		l.report(call.Args[0].Pos(), "%s(%q): darwinkit's generated bindings have no such %s (a typo, or an API darwinkit does not bind); at run time it %s", fname, name, kind, map[string]string{
			"selector": "is sent anyway and the app crashes with an unrecognized selector, or darwinkit silently returns a zero value",
			"class":    "is a nil class",
			"protocol": "is a nil protocol, and a delegate wrapped in it answers nothing",
		}[kind])
	}
}

// checkArgCount checks that a selector sent with arguments has one colon per
// argument: Objective-C reads exactly that many from the call, so a mismatch
// sends garbage or drops an argument, and nothing complains until it crashes.
func (l *lint) checkArgCount(call *ast.CallExpr, selArg, params int) {
	// For a method (obj.PerformSelector(sel)), the receiver is not among
	// call.Args, so selArg counts from the first argument either way.
	if selArg >= len(call.Args) {
		return
	}
	selExpr := ast.Unparen(call.Args[selArg])
	selCall, ok := selExpr.(*ast.CallExpr)
	var name string
	if ok && qualifiedName(l.callee(selCall), objcPkg) == "Sel" && len(selCall.Args) == 1 {
		name, ok = l.constString(selCall.Args[0])
	} else {
		ok = false
	}
	if !ok {
		l.report(selExpr.Pos(), "write the selector as objc.Sel(\"…\") in the call itself, so its number of arguments can be checked")
		return
	}
	got := params
	if params < 0 {
		if call.Ellipsis.IsValid() {
			l.report(call.Ellipsis, "the arguments for %q are passed as a slice (...), so their number cannot be checked; pass them one by one", name)
			return
		}
		got = len(call.Args) - selArg - 1
	}
	if want := strings.Count(name, ":"); got != want {
		l.report(selExpr.Pos(), "selector %q takes %d argument(s) (one per colon) but is sent with %d", name, want, got)
	}
}

// checkTags checks `objc:"…"` struct tags: objc.NewClass reads the tag as
// the name of the new class's superclass.
func (l *lint) checkTags(st *ast.StructType) {
	for _, field := range st.Fields.List {
		if field.Tag == nil {
			continue
		}
		raw, err := strconv.Unquote(field.Tag.Value)
		if err != nil {
			continue
		}
		name, ok := reflect.StructTag(raw).Lookup("objc")
		if !ok {
			continue
		}
		b, err := l.bind()
		if err != nil {
			l.report(field.Tag.Pos(), "cannot check the class %q: %v", name, err)
			continue
		}
		if !b.classes[name] {
			l.report(field.Tag.Pos(), "objc:%q: darwinkit's generated bindings have no such class; objc.NewClass would subclass a nil class", name)
		}
	}
}

// checkRetain refuses objc.Retain of anything but a package-level variable.
// objc.Retain(&x) retains the object and sets a finalizer on x that releases
// it: when x is a local variable (or a temporary), x becomes garbage as soon
// as the function returns, however many copies of the object's handle live
// on, and the object is released at the next collection. A status item then
// leaves the menu bar a minute or two after launch.
func (l *lint) checkRetain(call *ast.CallExpr) {
	if len(call.Args) != 1 {
		return
	}
	arg := ast.Unparen(call.Args[0])
	if u, ok := arg.(*ast.UnaryExpr); ok && u.Op == token.AND {
		if id, ok := ast.Unparen(u.X).(*ast.Ident); ok {
			if v, ok := l.info.Uses[id].(*types.Var); ok {
				if v.Parent() == l.pkg.Scope() {
					return // a package-level variable lives as long as the program
				}
				l.report(call.Pos(), "objc.Retain(&%s) releases the object when the local variable %s is garbage-collected, soon after this function returns, not when the object is no longer used; call %s.Retain() (and Release when done) or keep it in a package-level variable", id.Name, id.Name, id.Name)
				return
			}
		}
	}
	l.report(call.Pos(), "objc.Retain releases the object when the Go value its argument points to is garbage-collected; pass the address of a package-level variable, or call the object's own Retain() (and Release when done)")
}

// checkGo reports AppKit calls that a go statement's function makes off the
// main thread. AppKit is not thread-safe: a call from another thread can
// corrupt its state or crash, and only sometimes. A call inside a block given
// to dispatch.MainQueue() runs on the main thread and is fine.
func (l *lint) checkGo(g *ast.GoStmt) {
	if lit, ok := ast.Unparen(g.Call.Fun).(*ast.FuncLit); ok {
		l.checkGoroutine(g.Pos(), lit, "goroutine started")
		return
	}
	fn := l.callee(g.Call)
	if fn == nil {
		return
	}
	l.checkGoFunc(callPos(g.Call), fn, "run in a new goroutine")
}

// checkSpawn treats the functions other goroutines run like go statements:
// time.AfterFunc's, which runs on a goroutine of its own, and
// sync.WaitGroup.Go's.
func (l *lint) checkSpawn(call *ast.CallExpr, fn *types.Func) {
	var f ast.Expr
	switch {
	case qualifiedName(fn, "time") == "AfterFunc" && len(call.Args) == 2:
		f = call.Args[1]
	case qualifiedName(fn, "sync") == "WaitGroup.Go" && len(call.Args) == 1:
		f = call.Args[0]
	default:
		return
	}
	what := fn.Pkg().Name() + "." + qualifiedName(fn, fn.Pkg().Path())
	f = ast.Unparen(f)
	if lit, ok := f.(*ast.FuncLit); ok {
		l.checkGoroutine(call.Pos(), lit, "function given to "+what)
		return
	}
	var id *ast.Ident
	switch e := f.(type) {
	case *ast.Ident:
		id = e
	case *ast.SelectorExpr:
		if sel, ok := l.info.Selections[e]; ok {
			if target, ok := sel.Obj().(*types.Func); ok {
				l.checkGoFunc(e.Sel.Pos(), target.Origin(), "run by "+what)
			}
			return
		}
		id = e.Sel
	default:
		return
	}
	if target, ok := l.info.Uses[id].(*types.Func); ok {
		l.checkGoFunc(id.Pos(), target.Origin(), "run by "+what)
	}
}

func (l *lint) checkGoroutine(start token.Pos, lit *ast.FuncLit, what string) {
	l.walkOffMain(lit.Body, func(pos token.Pos, call string) {
		l.report(pos, "%s off the main thread: this runs in the %s at line %d; AppKit must be used on the main thread (wrap it in dispatch.MainQueue().DispatchAsync)", call, what, l.c.fset.Position(start).Line)
	})
}

func (l *lint) checkGoFunc(pos token.Pos, fn *types.Func, how string) {
	if isAppKit(fn) {
		l.report(pos, "AppKit call %s, %s, off the main thread; AppKit must be used on the main thread (call it inside dispatch.MainQueue().DispatchAsync)", appKitName(fn), how)
		return
	}
	if hit := l.reachesAppKit(fn); hit != nil {
		l.report(pos, "%s, %s, reaches AppKit call %s (%s) off the main thread; AppKit must be used on the main thread (wrap that call in dispatch.MainQueue().DispatchAsync)", fn.Name(), how, hit.name, l.position(hit.pos))
	}
}

func isAppKit(fn *types.Func) bool {
	return fn != nil && fn.Pkg() != nil && appKitPackages[fn.Pkg().Path()]
}

// isMainQueueDispatch reports whether call is dispatch.MainQueue().DispatchAsync
// or DispatchSync: its function argument runs on the main thread.
func (l *lint) isMainQueueDispatch(call *ast.CallExpr) bool {
	switch qualifiedName(l.callee(call), dispatchPkg) {
	case "Queue.DispatchAsync", "Queue.DispatchSync":
	default:
		return false
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	recv, ok := ast.Unparen(sel.X).(*ast.CallExpr)
	return ok && qualifiedName(l.callee(recv), dispatchPkg) == "MainQueue"
}

// walkOffMain calls found for every AppKit call in body that is not inside a
// main-queue block, directly or through this package's own functions.
// Function literals are walked too: wherever they run, it is not known to be
// the main thread.
func (l *lint) walkOffMain(body ast.Node, found func(pos token.Pos, what string)) {
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if l.isMainQueueDispatch(call) {
			return false
		}
		fn := l.callee(call)
		if isAppKit(fn) {
			found(callPos(call), "AppKit call "+appKitName(fn))
			return true
		}
		if hit := l.reachesAppKit(fn); hit != nil {
			found(callPos(call), fmt.Sprintf("%s reaches AppKit call %s (%s)", fn.Name(), hit.name, l.position(hit.pos)))
		}
		return true
	})
}

// reachesAppKit is the first AppKit call fn (a function of this package)
// makes outside a main-queue block, directly or through the package's other
// functions, or nil.
func (l *lint) reachesAppKit(fn *types.Func) *appKitCall {
	if fn == nil || fn.Pkg() != l.pkg {
		return nil
	}
	if hit, seen := l.reaches[fn]; seen {
		return hit
	}
	l.reaches[fn] = nil // recursion: assume none while walking
	decl := l.decls[fn]
	if decl == nil {
		return nil
	}
	var first *appKitCall
	ast.Inspect(decl.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || first != nil {
			return first == nil
		}
		if l.isMainQueueDispatch(call) {
			return false
		}
		callee := l.callee(call)
		if isAppKit(callee) {
			first = &appKitCall{pos: callPos(call), name: appKitName(callee)}
		} else if hit := l.reachesAppKit(callee); hit != nil {
			first = hit
		}
		return first == nil
	})
	l.reaches[fn] = first
	return first
}

// callPos is where a call is reported: at the method's name for a method
// call, so that item.Button().SetTitle(t) has two distinct places.
func callPos(call *ast.CallExpr) token.Pos {
	fun := ast.Unparen(call.Fun)
	switch f := fun.(type) {
	case *ast.IndexExpr:
		fun = f.X
	case *ast.IndexListExpr:
		fun = f.X
	}
	if sel, ok := fun.(*ast.SelectorExpr); ok {
		return sel.Sel.Pos()
	}
	return call.Pos()
}

// position is pos as a message quotes it, relative like the report's own.
func (l *lint) position(pos token.Pos) string {
	p := l.c.fset.Position(pos)
	return fmt.Sprintf("%s:%d:%d", l.c.relative(p.Filename), p.Line, p.Column)
}

// appKitName is how a darwinkit function is named in a message:
// appkit.StatusBar_SystemStatusBar, appkit.Button.SetTitle.
func appKitName(fn *types.Func) string {
	q := qualifiedName(fn, fn.Pkg().Path())
	return fn.Pkg().Name() + "." + q
}

// activateSelector is NSApplication's activate, macOS 14's way to bring an app forward.
const activateSelector = "activate"

// checkActivation reports, in one function's body, an app brought forward only with
// activateIgnoringOtherApps: (deprecated since macOS 14, ignored on macOS 26: an accessory
// app's windows and open panel come up behind the frontmost app), and activate sent without
// asking respondsToSelector: first (macOS 12 and 13 lack it: unrecognized selector).
func (l *lint) checkActivation(body *ast.BlockStmt) {
	var old []token.Pos
	var sends []token.Pos
	asks := false
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		fn := l.callee(call)
		if qualifiedName(fn, appkitPkg) == "Application.ActivateIgnoringOtherApps" {
			old = append(old, callPos(call))
		}
		isActivate := func(e ast.Expr) bool {
			c, ok := ast.Unparen(e).(*ast.CallExpr)
			if !ok || qualifiedName(l.callee(c), objcPkg) != "Sel" || len(c.Args) != 1 {
				return false
			}
			v, ok := l.constString(c.Args[0])
			return ok && v == activateSelector
		}
		if fn != nil && fn.Name() == "RespondsToSelector" && len(call.Args) == 1 && isActivate(call.Args[0]) {
			asks = true
		}
		if s, ok := selectorSenders[qualifiedName(fn, objcPkg)]; ok && s.selArg < len(call.Args) && isActivate(call.Args[s.selArg]) {
			sends = append(sends, callPos(call))
		}
		return true
	})
	if len(sends) == 0 {
		for _, pos := range old {
			l.report(pos, "the app is brought forward only with activateIgnoringOtherApps:, which macOS 14 deprecates and macOS 26 ignores, so its windows and open panels come up behind the frontmost app; send NSApplication's activate where it responds to it (macOS 14 and later) and keep this for earlier ones")
		}
	}
	if !asks {
		for _, pos := range sends {
			l.report(pos, "activate is sent without asking respondsToSelector: first: macOS 12 and 13 have no NSApplication activate, and the app would crash there (unrecognized selector)")
		}
	}
}
