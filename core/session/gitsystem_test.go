package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Inside a Mac's sandbox git takes its system settings from the session's own file: the
// machine's /etc/gitconfig is included, but no credential helper the system names
// (osxkeychain, which reads a keychain that is out of reach) is asked; a helper in the
// person's own settings (gh's) still is, and git fails at once, asking for no password.
func TestGitSystemConfigDropsTheSystemsHelper(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	home := filepath.Join(root, "home")
	os.Mkdir(home, 0o700)
	log := filepath.Join(root, "asked")
	helper := func(who string) string { return "!f() { echo " + who + " >> '" + log + "'; }; f" }
	system := filepath.Join(root, "etc-gitconfig")
	os.WriteFile(system, []byte("[credential]\n\thelper = \""+helper("system")+"\"\n[core]\n\tsystemsetting = kept\n"), 0o644)
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[credential]\n\thelper = \""+helper("global")+"\"\n"), 0o644)
	fill := func(systemConfig string) (asked, setting string) {
		t.Helper()
		os.Remove(log)
		env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_SYSTEM=" + systemConfig}
		cmd := exec.Command("git", "credential", "fill")
		cmd.Env, cmd.Stdin = env, strings.NewReader("protocol=https\nhost=example.com\n\n")
		cmd.Run() // fails: no helper gives a login, and git may not prompt
		b, _ := os.ReadFile(log)
		cfg := exec.Command("git", "config", "--get", "core.systemsetting")
		cfg.Env = env
		out, _ := cfg.Output()
		return strings.Join(strings.Fields(string(b)), " "), strings.TrimSpace(string(out))
	}
	if asked, _ := fill(system); asked != "system global" {
		t.Fatalf("with the machine's system settings, the helpers asked were %q; the test proves nothing", asked)
	}
	ours, err := writeGitSystemConfig(root, []string{system, filepath.Join(root, "missing")})
	if err != nil {
		t.Fatal(err)
	}
	asked, setting := fill(ours)
	if asked != "global" {
		t.Errorf("with the session's system settings, the helpers asked were %q, want the person's own only", asked)
	}
	if setting != "kept" {
		t.Errorf("the machine's other system settings were lost: core.systemsetting = %q", setting)
	}
}
