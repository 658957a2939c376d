package linux

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
)

// wallSetup is everything the wall builder needs, sent over the setup socket (see encode). It is
// computed on the host from the policy so that the builder only carries it out.
type wallSetup struct {
	Mounts []mountStep
	// UserHome is the person's home folder. Where the way to a session folder makes it a
	// folder of the root tmpfs, it is made unlistable there (see hideHome).
	UserHome  string
	Network   policy.Network
	ProxyPort int
	// Forwards are the ports of the host's loopback forwarded into the sandbox's network:
	// the builder listens on each, as on the proxy's, and hands the listeners over.
	Forwards []int
	Runner   runnerSetup
	// Stderr says the setup message carries, after the runner's socket, the descriptor the
	// builder's and the runner's error output go to.
	Stderr bool
	// UserNS says the builder runs in a user namespace of its own (see ownUserNS).
	UserNS bool
	// NetNS says the setup message carries, last, the network namespace the builder joins
	// (see launch); without it the builder was started in a new one.
	NetNS bool
	// TmpMount says the setup message carries, after the network namespace, the private
	// tmp's own mount, which the steps marked Tmp bind instead of their Src (see tmp_linux.go).
	TmpMount bool
	// TimerSlack, when not 0, is the timer slack (ns) the builder's main thread takes back
	// before it starts anything: its runtime's monitor was started with a coarse one (see
	// startCoarse), and the runner and every command are forked from that thread.
	TimerSlack uint64
	// Relay says the builder sets up the sandbox's network for the relay and the DNS stub
	// (netns_linux.go) and hands their sockets over.
	Relay bool
	// NetReady says the network namespace the setup carries (NetNS) was set up by the core
	// as the builder would: lo is up and, with Relay, the relay's rules, listener and stub
	// are made and held by the core, or RelayErr says why they could not be.
	NetReady bool
	RelayErr string
	// Sockets says the builder keeps the setup socket once the runner runs, and makes a TCP
	// socket in the sandbox's network whenever the core asks (publish_linux.go).
	Sockets bool
	// netnsFD is that namespace, once received; tmpFD that mount.
	netnsFD, tmpFD int
}

// mountStep binds one host path (Src) at Dst inside the new root.
type mountStep struct {
	Src      string
	Dst      string
	Writable bool
	// System entries may be absent on this machine (then they are skipped), and a system
	// entry that is a symlink (/bin -> usr/bin) is recreated as the same symlink.
	System bool
	// Empty binds an empty read-only file or folder over Dst instead (a login file inside a
	// toolchain); Src is not used.
	Empty bool
	// Dev and Ino are what Src was when the policy checked it (both 0: not known); the
	// builder binds it only if it is still that.
	Dev, Ino uint64
	// Tmp marks the private tmp's binds.
	Tmp bool
}

type runnerSetup struct {
	Path string
	Args []string
	Env  []string
	Dir  string
	// Conn says the setup message carries the runner's end of the core's socketpair; the
	// runner gets it as fd 3.
	Conn bool
	// Serve says the builder serves the runner on that socket itself, from the thread the
	// wall was built on, instead of starting Path.
	Serve bool
}

// wallReport is one message from the builder to the provider.
type wallReport struct {
	// Step and Error: the wall could not be built; Step says which part failed.
	Step  string
	Error string
	// Listener: this message carries the proxy's listening socket (SCM_RIGHTS).
	Listener bool
	// Forward: this message carries the listener of that forwarded port, or, with Error,
	// says why it could not be made (the session runs without it).
	Forward int
	// Relay: this message carries the relay's listener, and Stub the DNS stub's socket;
	// with Error, the relay could not be set up (the session runs without it).
	Relay, Stub bool
	// Started: the runner is running behind the finished wall.
	Started bool
	Active  []string
}

// planWall turns a policy and a runner spec into the builder's instructions. It is pure, so
// the order of the mounts (which decides which rule wins where folders nest) is tested
// without a kernel.
func planWall(p *policy.Policy, spec sandbox.RunnerSpec) (*wallSetup, error) {
	if p == nil {
		return nil, errors.New("linux sandbox: no policy was given; build one with policy.New")
	}
	switch p.Network {
	case policy.Allowlist:
		if p.ProxyPort < 1 || p.ProxyPort > 65535 {
			return nil, fmt.Errorf("linux sandbox: allowlist mode needs the proxy's port, got %d", p.ProxyPort)
		}
	case policy.Open, policy.None:
	default:
		return nil, fmt.Errorf("linux sandbox: network mode %q is not one of allowlist, open, none", p.Network)
	}
	var forwards []int
	for _, f := range p.Forwards {
		port := int(f.Port())
		switch {
		case p.Network != policy.Allowlist:
			return nil, fmt.Errorf("linux sandbox: the host's %s is forwarded only in allowlist mode, not %s", f, p.Network)
		case !f.Addr().Unmap().IsLoopback() || port == 0:
			return nil, fmt.Errorf("linux sandbox: only the host's loopback ports are forwarded, not %s", f)
		case port == p.ProxyPort:
			return nil, fmt.Errorf("linux sandbox: the host's %s cannot be forwarded at the proxy's own port inside; pick another proxy port", f)
		}
		if !slices.Contains(forwards, port) {
			forwards = append(forwards, port)
		}
	}
	slices.Sort(forwards)
	if !filepath.IsAbs(spec.Path) {
		return nil, fmt.Errorf("linux sandbox: runner path %q is not absolute; the sandbox has no PATH search of its own", spec.Path)
	}
	abs := func(kind string, paths ...string) error {
		for _, d := range paths {
			if !filepath.IsAbs(d) || filepath.Clean(d) != d {
				return fmt.Errorf("linux sandbox: %s path %q is not absolute and clean; build the policy with policy.New", kind, d)
			}
		}
		return nil
	}
	for kind, paths := range map[string][]string{
		"system": p.System, "toolchain": p.Toolchains, "runner file": p.RunnerFiles,
		"writable": p.Writable, "read-only": p.ReadOnly, "hidden": p.Hidden,
		"cache": policy.Sources(p.Caches), "host cache": policy.Sources(p.HostCaches),
	} {
		if err := abs(kind, paths...); err != nil {
			return nil, err
		}
	}
	if p.PrivateTmp != "" {
		if err := abs("private tmp", p.PrivateTmp); err != nil {
			return nil, err
		}
	}

	// The read-only base: system paths, toolchains and the runner's files. One inside
	// another adds nothing.
	// A runner is served by the builder only over the core's socket.
	serve := spec.Serve && spec.Conn != nil
	var steps []mountStep
	base := slices.Concat(p.System, p.Toolchains)
	if !serve {
		// A runner served by the builder is already running: its binary need not be
		// visible inside.
		base = append(base, p.RunnerFiles...)
	}
	// Each bind carries what the policy saw at its source, so that the builder binds that
	// and nothing a command put on the path since.
	checked := func(m mountStep) mountStep {
		if id, ok := p.ID(m.Src); ok {
			m.Dev, m.Ino = id.Dev, id.Ino
		}
		return m
	}
	for _, d := range policy.Minimal(base) {
		steps = append(steps, checked(mountStep{Src: d, Dst: d, System: slices.Contains(p.System, d)}))
	}
	// The session's folders, read-only ones last so that at equal depth nothing undoes them.
	for _, d := range p.Writable {
		steps = append(steps, checked(mountStep{Src: d, Dst: d, Writable: true}))
	}
	if p.PrivateTmp != "" {
		steps = append(steps,
			checked(mountStep{Src: p.PrivateTmp, Dst: "/tmp", Writable: true, Tmp: true}),
			checked(mountStep{Src: p.PrivateTmp, Dst: p.PrivateTmp, Writable: true, Tmp: true}))
	}
	for _, d := range p.ReadOnly {
		steps = append(steps, checked(mountStep{Src: d, Dst: d}))
	}
	// Repository metadata found in the writable folders, each bound over itself read-only,
	// deeper than its folder, and the folders that hold the repositories, each bound over
	// itself writable.
	for _, pr := range p.Protected {
		if err := abs("protected", pr.Path); err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(p.Writable, func(w string) bool { return w != pr.Path && policy.Within(w, pr.Path) }) {
			return nil, fmt.Errorf("linux sandbox: %s is kept read-only but lies in no writable folder", pr.Path)
		}
		// An anchor is bound writable: a mount point cannot be renamed or removed, so the
		// repository it holds stays where the person's git finds it.
		steps = append(steps, mountStep{Src: pr.Path, Dst: pr.Path, Dev: pr.ID.Dev, Ino: pr.ID.Ino, Writable: pr.Anchor})
	}
	// The project's kept caches (the one folder of the state folder inside) and the
	// person's caches that hold packages (read-only), each where the session's tools find
	// it: at its own path, or in the private tmp.
	for _, c := range slices.Concat(p.Caches, p.HostCaches) {
		if err := abs("cache", c.Dst); err != nil {
			return nil, err
		}
		if c.Dst != c.Src && (p.PrivateTmp == "" || c.Dst == p.PrivateTmp || !policy.Within(p.PrivateTmp, c.Dst)) {
			return nil, fmt.Errorf("linux sandbox: the cache folder %s is placed neither at its own path nor inside the private tmp", c.Dst)
		}
	}
	for _, c := range p.Caches {
		steps = append(steps, checked(mountStep{Src: c.Src, Dst: c.Dst, Writable: true}))
	}
	for _, c := range p.HostCaches {
		steps = append(steps, checked(mountStep{Src: c.Src, Dst: c.Dst}))
	}
	// The login files inside toolchains are covered last, being deeper than the folder that
	// shows them.
	for _, h := range p.Hidden {
		steps = append(steps, mountStep{Dst: h, Empty: true})
	}
	// The person's settings files, read-only where programs look for them in the sandbox
	// home (which lies in the private tmp); the home folder they come from stays out.
	for _, st := range p.Settings {
		if err := abs("settings file", st.Src, st.Dst); err != nil {
			return nil, err
		}
		if p.Home == "" || !policy.Within(p.Home, st.Dst) || st.Dst == p.Home {
			return nil, fmt.Errorf("linux sandbox: settings file %s is not placed inside the sandbox home", st.Dst)
		}
		steps = append(steps, checked(mountStep{Src: st.Src, Dst: st.Dst}))
	}
	// The session's CA bundle over the system's bundle files, read-only: programs that read
	// the system's trust their stand-in logins' hosts with it.
	for _, tr := range p.Trust {
		if err := abs("CA bundle", tr.Src, tr.Dst); err != nil {
			return nil, err
		}
		if p.PrivateTmp == "" || !policy.Within(p.PrivateTmp, tr.Src) {
			return nil, fmt.Errorf("linux sandbox: the CA bundle %s is not in the private tmp", tr.Src)
		}
		if !slices.ContainsFunc(p.System, func(d string) bool { return policy.Within(d, tr.Dst) }) {
			return nil, fmt.Errorf("linux sandbox: %s is not in a system path the sandbox reads, so the CA bundle is not placed there", tr.Dst)
		}
		steps = append(steps, checked(mountStep{Src: tr.Src, Dst: tr.Dst}))
	}
	// Parents before children: a deeper mount lands on top of a shallower one, so the most
	// specific folder decides (a read-only folder inside a writable one stays read-only, a
	// session folder under /tmp shows through the private /tmp). Stable, so equal depths keep
	// the order above.
	slices.SortStableFunc(steps, func(a, b mountStep) int { return depth(a.Dst) - depth(b.Dst) })
	// A second mount at the same place would hide the first; the policy never asks for that,
	// except the private tmp when it is /tmp itself.
	steps = slices.CompactFunc(steps, func(a, b mountStep) bool { return a.Dst == b.Dst && a.Src == b.Src })

	dir := spec.Dir
	if dir == "" {
		dir = "/"
		if p.Home != "" {
			dir = p.Home
		}
	}
	var userHome string
	if p.UserHome != "" {
		if err := abs("home", p.UserHome); err != nil {
			return nil, err
		}
		userHome = p.UserHome
	}
	return &wallSetup{
		Mounts:    steps,
		UserHome:  userHome,
		Network:   p.Network,
		ProxyPort: p.ProxyPort,
		Forwards:  forwards,
		Runner: runnerSetup{
			Path:  spec.Path,
			Args:  spec.Args,
			Env:   spec.Env,
			Dir:   dir,
			Conn:  spec.Conn != nil,
			Serve: serve,
		},
	}, nil
}

func depth(path string) int {
	if path == "/" {
		return 0
	}
	return strings.Count(path, "/")
}
