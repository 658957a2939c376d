package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openworker/openworker/core/mcp"
	"github.com/openworker/openworker/core/runner"
)

// TestMCPServerApart: openworker as build.sh ships it (-tags mcpapart) links no MCP SDK,
// which every run and session exec would otherwise start up, and `openworker mcp` is the
// server beside it (openworker-mcp), as an agent's host starts it: the handshake, the tools
// and --help are the server's. Without the server beside it, `openworker mcp` says what is
// missing and what to do.
func TestMCPServerApart(t *testing.T) {
	deps := exec.Command("go", "list", "-deps", "-tags", "mcpapart", ".")
	deps.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := deps.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/modelcontextprotocol/") || strings.HasPrefix(pkg, "github.com/google/jsonschema-go/") || pkg == "github.com/openworker/openworker/core/mcp" {
			t.Errorf("openworker built with -tags mcpapart links %s", pkg)
		}
	}

	w := newWorld(t)
	dir := filepath.Join(t.TempDir(), "bin")
	os.Mkdir(dir, 0o755)
	cli := filepath.Join(dir, "openworker")
	build := exec.Command("go", "build", "-tags", "mcpapart", "-o", cli, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building openworker -tags mcpapart: %v\n%s", err, out)
	}

	c := exec.Command(cli, "mcp")
	c.Env, c.Dir = w.env, w.project
	got, _ := c.CombinedOutput()
	if c.ProcessState.ExitCode() == 0 || !strings.Contains(string(got), runner.MCPName) || !strings.Contains(string(got), "./build.sh cli") {
		t.Errorf("openworker mcp without %s beside it: exit %d\n%s", runner.MCPName, c.ProcessState.ExitCode(), got)
	}

	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, runner.MCPName), b, 0o755); err != nil {
		t.Fatal(err)
	}
	help := exec.Command(cli, "mcp", "--help")
	help.Env = w.env
	if out, _ := help.CombinedOutput(); !strings.Contains(string(out), "Speaks MCP over standard input and output") {
		t.Errorf("openworker mcp --help:\n%s", out)
	}
	server := exec.Command(cli, "mcp", "--provider", "direct")
	server.Env, server.Dir = w.env, w.project
	client := sdk.NewClient(&sdk.Implementation{Name: "apart", Version: "1"}, nil)
	ctx := context.Background()
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: server}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if want := mcp.ToolNames(); !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(want))) {
		t.Errorf("tools through openworker mcp: %v, want %v", names, want)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "echo apart"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "apart") {
		t.Errorf("run_command through openworker mcp: %v %+v", err, res)
	}
}

// The shipped openworker's mcp --help names the tools without linking the server: the
// names it carries are the server's.
func TestMCPToolNamesInHelp(t *testing.T) {
	if want := strings.Join(mcp.ToolNames(), ", "); !strings.Contains(mcpCommand.about, "("+want+")") {
		t.Errorf("mcp's help names other tools than %s:\n%s", want, mcpCommand.about)
	}
}
