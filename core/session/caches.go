package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openworker/openworker/core/caches"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
)

// A session's tools keep their caches (Go's build and module caches, npm's, pip's, uv's,
// cargo's home, XDG_CACHE_HOME) in the private tmp's cache folder (CacheDir), where the
// project's folder of the caches store, in the state folder, is placed: the next session of
// the same writable folders starts warm. And Go reads the person's module download cache,
// read-only, before the network. Why that is safe, and why a project's caches are never
// another's or the person's: see core/caches.

// CacheSpec is what a session does with the tools' caches. The zero value keeps none and
// reads none of the person's: the caches are in the private tmp and go with it.
type CacheSpec struct {
	// Keep bounds the caches kept of every project together, in bytes (the settings'
	// sandbox_max_caches); 0 keeps none.
	Keep int64
	// Host reads the person's caches that hold packages (Go's module download cache).
	Host bool
	// Fresh starts the session cold whatever the rest says: its caches are in its private
	// tmp, and neither the project's kept caches nor the person's are used.
	Fresh bool
}

// projectRoots are the folders whose session is the project: the writable ones, not the
// private tmp, which is new each time.
func (s *Session) projectRoots(pol *policy.Policy) []string {
	return slices.DeleteFunc(slices.Clone(pol.Writable), func(d string) bool { return s.tmp != "" && (d == s.tmp || strings.HasPrefix(d, s.tmp+"/")) })
}

// HostGoDir is the folder of the private tmp where the session's go reads the person's
// module downloads (GOPROXY=file://…).
const HostGoDir = "go-downloads"

// addCaches gives the wall the project's kept caches and the person's it reads. The project
// is the session's first wall's: a folder added later only adds to what its commands could
// already write, so the caches stay those of the folders it started with.
//
// The kept caches are reached where they are, on every wall: the paths Go compiles its
// modules from are then the same in every session of the project, and the build outputs of
// one are the next's (in a folder new to each session, every module would be compiled
// again: go build ./... of this project took 13 s in each later session that way, 1.5 s
// now). The Linux wall binds them at their own path, unless that lies under /tmp, which
// the private tmp stands in for inside; then they are bound in the private tmp (CacheDir),
// where they are as new to each session as its tmp. The person's module downloads are bound in the private tmp (HostGoDir) on Linux,
// where no path of the home folder need be made; Seatbelt, which cannot place a folder
// elsewhere, reads them where they are.
func (s *Session) addCaches(pol *policy.Policy) error {
	c := s.spec.Caches
	if c.Fresh {
		return nil
	}
	if !s.keptTried && c.Keep > 0 {
		s.keptTried = true
		if roots := s.projectRoots(pol); len(roots) > 0 {
			k, err := caches.NewStore(s.m.opts.StateDir).Open(roots)
			switch {
			case errors.Is(err, caches.ErrInUse):
				s.hints.sayOnce("openworker: the project's tool caches are being cleared; this session's are its own and go with it\n")
			case err != nil:
				s.hints.sayOnce(fmt.Sprintf("openworker: the project's tool caches cannot be used (%v); this session's are its own and go with it\n", err))
			default:
				s.kept = k
			}
		}
	}
	var kept, host []policy.Placed
	if s.kept != nil {
		dst := s.kept.Dir
		if s.Enforcement == sandbox.Linux && policy.Within("/tmp", resolvedLoose(s.kept.Dir)) {
			dst = filepath.Join(s.tmp, CacheDir)
		}
		kept = []policy.Placed{{Src: s.kept.Dir, Dst: dst}}
	}
	if c.Host {
		if dl := caches.GoDownloads(s.m.opts.HostEnv, s.m.opts.UserHome, s.m.opts.GOOS); dl != "" {
			dst := dl
			if s.Enforcement == sandbox.Linux {
				dst = filepath.Join(s.tmp, HostGoDir)
			}
			host = append(host, policy.Placed{Src: dl, Dst: dst})
		}
	}
	if err := pol.AddCaches(kept, host); err != nil {
		return err
	}
	// The mount points of the binds made in the private tmp; a wall made again finds them.
	for _, p := range slices.Concat(pol.Caches, pol.HostCaches) {
		if p.Dst == p.Src {
			continue
		}
		if err := os.Mkdir(p.Dst, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("placing the tool caches %s in the private tmp: %w", p.Src, err)
		}
	}
	return nil
}

// resolvedLoose is path with its links resolved, or as it is where it cannot be.
func resolvedLoose(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

// cachesDir is where the session's tools keep their caches: the project's kept ones where
// the wall reaches them, or "" for the private tmp's own (CacheDir).
func cachesDir(pol *policy.Policy) string {
	if len(pol.Caches) == 0 {
		return ""
	}
	return pol.Caches[0].Dst
}

// goProxy is the GOPROXY that reads the person's module downloads first, then what the
// session's go uses without it (its own go.env); "" when there are none to read.
func (s *Session) goProxy(pol *policy.Policy, insidePath []string) string {
	for _, p := range pol.HostCaches {
		if filepath.Base(p.Dst) != HostGoDir {
			continue
		}
		if _, goroot := caches.FindGo(insidePath, pol.WritableAll()); goroot != "" {
			return caches.GoProxy(p.Dst, caches.GoRootProxy(goroot))
		}
	}
	return ""
}

// releaseCaches lets the project's caches go once the sandbox is gone, recording what they
// take and trimming the store to the bound. With none kept (sandbox_max_caches = "0"), what
// earlier sessions kept goes.
func (s *Session) releaseCaches() {
	switch {
	case s.kept != nil:
		s.kept.Close(s.spec.Caches.Keep)
		s.kept = nil
	case s.spec.Caches.Keep == 0 && !s.spec.Caches.Fresh && s.m.opts.StateDir != "":
		caches.NewStore(s.m.opts.StateDir).Trim(0)
	}
}
