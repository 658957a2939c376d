package session

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// developerToolsTimeout bounds each of the two lookups: xcode-select answers from a symlink,
// but xcrun can ask xcodebuild, which is slow on a Mac with several Xcodes.
const developerToolsTimeout = 5 * time.Second

// FindDeveloperTools asks xcode-select and xcrun, outside every sandbox, for the active
// developer folder and its SDK. Nothing installed, or an answer that is not a folder, gives
// the zero value: sessions then run the /usr/bin shims as they are.
func FindDeveloperTools() DeveloperTools {
	dir := ask("/usr/bin/xcode-select", "-p")
	if dir == "" || !isDir(dir) {
		return DeveloperTools{}
	}
	dev := DeveloperTools{Dir: dir}
	if sdk := ask("/usr/bin/xcrun", "--show-sdk-path"); sdk != "" && isDir(sdk) {
		dev.SDKRoot = sdk
	}
	for _, bin := range []string{
		filepath.Join(dir, "usr", "bin"),
		// Xcode.app keeps clang and ld in its default toolchain, not in usr/bin.
		filepath.Join(dir, "Toolchains", "XcodeDefault.xctoolchain", "usr", "bin"),
	} {
		if isDir(bin) {
			dev.PathFirst = append(dev.PathFirst, bin)
		}
	}
	return dev
}

// ask runs a program with a timeout and returns its first line of output, or "".
func ask(name string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), developerToolsTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin, cmd.Stderr = nil, nil
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(out), "\n")
	if line = strings.TrimSpace(line); !filepath.IsAbs(line) {
		return ""
	}
	return filepath.Clean(line)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
