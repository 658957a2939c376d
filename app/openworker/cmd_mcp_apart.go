//go:build mcpapart

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/openworker/openworker/core/runner"
)

// cmdMCP hands `openworker mcp` to the MCP server beside this binary (build.sh builds both):
// the same flags, standard input and output, and environment, in this process's place, so
// that the agent's host holds the server itself, as it started it. This binary links none of
// the server's packages (the MCP SDK, its JSON schemas), which every run and session exec
// would otherwise start up.
func cmdMCP(args []string) error {
	path, err := runner.MCPBinary()
	if err != nil {
		return fmt.Errorf("find the MCP server: %w", err)
	}
	if path == "" {
		exe, _ := os.Executable()
		return fmt.Errorf("the MCP server is the program %s beside this one (in %s), and it is not there: "+
			"install openworker again, or build both with ./build.sh cli (./build.sh app on a Mac)", runner.MCPName, filepath.Dir(exe))
	}
	err = syscall.Exec(path, append([]string{path, "mcp"}, args...), os.Environ())
	return fmt.Errorf("start the MCP server %s: %w", path, err)
}
