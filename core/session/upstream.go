package session

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/openworker/openworker/core/internal/regularfile"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/termtext"
)

// A command's git cannot write a repository's .git/config, which is read-only inside; but
// the upstream git push -u, branch -u, checkout -b X R/Y and switch set is harmless, and
// wanted. When git says it set one up (it says so even when the write failed), OpenWorker
// writes those two keys itself, outside, into the repository's real .git/config: only
// branch.NAME.remote and branch.NAME.merge, only for a remote the file already names and
// names git accepts, and only in a repository of the session's writable folders. Nothing a
// command writes reaches the file otherwise, so no key of its choosing, and no value but a
// remote's name and a branch's ref, can.

// refName is what the branch and remote names OpenWorker writes must look like: the common
// ground of git's ref-name rules, without anything a shell or a config file would read.
var refName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$`)

// carryUpstreams sets, for each upstream git said it set up in its output (git says it on
// standard output, and that it could not write on standard error: both are given), the two keys in
// the real .git/config of the repository that holds dir. It returns a line for each.
//
// git push -q -u says nothing of the upstream: then the command's words name it (see
// quietPushes), the branch pushed being the repository's current one when they do not.
func (s *Session) carryUpstreams(dir string, output []byte, command string) []string {
	if !gitRefused(output) {
		return nil
	}
	type upstream struct{ branch, upstream string }
	var set []upstream
	for _, m := range upstreamSet().FindAllSubmatch(output, -1) {
		set = append(set, upstream{string(m[1]), string(m[2])})
	}
	s.gitMu.Lock()
	roots := s.gitRoots
	s.gitMu.Unlock()
	if len(set) == 0 {
		for _, p := range quietPushes(command) {
			at := dir
			if p.dir != "" {
				at = filepath.Join(dir, p.dir)
				if filepath.IsAbs(p.dir) {
					at = p.dir
				}
			}
			src, dst := p.src, p.dst
			if src == "" || src == "HEAD" {
				src = currentBranch(roots, at)
			}
			if dst == "" || dst == "HEAD" {
				dst = src
			}
			if src == "" {
				continue
			}
			set = append(set, upstream{src, p.remote + "/" + strings.TrimPrefix(dst, "refs/heads/")})
			dir = at
		}
	}
	var lines []string
	for _, m := range set {
		branch, upstream := m.branch, m.upstream
		line, err := carryUpstream(roots, dir, branch, upstream)
		if err != nil {
			lines = append(lines, fmt.Sprintf("openworker: %s's upstream %s is not set: %v\n", termtext.Escape(branch), termtext.Escape(upstream), err))
			continue
		}
		lines = append(lines, line)
	}
	return lines
}

func gitRefused(stderr []byte) bool { return gitMetadataRefused().Match(stderr) }

// submoduleNotRegistered is what git submodule init (and update --init) says when it could not
// write a submodule's url into .git/config.
func submoduleNotRegistered() *regexp.Regexp {
	return regexp.MustCompile(`Failed to register url for submodule path '([^'\n]{1,200})'`)
}

// carrySubmodules registers, for each submodule git could not register (git submodule init,
// update --init, clone --recurse-submodules in a repository that was there), the submodule
// in the real .git/config, outside: the person's own git runs git submodule init for that
// path alone, with no settings but the repository's, which takes from .gitmodules only its url
// (and an update mode that runs nothing; git refuses a command there). The command's next run
// then clones it. It returns a line for each.
func (s *Session) carrySubmodules(dir string, output []byte) []string {
	matches := submoduleNotRegistered().FindAllSubmatch(output, -1)
	if len(matches) == 0 || !gitRefused(output) {
		return nil
	}
	s.gitMu.Lock()
	roots := s.gitRoots
	s.gitMu.Unlock()
	top := ""
	for d := filepath.Clean(dir); slicesContainsWithin(roots, d); d = filepath.Dir(d) {
		if fi, err := os.Lstat(filepath.Join(d, ".git")); err == nil && fi.IsDir() {
			top = d
			break
		}
		if d == "/" {
			break
		}
	}
	var lines []string
	for _, m := range matches {
		path := string(m[1])
		if top == "" || !filepath.IsLocal(path) || strings.ContainsAny(path, "\r\x00") {
			lines = append(lines, fmt.Sprintf("openworker: the submodule %s is not registered: git named it where OpenWorker does not write\n", termtext.Escape(path)))
			continue
		}
		if err := submoduleInit(top, path); err != nil {
			lines = append(lines, fmt.Sprintf("openworker: the submodule %s is not registered: %v\n", termtext.Escape(path), err))
			continue
		}
		lines = append(lines, fmt.Sprintf("openworker: git could not write .git/config here, which is read-only; OpenWorker registered the submodule %s in it "+
			"(git submodule init outside: its url from .gitmodules), and nothing else: run the command again to clone it\n", termtext.Escape(path)))
	}
	return lines
}

// submoduleInit runs the person's git submodule init for path in the repository at top,
// outside the sandbox, without the system's or the person's settings and with every transport
// refused (init fetches nothing; nor may anything it reads make it).
func submoduleInit(top, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-c", "protocol.allow=never", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
		"submodule", "--quiet", "init", "--", path)
	cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/local/bin:/opt/homebrew/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent",
		"GIT_DIR=" + filepath.Join(top, ".git"), "GIT_WORK_TREE=" + top}
	cmd.Dir = top
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git submodule init: %v: %s", err, termtext.Short(string(out), 200))
	}
	return nil
}

func carryUpstream(roots []string, dir, branch, upstream string) (string, error) {
	remote, ref, ok := bytes.Cut([]byte(upstream), []byte("/"))
	if !ok || !refName.MatchString(branch) || !refName.MatchString(string(remote)) || !refName.MatchString(string(ref)) ||
		bytes.Contains([]byte(branch+upstream), []byte("..")) {
		return "", fmt.Errorf("git named it in a form OpenWorker does not write")
	}
	config := ""
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if !slicesContainsWithin(roots, d) {
			break
		}
		if fi, err := os.Lstat(filepath.Join(d, ".git")); err == nil && fi.IsDir() {
			config = filepath.Join(d, ".git", "config")
			break
		}
		if d == "/" {
			break
		}
	}
	if config == "" {
		return "", fmt.Errorf("no repository of the session's holds %s", dir)
	}
	// The remote must be one the repository's own settings name.
	if _, err := gitConfig(config, "--get", "remote."+string(remote)+".url"); err != nil {
		return "", fmt.Errorf("%s is not a remote of that repository's settings", remote)
	}
	if _, err := gitConfig(config, "branch."+branch+".remote", string(remote)); err != nil {
		return "", err
	}
	if _, err := gitConfig(config, "branch."+branch+".merge", "refs/heads/"+string(ref)); err != nil {
		return "", err
	}
	return fmt.Sprintf("openworker: git could not write .git/config here, which is read-only; OpenWorker set %s's upstream to %s in it (branch.%s.remote and branch.%s.merge), and nothing else\n",
		termtext.Escape(branch), termtext.Escape(upstream), termtext.Escape(branch), termtext.Escape(branch)), nil
}

// push is a git push -u a command's words hold: where (-C), to which remote, and its refspec.
type push struct{ dir, remote, src, dst string }

// quietPushes finds, in a command's words, each git push that sets an upstream (-u,
// --set-upstream) and is quiet (-q, --quiet), which is the one git says nothing of: git
// [-C DIR] [-c K=V] push [options] [REMOTE [SRC[:DST]]]. Words it cannot read as that are
// passed over; what it finds is only ever written for a remote the repository names.
func quietPushes(command string) []push {
	var out []push
	for _, seg := range regexp.MustCompile(`&&|\|\||[;&|\n()]`).Split(command, -1) {
		f := strings.Fields(seg)
		i := slices.Index(f, "git")
		if i < 0 {
			continue
		}
		var p push
		j := i + 1
		for ; j < len(f) && strings.HasPrefix(f[j], "-"); j++ {
			if (f[j] == "-C" || f[j] == "-c") && j+1 < len(f) {
				if f[j] == "-C" {
					p.dir = strings.Trim(f[j+1], `"'`)
				}
				j++
			}
		}
		if j >= len(f) || f[j] != "push" {
			continue
		}
		upstream, quiet := false, false
		var pos []string
		for k := j + 1; k < len(f); k++ {
			a := f[k]
			switch {
			case a == "-u" || a == "--set-upstream":
				upstream = true
			case a == "-q" || a == "--quiet":
				quiet = true
			case a == "-o" || a == "--push-option" || a == "--repo" || a == "--receive-pack" || a == "--exec":
				k++
			case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--"):
				// Short options together: -uq, -fu.
				upstream = upstream || strings.ContainsRune(a, 'u')
				quiet = quiet || strings.ContainsRune(a, 'q')
			case strings.HasPrefix(a, "-"):
			default:
				pos = append(pos, strings.Trim(a, `"'`))
			}
		}
		if !upstream || !quiet || len(pos) > 2 {
			continue
		}
		p.remote = "origin"
		if len(pos) > 0 {
			p.remote = pos[0]
		}
		if len(pos) > 1 {
			p.src, p.dst, _ = strings.Cut(strings.TrimPrefix(pos[1], "+"), ":")
			p.src = strings.TrimPrefix(p.src, "refs/heads/")
		}
		out = append(out, p)
	}
	return out
}

// currentBranch is the branch checked out in the repository of the session's folders that
// holds dir, read from its HEAD outside; "" when there is none.
func currentBranch(roots []string, dir string) string {
	for d := filepath.Clean(dir); slicesContainsWithin(roots, d); d = filepath.Dir(d) {
		head := filepath.Join(d, ".git", "HEAD")
		if fi, err := os.Lstat(head); err == nil && fi.Mode().IsRegular() {
			b, err := regularfile.Read(head, 4096)
			if err != nil {
				return ""
			}
			ref, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref: refs/heads/")
			if !ok || !refName.MatchString(ref) {
				return ""
			}
			return ref
		}
		if d == "/" {
			break
		}
	}
	return ""
}

func slicesContainsWithin(roots []string, d string) bool {
	for _, r := range roots {
		if policy.Within(r, d) {
			return true
		}
	}
	return false
}

// gitConfig runs the person's git on one settings file, outside the sandbox: git config
// --file reads and writes that file alone (no repository, no hooks, no includes taken), with
// the system's and the person's settings left out.
func gitConfig(file string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"config", "--file", file}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/local/bin:/opt/homebrew/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent"}
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git config: %v", err)
	}
	return string(out), nil
}
