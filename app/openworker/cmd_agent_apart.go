//go:build mcpapart

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/openworker/openworker/core/runner"
)

// cmdAgent hands `openworker agent` to the MCP server's program beside this binary, which
// serves the host OpenWorker's tools while it runs: the same flags, standard input, output
// and environment, in this process's place.
func cmdAgent(args []string) error {
	path, err := runner.MCPBinary()
	if err != nil {
		return fmt.Errorf("find the MCP server: %w", err)
	}
	if path == "" {
		exe, _ := os.Executable()
		return fmt.Errorf("openworker agent runs in the MCP server's program %s beside this one (in %s), and it is not there: "+
			"install openworker again, or build both with ./build.sh cli (./build.sh app on a Mac)", runner.MCPName, filepath.Dir(exe))
	}
	err = syscall.Exec(path, append([]string{path, "agent"}, args...), os.Environ())
	return fmt.Errorf("start the MCP server %s: %w", path, err)
}
