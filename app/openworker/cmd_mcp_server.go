//go:build !mcpapart

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/apiclient"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/mcp"
)

func cmdMCP(args []string) error {
	fs := newFlags(mcpCommand)
	var f sessionFlags
	f.register(fs, backend.ProviderAuto)
	var opts mcp.Options
	fs.DurationVar(&opts.AskWait, "ask-wait", mcp.DefaultAskWait, "how long request_site and web_fetch wait for the person before they answer \"no answer yet\" (the card stays up)")
	fs.BoolVar(&opts.NoForms, "no-forms", false, "never ask through the agent's client's form; the person answers on a card")
	agentHost := fs.Bool("agent-host", false, "the session is the agent host's (this server's parent): the host's own shell, pointed at openworker-shell, runs its commands in it too (see openworker agent --print-config)")
	if _, _, err := parse(fs, mcpCommand, args); err != nil {
		return err
	}
	if err := f.checkFlags(mcpCommand.name); err != nil {
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
	mcp.Version = version
	var srv *mcp.Server
	host, cleanup, err := mcpSession(ctx, f, *agentHost)
	if err != nil {
		// The agent's host shows nothing of a server that exits before the handshake, and
		// the model just lacks the tools: answer it, and say why on every call.
		why := err.Error()
		fmt.Fprintln(os.Stderr, "openworker mcp:", why)
		srv = mcp.NewUnavailable(why)
	} else {
		defer cleanup()
		srv = mcp.New(host, opts)
	}
	err = srv.Run(ctx, &mcp.StdioTransport{In: os.Stdin, Out: protocol, OnEOF: srv.InputEnded})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// mcpSession starts the server's session: in the running app or daemon, or in one it starts
// for agents. A daemon that cannot be started leaves a session hosted in this process, which
// serves no local API: it never poses as the daemon for other clients.
func mcpSession(ctx context.Context, f sessionFlags, agentHost bool) (mcp.Host, func(), error) {
	e, err := loadEnv()
	if err != nil {
		return nil, nil, err
	}
	e.warnSettings()
	if err := e.brokenSettings(); err != nil {
		return nil, nil, err
	}
	req, err := f.request(e.home)
	if err != nil {
		return nil, nil, err
	}
	req.Agent = true
	sock := api.SocketPath(e.stateDir)
	c := apiclient.New(sock)
	started, err := ensureDaemon(ctx, c, e)
	if err != nil {
		fmt.Fprintf(os.Stderr, "openworker mcp: %v; the session is hosted in this process, and its cards are answered only through this client\n", err)
		return mcpInProcess(ctx, e, req)
	}
	start := api.StartRequest{Provider: req.Provider, Writable: req.Writable, ReadOnly: req.ReadOnly, Dir: req.Dir, Network: req.Network, Allow: req.Allow, Agent: true, GitMetadata: req.GitMetadata, LocalServers: req.LocalServers, Publish: req.Publish, FreshCaches: req.FreshCaches}
	if agentHost {
		// The host that started this server owns the session: its shell finds it so. Claude
		// Code's temporary folder, where it writes its commands' output, is readable inside.
		start.Owner = os.Getppid()
		if tmp := os.Getenv("CLAUDE_CODE_TMPDIR"); tmp != "" {
			if err := ownFolder(tmp); err != nil {
				fmt.Fprintf(os.Stderr, "openworker mcp: CLAUDE_CODE_TMPDIR %s: %v; a background command's output cannot be read inside\n", tmp, err)
			} else {
				start.ReadOnly = append(start.ReadOnly, tmp)
			}
		}
	}
	if agentHost {
		// The host's executor may have started its session already (Codex starts its MCP
		// servers once its executor is up): this server serves the same one, which its
		// starter ends.
		if list, err := c.Sessions(ctx); err == nil {
			for _, s := range list {
				if s.Owner == start.Owner {
					fmt.Fprintf(os.Stderr, "openworker mcp: the agent host's session %s (%s)\n", s.ID, wallWords(s.Enforcement, s.Network))
					return &mcp.RemoteHost{C: c, ID: s.ID, Socket: sock, Given: start}, func() {}, nil
				}
			}
		}
	}
	held, err := holdSession(ctx, e, start, "openworker mcp", mcp.EndReason)
	if err != nil {
		return nil, nil, err
	}
	whose := "the running daemon"
	if started {
		whose = "a daemon started for agents, which ends after its last session"
	}
	info := held.current()
	fmt.Fprintf(os.Stderr, "openworker mcp: session %s (%s) in %s (%s)\n", info.ID, wallWords(info.Enforcement, info.Network), whose, sock)
	return held.host, held.end, nil
}

// ensureDaemon makes sure a daemon answers on c: the running one, or one started now that
// ends once no session has run for a while. Two servers starting at once start one daemon
// between them (the daemon's lock decides), and both attach to it.
func ensureDaemon(ctx context.Context, c *apiclient.Client, e *env) (started bool, err error) {
	if answers(ctx, c) {
		return false, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return false, fmt.Errorf("starting a daemon: %w", err)
	}
	if err := os.MkdirAll(e.stateDir, 0o700); err != nil {
		return false, fmt.Errorf("starting a daemon: %w", err)
	}
	logPath := filepath.Join(e.stateDir, "daemon.log")
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return false, fmt.Errorf("starting a daemon: %w", err)
	}
	defer log.Close()
	d := exec.Command(exe, "serve", "--exit-when-idle")
	d.Dir = "/" // it holds no one's folder
	d.Stdout, d.Stderr = log, log
	// A session of its own: the agent host's Ctrl-C or hang-up for this server is not the
	// daemon's, whose other clients may still be at work.
	d.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := d.Start(); err != nil {
		return false, fmt.Errorf("starting a daemon: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- d.Wait() }() // reaps it if it ends while this server runs
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if answers(ctx, c) {
			return true, nil
		}
		select {
		case err := <-exited:
			// Another server's daemon may have won the lock: it answers soon.
			if waitAnswer(ctx, c, 2*time.Second) {
				return false, nil
			}
			return false, fmt.Errorf("the daemon it started ended (%v); its log is %s", err, logPath)
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return false, errors.New("the daemon it started did not answer within 10 s; its log is " + logPath)
}

func answers(ctx context.Context, c *apiclient.Client) bool {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := c.Status(sctx)
	return err == nil
}

func waitAnswer(ctx context.Context, c *apiclient.Client, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if answers(ctx, c) {
			return true
		}
	}
	return false
}

// mcpInProcess hosts the session's backend in this process, serving no local API.
func mcpInProcess(ctx context.Context, e *env, req backend.Request) (mcp.Host, func(), error) {
	h, err := e.hostBackend(ctx, false)
	if err != nil {
		return nil, nil, err
	}
	s, err := h.b.Start(ctx, req)
	if err != nil {
		h.close()
		return nil, nil, err
	}
	fmt.Fprintf(os.Stderr, "openworker mcp: session %s (%s), hosted in this process\n", s.ID, wallWords(string(s.Enforcement), string(s.Network)))
	return &mcp.LocalHost{B: h.b, S: s, Given: req}, h.close, nil
}

// ownFolder makes path a folder of this user's alone, or checks that it is one (not a link,
// not another user's): a host writes its commands' output there, which a session reads.
func ownFolder(path string) error {
	if !filepath.IsAbs(path) {
		return errors.New("not an absolute path")
	}
	if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return errors.New("not a folder (a link or a file is there)")
	case !ok || int(st.Uid) != os.Getuid():
		return errors.New("not this user's folder")
	case fi.Mode().Perm()&0o077 != 0:
		return errors.New("others may use it (it should be mode 700)")
	}
	return nil
}
