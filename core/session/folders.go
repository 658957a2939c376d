package session

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/policy"
)

// writableFile, in the state folder, lists every folder a session has had writable, one
// resolved path a line. A symlink a command planted in one is never followed to another
// session's folder, even by a session started long after, by another process.
const writableFile = "writable-folders"

// policyOptions are the policy inputs of a session with spec: its folders, and the places no
// session may reach.
func (m *Manager) policyOptions(spec Spec) policy.Options {
	o := policy.Options{
		Writable: spec.Writable, ReadOnly: spec.ReadOnly, Toolchains: spec.Toolchains, Network: spec.Network,
		UserHome: m.opts.UserHome, StateDir: m.opts.StateDir, GOOS: m.opts.GOOS,
		RunnerFiles: []string{m.opts.RunnerPath}, Untrusted: m.untrusted(), Programs: spec.Programs,
		GitMetadataWritable: spec.GitMetadataWritable,
	}
	o.LocalServers = spec.LocalServers
	// A settings file that is a link into a dotfiles folder is guarded there too, link by
	// link: a command that can write where it leads rewrites the settings.
	if m.opts.SettingsPath != "" {
		o.ConfigDirs = append(o.ConfigDirs, policy.LinkFolders(m.opts.SettingsPath)...)
	}
	if d, err := config.DefaultDir(m.opts.GOOS, m.opts.UserHome); err == nil {
		o.ConfigDirs = append(o.ConfigDirs, policy.LinkFolders(filepath.Join(d, config.FileName))...)
	}
	if m.opts.Audit != nil {
		o.AuditDir = filepath.Dir(m.opts.Audit.Path())
	}
	return o
}

// untrusted returns the folders sessions have had writable, as the state folder lists them.
func (m *Manager) untrusted() []string {
	f, err := os.Open(filepath.Join(m.opts.StateDir, writableFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); filepath.IsAbs(line) {
			out = append(out, line)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// recordWritable adds to the list untrusted reads the folders of dirs it lacks (known is
// what it held when the session's policy was built).
func (m *Manager) recordWritable(dirs, known []string) {
	dirs = slices.DeleteFunc(slices.Clone(dirs), func(d string) bool { return slices.Contains(known, d) })
	if len(dirs) == 0 {
		return
	}
	f, err := os.OpenFile(filepath.Join(m.opts.StateDir, writableFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	// One write, so that the lines of sessions starting at once do not interleave.
	f.WriteString(strings.Join(dirs, "\n") + "\n")
}

// workingFolder is where a session's commands start: dir, or its first writable folder as
// given, resolved as the policy resolved the folders: the wall holds them at their resolved
// paths only, and a symlink's path does not exist inside.
func workingFolder(pol *policy.Policy, spec Spec, home string) (string, error) {
	dir := spec.Dir
	if dir == "" && len(spec.Writable) > 0 {
		dir = spec.Writable[0]
	}
	if dir == "" {
		return home, nil
	}
	if r, ok := pol.Folder(dir); ok {
		return r, nil
	}
	r, err := policy.Resolve(dir)
	if err != nil {
		return "", fmt.Errorf("the working folder %s: %w", dir, err)
	}
	return r, nil
}
