package session

import (
	"os"
	"path/filepath"
	"strings"
)

// gitSystemConfigFile is the session's git system settings, in its private tmp.
const gitSystemConfigFile = "gitconfig-system"

// macGitSystemConfigs are a Mac's system git settings that the session's include: the
// machine's own. The Command Line Tools' and Homebrew's git add one of their own, which names
// the osxkeychain credential helper and nothing else.
var macGitSystemConfigs = []string{"/private/etc/gitconfig"}

// writeGitSystemConfig writes into dir the git system settings a Mac session's git reads
// (GIT_CONFIG_SYSTEM, git 2.32 and later) in place of the system's, and returns its path:
// each of system that exists, included, then the credential helpers reset. The keychain that
// the system's helper (osxkeychain) reads is out of reach inside, so that helper could only
// fail, or stall on a service the wall refuses; a helper in the person's own settings, read
// after these, is still asked (gh's, with a shared gh login), and with none git fails at once
// (GIT_TERMINAL_PROMPT=0), which the session's line after the command explains.
func writeGitSystemConfig(dir string, system []string) (string, error) {
	var b strings.Builder
	b.WriteString("# Written by OpenWorker: git's system settings inside this sandbox, in place of the\n# system's. The keychain is out of reach here, so no credential helper the system names is\n# asked; those in your own git settings still are.\n")
	for _, f := range system {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() && !strings.ContainsAny(f, "\"\\\n") {
			b.WriteString("[include]\n\tpath = \"" + f + "\"\n")
		}
	}
	// An empty helper resets the list of helpers read so far (gitcredentials(7)).
	b.WriteString("[credential]\n\thelper =\n")
	p := filepath.Join(dir, gitSystemConfigFile)
	return p, os.WriteFile(p, []byte(b.String()), 0o600)
}
