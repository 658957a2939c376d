package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/apiclient"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/mcp"
)

var mcpCommand = command{
	name:     "mcp",
	synopsis: "mcp [--rw DIR]… [--ro DIR]… [--no-cwd] [--allow HOST[:PORT]]… [--network allowlist|open|none] [--provider auto|seatbelt|linux|direct]",
	about: `Speaks MCP over standard input and output: an agent's shell and file tools (run_command,
read_file, write_file, list_directory, request_site, session_info) in one session behind the
wall. The current folder is the writable folder unless said otherwise. Like run, it uses this
OS's sandbox unless --provider direct. It attaches to the running app or daemon, so its cards
show there; when none runs it hosts everything itself. The session ends when the client
disconnects. Standard output carries protocol messages only; logs go to standard error.`,
	example: "claude mcp add --transport stdio openworker -- openworker mcp --rw .",
	maxArgs: 0,
}

func cmdMCP(args []string) error {
	fs := newFlags(mcpCommand)
	var f sessionFlags
	f.register(fs, backend.ProviderAuto)
	if _, _, err := parse(fs, mcpCommand, args); err != nil {
		return err
	}
	// Standard output is the protocol's alone: the transport keeps the real one on a
	// private close-on-exec descriptor, and descriptor 1 becomes standard error before
	// anything else runs, so no stray print or child can corrupt the stream.
	out, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return fmt.Errorf("keeping standard output for the protocol: %w", err)
	}
	if err := unix.Dup2(2, 1); err != nil {
		return fmt.Errorf("pointing standard output at standard error: %w", err)
	}
	protocol := os.NewFile(uintptr(out), "mcp-stdout")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	e, err := loadEnv()
	if err != nil {
		return err
	}
	e.warnSettings()
	req, err := f.request(e.home)
	if err != nil {
		return err
	}
	host, cleanup, err := mcpHost(ctx, e, req)
	if err != nil {
		return err
	}
	defer cleanup()
	mcp.Version = version
	err = mcp.New(host).Run(ctx, &sdk.IOTransport{Reader: os.Stdin, Writer: protocol})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// mcpHost attaches to the running app or daemon, or hosts a backend in this process (and
// serves the local API meanwhile, so that its cards can be answered with openworker answer).
func mcpHost(ctx context.Context, e *env, req backend.Request) (mcp.Host, func(), error) {
	sock := api.SocketPath(e.stateDir)
	c := apiclient.New(sock)
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err := c.Status(sctx)
	cancel()
	if err == nil {
		start := api.StartRequest{Provider: req.Provider, Writable: req.Writable, ReadOnly: req.ReadOnly, Dir: req.Dir, Network: req.Network, Allow: req.Allow, GitMetadata: req.GitMetadata}
		info, err := c.Start(ctx, start)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(os.Stderr, "openworker mcp: session %s [%s, %s] in the running daemon (%s)\n", info.ID, info.Enforcement, info.Network, sock)
		h := &mcp.RemoteHost{C: c, ID: info.ID, Socket: sock, Given: start}
		return h, h.End, nil
	}
	h, err := e.hostBackend(ctx)
	if err != nil {
		return nil, nil, err
	}
	b := h.b
	s, err := b.Start(ctx, req)
	if err != nil {
		h.close()
		return nil, nil, err
	}
	srv := h.server(e)
	l, lerr := api.Listen(e.stateDir)
	if lerr == nil {
		go srv.Serve(l)
	} else {
		fmt.Fprintf(os.Stderr, "openworker mcp: cards of this session can be answered only through this client, not with openworker answer: %v\n", lerr)
	}
	fmt.Fprintf(os.Stderr, "openworker mcp: session %s [%s, %s], hosted in this process\n", s.ID, s.Enforcement, s.Network)
	return &mcp.LocalHost{B: b, S: s, Given: req}, func() {
		if lerr == nil {
			sctx, c := context.WithTimeout(context.Background(), 2*time.Second)
			_ = srv.Shutdown(sctx)
			c()
			_ = os.Remove(sock)
		}
		h.close()
	}, nil
}
