package policy

import (
	"os"
	"path/filepath"
	"slices"
)

// toolchainSecrets are the files (and folders) inside a toolchain that hold logins rather
// than tools, as globs relative to the toolchain's folder: a toolchain is shared whole and
// read-only, and its registry tokens would go with it. Inside a sandbox they are empty.
var toolchainSecrets = map[string][]string{
	// cargo login: the crates.io token.
	".cargo": {"credentials", "credentials.toml"},
	// npm's global settings (npm config set --global) keep registry tokens.
	".nvm":   {"versions/node/*/etc/npmrc"},
	".volta": {"tools/image/node/*/etc/npmrc"},
	".asdf":  {"installs/nodejs/*/etc/npmrc", "installs/python/*/pip.conf"},
	".bun":   {"install/global/.npmrc", "install/global/bunfig.toml"},
	// pip's settings may carry an index URL with a password.
	".pyenv":      {"versions/*/pip.conf", "versions/*/etc/pip.conf"},
	".local/pipx": {"venvs/*/pip.conf", "shared/pip.conf"},
	// uv auth login and mise's GitHub token.
	".local/share/uv":   {"credentials"},
	".local/share/mise": {"github_token", "gitlab_token"},
	".rbenv":            {"versions/*/etc/gemrc"},
}

// anySecrets are the names that hold logins wherever they are found at the top of a
// toolchain, named or added by the person.
var anySecrets = []string{
	"credentials", "credentials.toml", ".credentials.toml", ".npmrc", "npmrc", ".yarnrc.yml",
	".pypirc", "pypirc", "pip.conf", ".netrc", ".git-credentials", "auth.json", "hosts.yml",
	".gem/credentials", "etc/npmrc",
}

// hiddenIn returns the login files found in the toolchain at dir (resolved), named rel
// relative to the home folder. A symlink among them is judged by what it leads to: inside,
// it leads where its target is shown, so the target is hidden where it lies in readable.
func hiddenIn(rel, dir string, readable []string) []string {
	var out []string
	for _, pattern := range slices.Concat(toolchainSecrets[rel], anySecrets) {
		matches, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, m := range matches {
			fi, err := os.Lstat(m)
			if err != nil {
				continue
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				r, err := filepath.EvalSymlinks(m)
				if err != nil || !slices.ContainsFunc(readable, func(d string) bool { return Within(d, r) }) {
					continue // it leads nowhere a sandboxed command can read
				}
				m = r
			} else if !fi.Mode().IsRegular() && !fi.IsDir() {
				continue
			}
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
