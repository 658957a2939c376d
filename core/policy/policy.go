// Package policy is the OS-neutral statement of one session's wall: which folders a sandboxed
// command may write and read, its private temporary folder and home, the system paths it may
// read, the network mode and proxy port, and the per-run marker that tags its denials.
//
// A Policy says what the wall is; it does not enforce anything. The seatbelt and linux
// providers turn the same Policy into a Seatbelt profile or a set of namespaces and Landlock
// rules. Every path in a Policy is absolute, cleaned and symlink-resolved, because Seatbelt
// matches resolved paths and bind mounts follow them.
package policy

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openworker/openworker/core/internal/randbytes"
)

// Network is how a session reaches the network.
type Network string

const (
	// Allowlist: one loopback port, the session's proxy, which admits only allowed sites.
	Allowlist Network = "allowlist"
	// Open: any site, no proxy. Files are still walled.
	Open Network = "open"
	// None: no network at all, not even the proxy.
	None Network = "none"
)

// ParseNetwork returns the Network named s, or an error naming the choices.
func ParseNetwork(s string) (Network, error) {
	switch n := Network(s); n {
	case Allowlist, Open, None:
		return n, nil
	}
	return "", fmt.Errorf("network %q is not one of allowlist, open, none", s)
}

// Policy is one session's wall. Build it with New; the zero value allows nothing.
type Policy struct {
	// Writable folders: read and write.
	Writable []string
	// ReadOnly folders: read only. A read-only folder inside a writable one stays read-only.
	ReadOnly []string
	// PrivateTmp is the session's own temporary folder (owner-only), writable; it holds Home.
	PrivateTmp string
	// Home is the sandbox's home folder, inside PrivateTmp. HOME points here.
	Home string
	// UserHome is the real home folder. Nothing under it is reachable but the session
	// folders and enabled toolchains below it.
	UserHome string
	// System paths the sandbox may read (and execute from) for this OS.
	System []string
	// Toolchains are enabled home-folder toolchains, read only.
	Toolchains []string
	// RunnerFiles are the tool runner's own files (its binary), read only.
	RunnerFiles []string
	// Network mode and, in Allowlist mode, the proxy's port on loopback.
	Network   Network
	ProxyPort int
	// Forwards are host loopback addresses a provider whose sandbox has a network of its own
	// makes reachable inside at the same address and port, relayed by the core under the
	// allow list (Allowlist mode; the session fills them in from literal loopback entries).
	Forwards []netip.AddrPort
	// Marker is a random token unique to this run; every denial carries it.
	Marker string
	// Settings are the person's own settings files (git's) that programs inside read where
	// they look for them, under the sandbox home: each Src (resolved, under UserHome or
	// where it links to) is readable, never writable, at Dst in Home. On macOS Src is in
	// ReadOnly too: Seatbelt cannot place a file elsewhere, so Dst is a symlink to it.
	Settings []Setting
	// Hidden are the login files inside the toolchains (registry tokens, …): inside, each
	// is empty.
	Hidden []string
	// Trust places the session's CA bundle (Src, a file in PrivateTmp: the system's roots
	// and OpenWorker's own CA, for its stand-in logins) at each of the system's bundle
	// files (Dst) that programs read when no variable names one, and the same roots as a
	// Java key store at Java's stores; read-only, on walls that place files (Linux). Empty
	// when the session has no stand-in login.
	Trust []Setting
	// GitMetadataWritable lets commands write repository metadata that the person's own git
	// obeys outside the wall (.git/hooks, .git/config, a worktree's config). The zero value
	// keeps it read-only inside every writable folder, as it must be by default.
	GitMetadataWritable bool
	// Protected are files and folders inside the writable folders that stay read-only: the
	// repository metadata found when the wall was made (see GitMetadataWritable), each with
	// what it was then. The Linux wall binds each over itself; Seatbelt's profile names
	// repositories by pattern instead, which covers ones made later too.
	Protected []Protected
	// LocalServers lets commands bind and accept on loopback and connect to any loopback
	// port, where the sandbox shares the host's loopback (macOS): there, the session's own
	// servers and the host's other programs' ports cannot be told apart. Off by default.
	LocalServers bool
	// Caches are the tools' caches kept for the session's project (see core/caches): a
	// folder of the state folder (Src), read and written where the session's tools find it
	// (Dst): where it is (Dst is Src), or, where a wall places folders (Linux), in the
	// private tmp. Nothing else of the state folder is reachable.
	Caches []Placed
	// HostCaches are the person's own caches that hold packages a session may read (Go's
	// module download cache), placed as Caches are: read only, never written.
	HostCaches []Placed

	ids   map[string]FileID // see ID
	given map[string]string // see Folder
	// checks are what New checked folders against, for AddCaches to check against too.
	checks checks
}

// Setting is one settings file: the person's own (Src) and where it appears inside (Dst).
type Setting struct{ Src, Dst string }

// checks are what a folder is checked against: the places no session folder may be, and
// the folders whose links are never followed.
type checks struct {
	goos      string
	state     string // the state folder as given; "" when none was
	own       []guarded
	logins    []login
	untrusted []string
}

// Placed is a folder of the host's (Src, resolved) that a session reaches at Dst: Src
// itself, or a folder of the private tmp where a wall places it (see Policy.Caches).
type Placed struct{ Src, Dst string }

// GitSettings are git's settings under the home folder, as Options.Settings names them.
// The rest of ~/.config/git stays out: git-credential-store keeps its passwords there.
var GitSettings = []string{".gitconfig", ".config/git/config", ".config/git/ignore", ".config/git/attributes"}

// Options are the raw inputs of New: folders as the user gave them.
type Options struct {
	Writable   []string
	ReadOnly   []string
	PrivateTmp string
	// Home defaults to PrivateTmp/home.
	Home     string
	UserHome string
	// The app's own places, which no session folder may be, hold or lie inside: its state
	// folder, the settings file's folders (the one in use, and the machine's default) and
	// the audit trail's folder. RunnerFiles are its program, guarded against writing.
	StateDir   string
	ConfigDirs []string
	AuditDir   string
	// Untrusted are folders sandboxed commands may write (the writable folders of the other
	// running sessions). A symlink inside one, or inside a writable folder given here, is
	// never followed to a session folder: a command could have planted it.
	Untrusted   []string
	GOOS        string // whose system paths to use: "darwin" or "linux"
	Toolchains  []string
	RunnerFiles []string
	Network     Network
	ProxyPort   int
	// Settings are files under the home folder (relative to it) read inside at the same
	// place under the sandbox home; absent ones are left out. See Policy.Settings.
	Settings []string
	// GitMetadataWritable: see Policy.GitMetadataWritable.
	GitMetadataWritable bool
	// LocalServers: see Policy.LocalServers.
	LocalServers bool
	// Programs are more programs of OpenWorker's that run outside every sandbox (the
	// client's that asked for the session): guarded against writing as RunnerFiles are,
	// but not shown inside.
	Programs []string
	// TrustBundle is the session's CA bundle, and JavaTrustStore the same roots as a Java
	// key store, each a file in PrivateTmp (see Policy.Trust).
	TrustBundle, JavaTrustStore string
}

// Protected is one file or folder kept read-only inside a writable folder, or, anchored, a
// folder that stays writable but cannot be renamed or removed (see gitmeta.Anchor).
type Protected struct {
	Path   string
	Dir    bool
	ID     FileID
	Anchor bool
	// Explicit: a Seatbelt profile names it too, which its patterns do not cover (a hooks
	// folder core.hooksPath names in the work tree).
	Explicit bool
}

// FileID is what a file is on its disk: its device and inode numbers.
type FileID struct{ Dev, Ino uint64 }

// New validates and normalises opts into a Policy with a fresh marker.
//
// It resolves each folder once, component by component, and refuses, with an error a person
// can act on, a session folder or toolchain that is relative, does not exist, goes through a
// symlink a sandboxed command could have planted, is the home folder or contains it, is,
// holds or lies inside one of the app's own places or a folder of logins (~/.ssh, ~/.aws, …),
// or is one of the machine's own folders (/etc, /proc, /usr, …). It records what each folder
// was (FileID) so that a provider binds exactly what was checked, and lists the login files
// inside toolchains to hide (Hidden).
func New(opts Options) (*Policy, error) {
	if opts.UserHome == "" {
		return nil, errors.New("policy: the home folder is not known; set HOME")
	}
	home, err := Resolve(opts.UserHome)
	if err != nil {
		return nil, fmt.Errorf("policy: home folder: %w", err)
	}
	goos := opts.GOOS
	if goos == "" {
		goos = hostGOOS
	}
	own, ls := guards(opts), logins(home)
	var obs []obeyed
	if len(opts.Writable) > 0 {
		obs = obeyedFiles(home, opts.Toolchains)
	}
	p := &Policy{UserHome: home, Network: opts.Network, ProxyPort: opts.ProxyPort, GitMetadataWritable: opts.GitMetadataWritable, ids: map[string]FileID{}, given: map[string]string{}}
	p.LocalServers = opts.LocalServers
	untrusted := untrustedOf(opts)
	p.checks = checks{goos: goos, state: opts.StateDir, own: own, logins: ls, untrusted: untrusted}
	if p.Network == "" {
		p.Network = Allowlist
	}
	if _, err := ParseNetwork(string(p.Network)); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	check := func(kind, dir string) (string, error) {
		if !filepath.IsAbs(dir) {
			return "", fmt.Errorf("%s folder %q is a relative path; give an absolute path", kind, dir)
		}
		r, err := resolveFrom(dir, untrusted)
		var unsafe *UnsafeLinkError
		switch {
		case errors.Is(err, os.ErrNotExist):
			return "", fmt.Errorf("%s folder %s does not exist", kind, dir)
		case errors.As(err, &unsafe):
			return "", fmt.Errorf("%s folder %w", kind, err)
		case err != nil:
			return "", fmt.Errorf("%s folder %s: %w", kind, dir, err)
		}
		isDir, err := p.stat(r)
		if err != nil {
			return "", fmt.Errorf("%s folder %s: %w", kind, dir, err)
		}
		if !isDir {
			return "", fmt.Errorf("%s folder %s is not a folder", kind, dir)
		}
		if err := refuse(kind, shown(dir, dir, r), r, home, goos, own, ls); err != nil {
			return "", err
		}
		if kind == "writable" {
			if err := refuseObeyed(shown(dir, dir, r), r, obs); err != nil {
				return "", err
			}
		}
		p.given[filepath.Clean(dir)] = r
		return r, nil
	}
	for _, d := range opts.Writable {
		r, err := check("writable", d)
		if err != nil {
			return nil, err
		}
		p.Writable = append(p.Writable, r)
	}
	for _, d := range opts.ReadOnly {
		r, err := check("read-only", d)
		if err != nil {
			return nil, err
		}
		p.ReadOnly = append(p.ReadOnly, r)
	}
	// A folder given both ways is read-only: the stricter reading wins.
	p.Writable = slices.DeleteFunc(p.Writable, func(w string) bool { return slices.Contains(p.ReadOnly, w) })
	p.Writable = Minimal(p.Writable)
	p.ReadOnly = Minimal(p.ReadOnly)
	// A read-only folder inside another read-only folder adds nothing, but one inside a
	// writable folder must stay: it narrows the writable one.

	if opts.PrivateTmp != "" {
		if p.PrivateTmp, err = Resolve(opts.PrivateTmp); err != nil {
			return nil, fmt.Errorf("policy: private tmp: %w", err)
		}
		if _, err := p.stat(p.PrivateTmp); err != nil {
			return nil, fmt.Errorf("policy: private tmp: %w", err)
		}
		p.Home = filepath.Join(p.PrivateTmp, "home")
		if opts.Home != "" {
			p.Home = resolveLoose(opts.Home)
		}
		if !Within(p.PrivateTmp, p.Home) {
			return nil, fmt.Errorf("policy: sandbox home %s is not inside the private tmp folder %s", p.Home, p.PrivateTmp)
		}
	}
	p.System = SystemPaths(goos)
	// A toolchain is checked as a session folder is: a name the product offers may still be
	// a symlink to a folder of logins.
	type toolchain struct{ rel, dir string }
	var tcs []toolchain
	for _, t := range opts.Toolchains {
		abs := t
		if !filepath.IsAbs(t) {
			abs = filepath.Join(home, t)
		}
		r, err := resolveFrom(abs, untrusted)
		var unsafe *UnsafeLinkError
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue // a toolchain that is switched on but absent is simply not there
		case errors.As(err, &unsafe):
			return nil, fmt.Errorf("toolchain folder %w", err)
		case err != nil:
			return nil, fmt.Errorf("toolchain folder %s: %w", t, err)
		}
		if isDir, err := p.stat(r); err != nil {
			return nil, fmt.Errorf("toolchain folder %s: %w", t, err)
		} else if !isDir {
			return nil, fmt.Errorf("toolchain folder %s is not a folder", t)
		}
		name := t
		if !filepath.IsAbs(t) {
			name = "~/" + t
		}
		if err := refuse("toolchain", shown(name, abs, r), r, home, goos, own, ls); err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(home, filepath.Clean(abs))
		if err != nil {
			rel = ""
		}
		p.Toolchains = append(p.Toolchains, r)
		tcs = append(tcs, toolchain{rel, r})
	}
	p.Toolchains = Minimal(p.Toolchains)
	readable := slices.Concat(p.Writable, p.ReadOnly, p.Toolchains)
	for _, tc := range tcs {
		p.Hidden = append(p.Hidden, hiddenIn(tc.rel, tc.dir, readable)...)
	}
	p.Hidden = Minimal(p.Hidden)
	for _, f := range opts.RunnerFiles {
		r, err := Resolve(f)
		if err != nil {
			return nil, fmt.Errorf("policy: runner file: %w", err)
		}
		if _, err := p.stat(r); err != nil {
			return nil, fmt.Errorf("policy: runner file: %w", err)
		}
		p.RunnerFiles = append(p.RunnerFiles, r)
	}
	p.RunnerFiles = Minimal(p.RunnerFiles)
	for _, rel := range opts.Settings {
		if filepath.IsAbs(rel) || !filepath.IsLocal(rel) || p.Home == "" {
			continue
		}
		// Resolved as the folders are, and left out (never followed) where it leads
		// through a link a sandboxed command could have planted, into a folder of logins
		// or one of the app's own places: git goes without it.
		src, err := resolveFrom(filepath.Join(home, rel), untrusted)
		if err != nil || refuse("settings", "~/"+rel, src, home, goos, own, ls) != nil {
			continue
		}
		if fi, err := os.Lstat(src); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if _, err := p.stat(src); err != nil {
			continue
		}
		p.Settings = append(p.Settings, Setting{Src: src, Dst: filepath.Join(p.Home, rel)})
		if goos == "darwin" {
			p.ReadOnly = append(p.ReadOnly, src)
		}
	}
	if opts.TrustBundle != "" {
		if err := p.trust(opts.TrustBundle, SystemCABundles(goos), goos); err != nil {
			return nil, err
		}
	}
	if opts.JavaTrustStore != "" {
		if err := p.trust(opts.JavaTrustStore, SystemJavaTrustStores(goos), goos); err != nil {
			return nil, err
		}
	}
	if p.Marker, err = NewMarker(); err != nil {
		return nil, err
	}
	return p, nil
}

// trust places bundle, which must be a regular file in the private tmp, at each of the
// files of system (the system's bundles, or Java's stores) that is one here (a link to one
// is covered where it leads), and lies in a system path the sandbox reads.
func (p *Policy) trust(bundle string, system []string, goos string) error {
	src, err := Resolve(bundle)
	if err != nil {
		return fmt.Errorf("policy: the session's CA bundle: %w", err)
	}
	if p.PrivateTmp == "" || !Within(p.PrivateTmp, src) || src == p.PrivateTmp {
		return fmt.Errorf("policy: the session's CA bundle %s is not in the private tmp", bundle)
	}
	if fi, err := os.Lstat(src); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("policy: the session's CA bundle %s is not a regular file", bundle)
	}
	if goos != "linux" {
		return nil // the variables alone name it (see the session's environment)
	}
	for _, dst := range system {
		if fi, err := os.Lstat(dst); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if !slices.ContainsFunc(p.System, func(d string) bool { return Within(d, dst) }) {
			continue
		}
		p.Trust = append(p.Trust, Setting{Src: src, Dst: dst})
	}
	return nil
}

// untrustedOf are the folders a session may write, resolved: a link in one is never followed.
func untrustedOf(opts Options) []string {
	var out []string
	for _, u := range slices.Concat(opts.Untrusted, opts.Writable) {
		if r, err := Resolve(u); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// stat records what path (resolved) is, and says whether it is a folder. It follows no
// link: one there now was put there since the path was resolved.
func (p *Policy) stat(path string) (bool, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return false, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return false, errors.New("it became a symlink while it was checked; try again")
	}
	if id, ok := identify(fi); ok {
		p.ids[path] = id
	}
	return fi.IsDir(), nil
}

// AddCaches adds to a policy that New made the tools' caches kept for its project
// (Policy.Caches) and the person's caches it reads (Policy.HostCaches): which project's
// caches a session gets is known only once its folders are resolved. Each is reached at its
// Dst, which must be where it is or lie in the private tmp. A kept cache must be a folder inside the state
// folder, or the session is refused. A person's cache that a session folder could not be
// (the home folder, a folder of logins, one of the app's places), or that lies where the
// session writes, is left out: reading it is a shortcut.
func (p *Policy) AddCaches(kept, host []Placed) error {
	untrusted, state := p.checks.untrusted, ""
	if p.checks.state != "" {
		state = resolveLoose(p.checks.state)
	}
	// at is where a cache whose source resolved to r is reached: r itself, or its place in
	// the private tmp.
	at := func(c Placed, r string) (string, bool) {
		if c.Dst == c.Src || c.Dst == r {
			return r, true
		}
		return c.Dst, p.PrivateTmp != "" && filepath.IsAbs(c.Dst) && filepath.Clean(c.Dst) == c.Dst && c.Dst != p.PrivateTmp && Within(p.PrivateTmp, c.Dst)
	}
	for _, c := range kept {
		r, err := resolveFrom(c.Src, untrusted)
		dst, placed := at(c, r)
		switch {
		case err != nil:
		case !filepath.IsAbs(c.Src) || state == "" || r == state || !Within(state, r):
			err = fmt.Errorf("it is not a folder inside the state folder %s", state)
		case !placed:
			err = fmt.Errorf("its place inside, %s, is neither where it is nor in the private tmp", c.Dst)
		}
		var isDir bool
		if err == nil {
			isDir, err = p.stat(r)
		}
		if err == nil && !isDir {
			err = errors.New("it is not a folder")
		}
		if err != nil {
			return fmt.Errorf("policy: the project's cache folder %s: %w; start the session with --fresh-caches, or clear them (openworker caches clear)", c.Src, err)
		}
		p.Caches = append(p.Caches, Placed{Src: r, Dst: dst})
	}
	for _, c := range host {
		r, err := resolveFrom(c.Src, untrusted)
		dst, placed := at(c, r)
		if err != nil || !filepath.IsAbs(c.Src) || !placed || refuse("read-only", c.Src, r, p.UserHome, p.checks.goos, p.checks.own, p.checks.logins) != nil {
			continue
		}
		if slices.ContainsFunc(p.WritableAll(), func(w string) bool { return Within(w, r) || Within(r, w) }) {
			continue // the session's own to write: not the person's to keep unwritten
		}
		if isDir, err := p.stat(r); err == nil && isDir {
			p.HostCaches = append(p.HostCaches, Placed{Src: r, Dst: dst})
		}
	}
	return nil
}

// Sources are the folders of the host that places reach.
func Sources(places []Placed) []string {
	out := make([]string, len(places))
	for i, c := range places {
		out[i] = c.Src
	}
	return out
}

// ID returns what path (a session folder, toolchain, runner file or the private tmp, as the
// policy holds it) was when New checked it. A policy built by hand has none.
func (p *Policy) ID(path string) (FileID, bool) {
	id, ok := p.ids[path]
	return id, ok
}

// Folder returns the resolved session folder that given (as passed to New) became.
func (p *Policy) Folder(given string) (string, bool) {
	r, ok := p.given[filepath.Clean(given)]
	return r, ok
}

// NewMarker returns a fresh random per-run marker.
func NewMarker() (string, error) {
	var b [12]byte
	if err := randbytes.Read(b[:]); err != nil {
		return "", fmt.Errorf("policy: marker: %w", err)
	}
	return "openworker-" + hex.EncodeToString(b[:]), nil
}

// Resolve returns path made absolute, cleaned, with every symlink resolved, and, where names
// are found in any letter case (a Mac), spelled as on disk.
func Resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	r, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	return onDiskCase(filepath.Clean(r)), nil
}

// resolveLoose resolves the longest existing prefix of path and appends the rest, so that a
// folder that does not exist yet still compares correctly with resolved paths.
func resolveLoose(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	r, err := walk(abs, nil, true, nil)
	if err != nil {
		return filepath.Clean(abs)
	}
	return r
}

// Within reports whether path is dir or lies below it. Both must be clean and absolute.
func Within(dir, path string) bool {
	if dir == path {
		return true
	}
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	return strings.HasPrefix(path, dir+"/")
}

// Minimal sorts and de-duplicates dirs and drops every folder that lies inside another.
func Minimal(dirs []string) []string {
	s := slices.Clone(dirs)
	slices.Sort(s)
	s = slices.Compact(s)
	out := s[:0]
	for _, d := range s {
		if len(out) > 0 && Within(out[len(out)-1], d) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// Readable returns every folder and file the sandbox may read, writable ones included.
func (p *Policy) Readable() []string {
	var all []string
	all = append(all, p.Writable...)
	all = append(all, p.ReadOnly...)
	if p.PrivateTmp != "" {
		all = append(all, p.PrivateTmp)
	}
	all = append(all, p.System...)
	all = append(all, p.Toolchains...)
	all = append(all, p.RunnerFiles...)
	all = append(all, Sources(p.Caches)...)
	all = append(all, Sources(p.HostCaches)...)
	return all
}

// WritableAll returns the folders the sandbox may write: the session's writable folders, the
// private tmp and the project's kept caches.
func (p *Policy) WritableAll() []string {
	all := slices.Clone(p.Writable)
	if p.PrivateTmp != "" {
		all = append(all, p.PrivateTmp)
	}
	return append(all, Sources(p.Caches)...)
}
