package seatbelt

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// osVersion is this Mac's version (kern.osproductversion), which the link probe's answer is
// kept for.
func osVersion() string {
	v, err := syscall.Sysctl("kern.osproductversion")
	if err != nil {
		return ""
	}
	return v
}

// ProbeLinks proves on this Mac which ends of a hard link and of a clone Seatbelt checks: it
// runs ln and cp -c (clonefile) under ProbeProfile, into, out of and within an allowed folder,
// decides (DecideLinkChecks), and records the answer in the state folder, where sessions'
// profiles read it. Everything it makes is removed.
func (pr *Provider) ProbeLinks(ctx context.Context) (LinkAnswer, error) {
	unknown := LinkAnswer{Checks: LinkChecksUnknown}
	root, err := os.MkdirTemp(TmpRoot, "openworker-links-")
	if err != nil {
		return unknown, err
	}
	defer os.RemoveAll(root)
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return unknown, err
	}
	dirs := map[bool]string{false: filepath.Join(root, "allowed"), true: filepath.Join(root, "denied")}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o700); err != nil {
			return unknown, err
		}
		if err := os.WriteFile(filepath.Join(d, "file"), []byte("probe\n"), 0o600); err != nil {
			return unknown, err
		}
	}
	var results []LinkResult
	for i, lp := range LinkProbes {
		src := filepath.Join(dirs[lp.FromDeny], "file")
		dst := filepath.Join(dirs[lp.ToDeny], "new-"+strconv.Itoa(i))
		tool := []string{"/bin/ln", src, dst}
		if lp.Op == "file-clone" {
			tool = []string{"/bin/cp", "-c", src, dst}
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		args := []string{"-p", ProbeProfile, "-D", "ALLOWED=" + dirs[false], "-D", "DENIED=" + dirs[true]}
		out, err := exec.CommandContext(cctx, pr.sandboxExec(), append(args, tool...)...).CombinedOutput()
		cancel()
		_, statErr := os.Lstat(dst)
		r := LinkResult{Probe: lp, Done: err == nil && statErr == nil}
		if err != nil {
			r.Err = strings.TrimSpace(string(out))
			if r.Err == "" {
				r.Err = err.Error()
			}
		}
		os.Remove(dst)
		results = append(results, r)
	}
	answer, why := DecideLinkChecks(results)
	la := LinkAnswer{Checks: answer, Why: why, Results: results}
	if pr.StateDir == "" {
		return la, errors.New("seatbelt: no state folder to record the link probe's answer in")
	}
	return la, SaveLinkChecks(pr.StateDir, osVersion(), answer, why)
}
