//go:build !mcpapart

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/agentbridge"
	"github.com/openworker/openworker/core/agenthost"
	"github.com/openworker/openworker/core/agentshell"
	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/mcp"
	"github.com/openworker/openworker/core/runner"
)

func cmdAgent(args []string) error {
	fs := newFlags(agentCommand)
	var f sessionFlags
	f.register(fs, backend.ProviderAuto)
	printConfig := fs.Bool("print-config", false, "print the routing as settings to keep (for a host started by hand or from an editor), and start nothing")
	pos, _, err := parse(fs, agentCommand, args)
	if err != nil {
		return err
	}
	host, err := agenthost.Find(pos[0])
	if err != nil {
		return usagef(agentCommand.name, "%v", err)
	}
	if *printConfig {
		if len(pos) > 1 {
			return usagef(agentCommand.name, "--print-config takes the host's name only, not its arguments")
		}
		return printAgentConfig(host, pos[0])
	}
	dir, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("the current folder cannot be found: %w", err)
	}
	home, _ := os.UserHomeDir()
	// Before a session is started for it: a start the routing could not hold is refused
	// as it is, with nothing started.
	if err := host.Check(pos[1:], dir, home); err != nil {
		return agentRefusal(err)
	}
	program, err := exec.LookPath(pos[0])
	if err != nil {
		return fmt.Errorf("%s is not found (%v): install %s, or give its path", pos[0], err, host.Title)
	}
	if program, err = filepath.Abs(program); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "openworker-agent-")
	if err != nil {
		return fmt.Errorf("making the host's folder: %w", err)
	}
	defer os.RemoveAll(work)
	shell, err := agentShell(work)
	if err != nil {
		return err
	}
	// The host's own temporary folder: it writes its commands' output there, which a
	// command reads back (a background server's log); the session has it read-only.
	hostTmp := filepath.Join(work, "tmp")
	if err := os.Mkdir(hostTmp, 0o700); err != nil {
		return err
	}
	// A home folder of the run's, for a host whose settings can be given for one run only
	// so; the session sees none of it.
	hostHome := filepath.Join(work, "home")
	if err := os.Mkdir(hostHome, 0o700); err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	r := agenthost.Routing{Shell: shell, PathDir: filepath.Join(work, "bin"), Tmp: hostTmp, HostHome: hostHome, Home: home, Dir: dir}
	keeper, err := startAgentSession(ctx, f, program, hostTmp)
	var h mcp.Host
	if err != nil {
		r.Refused = err.Error()
		fmt.Fprintf(os.Stderr, "openworker agent: the session could not start: %v\nopenworker agent: %s starts all the same, and its shell refuses every command: nothing runs outside the sandbox\n", err, host.Title)
	} else {
		defer keeper.end()
		info := keeper.current()
		r.Socket, r.Session, h = keeper.socket, info.ID, keeper.host
		fmt.Fprintf(os.Stderr, "openworker agent: %s's commands run in session %s (%s)\n", host.Title, info.ID, wallWords(info.Enforcement, info.Network))
	}
	if r.MCP, err = serveAgentMCP(ctx, h, r.Refused); err != nil {
		return err
	}
	if host.Name == "codex" {
		if r.Executor, err = serveCodexExecutor(ctx, keeper, program); err != nil {
			return err
		}
	}
	launch, err := host.Launch(r, pos[1:])
	if err != nil {
		return agentRefusal(err)
	}
	if err := writeRunFiles(hostHome, launch.Files); err != nil {
		return fmt.Errorf("writing %s's settings for the run: %w", host.Title, err)
	}
	cmd := exec.Command(program, append(launch.Args, pos[1:]...)...)
	cmd.Env = append(os.Environ(), launch.Env...)
	if len(launch.PathFirst) > 0 {
		cmd.Env = append(cmd.Env, "PATH="+strings.Join(append(launch.PathFirst, os.Getenv("PATH")), string(filepath.ListSeparator)))
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Ctrl-C and Ctrl-\ are the host's: the terminal sends them to the host too, which
	// decides what they mean (interrupt a command, quit). A SIGTERM or SIGHUP for this
	// process is passed on to the host, which ends its commands as it does on its own.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", program, err)
	}
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGTERM || sig == syscall.SIGHUP {
				_ = cmd.Process.Signal(sig)
			}
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return exitError{128 + int(ws.Signal())}
		}
		return exitError{ee.ExitCode()}
	}
	return err
}

// agentRefusal is a start the host's recipe refused: settings the host would read are
// said as they are, anything else is the person's arguments'.
func agentRefusal(err error) error {
	var se *agenthost.SettingsError
	if errors.As(err, &se) {
		return err
	}
	return usagef(agentCommand.name, "%v", err)
}

// writeRunFiles writes a run's files, each in the folder home, which holds nothing else yet:
// made anew (never through a link), the person's alone.
func writeRunFiles(home string, files []agenthost.File) error {
	for _, f := range files {
		rel, err := filepath.Rel(home, f.Path)
		if err != nil || !filepath.IsAbs(f.Path) || rel == "." || strings.HasPrefix(rel, "..") {
			return fmt.Errorf("%s is not in the run's folder %s", f.Path, home)
		}
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
			return err
		}
		if f.Link != "" {
			if err := os.Symlink(f.Link, f.Path); err != nil {
				return err
			}
			continue
		}
		w, err := os.OpenFile(f.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = w.Write(f.Data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// agentShell is openworker-shell's path: the program beside this one, or, where there is
// none (go run), this program by a link of that name in the run's folder, which starts as
// the shell by its name.
func agentShell(work string) (string, error) {
	p, err := runner.ShellBinary()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(work, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		return "", err
	}
	if p == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", err
		}
		p = filepath.Join(bin, runner.ShellName)
		if err := os.Symlink(exe, p); err != nil {
			return "", err
		}
	}
	// bash and sh for hosts that find their shell on PATH (gemini-cli runs bash -c).
	for _, name := range []string{"bash", "sh"} {
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			return "", err
		}
	}
	return p, nil
}

func startAgentSession(ctx context.Context, f sessionFlags, program, hostTmp string) (*heldSession, error) {
	e, err := loadEnv()
	if err != nil {
		return nil, err
	}
	e.warnSettings()
	if err := e.brokenSettings(); err != nil {
		return nil, err
	}
	req, err := f.request(e.home)
	if err != nil {
		return nil, err
	}
	programs := []string{program}
	if r, err := filepath.EvalSymlinks(program); err == nil && r != program {
		programs = append(programs, r)
	}
	start := api.StartRequest{Provider: req.Provider, Writable: req.Writable, ReadOnly: append(req.ReadOnly, hostTmp), Dir: req.Dir,
		Network: req.Network, Allow: req.Allow, Agent: true, GitMetadata: req.GitMetadata, LocalServers: req.LocalServers, Publish: req.Publish, FreshCaches: req.FreshCaches,
		Owner: os.Getpid(), HostPrograms: programs}
	return holdSession(ctx, e, start, "openworker agent", "its agent host exited")
}

// serveAgentMCP serves OpenWorker's MCP server for host h (nil: a server that says why
// there is no session) on loopback, for the host's run.
func serveAgentMCP(ctx context.Context, h mcp.Host, refused string) (agenthost.MCPServer, error) {
	mcp.Version = version
	var srv *mcp.Server
	if h == nil {
		srv = mcp.NewUnavailable(refused)
	} else {
		srv = mcp.New(h, mcp.Options{})
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return agenthost.MCPServer{}, err
	}
	token := hex.EncodeToString(b)
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return agenthost.MCPServer{}, fmt.Errorf("serving the host's MCP server: %w", err)
	}
	hs := &http.Server{Handler: mcp.HTTPHandler(srv, token), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(l)
	context.AfterFunc(ctx, func() { hs.Close() })
	return agenthost.MCPServer{URL: "http://" + l.Addr().String() + "/mcp", Token: token}, nil
}

// serveCodexExecutor serves the WebSocket Codex runs its tools on (CODEX_EXEC_SERVER_URL):
// each connection starts Codex's executor, the same program as the host's, in the session.
// Without a session (keeper nil) every connection is refused, and Codex's tools fail.
func serveCodexExecutor(ctx context.Context, keeper *heldSession, program string) (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	bridge := &agentbridge.Bridge{Token: hex.EncodeToString(b), Log: func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "openworker agent: "+format+"\n", a...)
	}}
	if keeper == nil {
		bridge.Run = func(context.Context, io.Reader, func(string, []byte)) error {
			return errors.New("the session could not start")
		}
	} else {
		bridge.Blocked = keeper.blockedNote
		bridge.Run = func(ctx context.Context, stdin io.Reader, onChunk func(string, []byte)) error {
			tag := hex.EncodeToString(b[:8]) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			res, err := keeper.c.ExecStream(ctx, keeper.host.Session(), api.ExecRequest{
				Argv: []string{program, "exec-server", "--listen", "stdio"}, Dir: keeper.start.Dir, Apart: true, Tag: tag, Stdin: true,
			}, stdin, onChunk)
			if err == nil && res.Error != "" {
				err = errors.New(res.Error)
			}
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("it exited with status %d", res.ExitCode)
			}
			return err
		}
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("serving Codex's executor: %w", err)
	}
	hs := &http.Server{Handler: bridge, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(l)
	context.AfterFunc(ctx, func() { hs.Close() })
	return "ws://" + l.Addr().String() + "/" + bridge.Token, nil
}

// blockedNote is what a model reads of the sites the session was refused between from and
// to. The daemon records a refusal before its proxy answers the command, so a command that
// has ended finds every refusal it met there: nothing is waited for.
func (s *heldSession) blockedNote(from, to time.Time) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a, err := s.c.Access(ctx, s.host.Session())
	if err != nil {
		return ""
	}
	var sites []string
	var denied []bool
	for _, x := range a.Refused {
		if x.Time.Before(from) || x.Time.After(to) {
			continue
		}
		sites = append(sites, x.Site)
		denied = append(denied, agentshell.Denied(x.Reason))
	}
	return agentshell.BlockedNote(sites, denied)
}

// printAgentConfig prints host's routing as settings to keep. They name the programs by
// their installed paths: openworker-shell must lie beside this program.
func printAgentConfig(host *agenthost.Host, program string) error {
	shell, err := runner.ShellBinary()
	if err != nil {
		return err
	}
	if shell == "" {
		exe, _ := os.Executable()
		return fmt.Errorf("the settings name the agent hosts' shell, %s, by its installed path, and it is not beside this program (in %s): "+
			"build it with ./build.sh cli, or install the app", runner.ShellName, filepath.Dir(exe))
	}
	mcpPath, err := runner.MCPBinary()
	if err != nil {
		return err
	}
	if mcpPath == "" {
		if mcpPath, err = os.Executable(); err != nil {
			return err
		}
	}
	in := agenthost.Installed{Shell: shell, MCP: mcpPath, ClaudeTmp: filepath.Join(os.TempDir(), "openworker-claude-"+strconv.Itoa(os.Getuid()))}
	p, err := exec.LookPath(program)
	if err == nil {
		p, err = filepath.Abs(p)
	}
	if err != nil {
		return fmt.Errorf("%s is not found (%v): the settings name its program by its path; install %s, or give its path", program, err, host.Title)
	}
	in.Host = resolved(p)
	text, err := host.Kept(in)
	if err != nil {
		return err
	}
	fmt.Print(text)
	return nil
}
