package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/apiclient"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/session"
)

const sessionUsage = `Usage (a running daemon is needed: openworker serve):
  openworker session start [--rw DIR]… [--ro DIR]… [--no-cwd] [--allow HOST[:PORT]]… [--network MODE] [--provider P]
                                       start a session; prints its ID
  openworker session exec ID [--timeout D] -- CMD [ARG…]
  openworker session exec ID [--timeout D] 'SHELL COMMAND'
                                       run a command; a shell command's cd and export carry over
  openworker session read ID PATH [--offset N] [--limit N]
  openworker session write ID PATH     (the content comes from standard input)
  openworker session list ID [PATH]
  openworker session add-folder ID [--ro] DIR
                                       add a folder; the sandbox restarts and shell state is lost
  openworker session end ID
  openworker session ls                the running sessions

Flags may come before or after the session ID. "openworker session COMMAND --help" says more.
`

// sessionCommands are the session subcommands, each with its own function.
var sessionCommands = map[string]struct {
	command
	run func(c *apiclient.Client, ctx context.Context, args []string) error
}{
	"start":      {sessionStartCommand, sessionStart},
	"ls":         {sessionLsCommand, sessionLs},
	"exec":       {sessionExecCommand, sessionExec},
	"read":       {sessionReadCommand, sessionRead},
	"write":      {sessionWriteCommand, sessionWrite},
	"list":       {sessionListCommand, sessionList},
	"add-folder": {sessionAddFolderCommand, sessionAddFolder},
	"end":        {sessionEndCommand, sessionEnd},
}

func cmdSession(args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		fmt.Print(sessionUsage)
		return nil
	}
	sc, ok := sessionCommands[args[0]]
	if !ok {
		fmt.Fprint(os.Stderr, sessionUsage)
		return fmt.Errorf("unknown session command %q", args[0])
	}
	state, err := config.StateDir()
	if err != nil {
		return err
	}
	return sc.run(apiclient.New(api.SocketPath(state)), context.Background(), args[1:])
}

var sessionStartCommand = command{
	name:     "session start",
	synopsis: "session start [--rw DIR]… [--ro DIR]… [--no-cwd] [--allow HOST[:PORT]]… [--network allowlist|open|none] [--provider P]",
	about: `Starts a session in the running daemon and prints its ID. The current folder is writable
and the working folder unless --no-cwd. Without --provider, the machine's sandbox_provider
decides the wall, as for every session the app or the daemon starts.`,
	example: "id=$(openworker session start --ro ../data)\nopenworker session exec \"$id\" 'npm test'",
	maxArgs: 0,
}

func sessionStart(c *apiclient.Client, ctx context.Context, args []string) error {
	fs := newFlags(sessionStartCommand)
	var f sessionFlags
	f.register(fs, backend.ProviderSettings)
	if _, _, err := parse(fs, sessionStartCommand, args); err != nil {
		return err
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return err
	}
	rw, ro, dir, err := f.folders(home)
	if err != nil {
		return err
	}
	info, err := c.Start(ctx, api.StartRequest{Provider: f.provider, Writable: rw, ReadOnly: ro, Dir: dir, Network: f.network, Allow: f.allow, LocalServers: f.localServers})
	if err != nil {
		return err
	}
	fmt.Println(info.ID)
	fmt.Fprintf(os.Stderr, "openworker: session %s started [%s, %s] with %s\n", info.ID, info.Enforcement, info.Network, strings.Join(info.Writable, ", "))
	return nil
}

var sessionLsCommand = command{name: "session ls", synopsis: "session ls", about: "Lists the daemon's running sessions.", example: "openworker session ls", maxArgs: 0}

func sessionLs(c *apiclient.Client, ctx context.Context, args []string) error {
	if _, _, err := parse(newFlags(sessionLsCommand), sessionLsCommand, args); err != nil {
		return err
	}
	ss, err := c.Sessions(ctx)
	if err != nil {
		return err
	}
	for _, s := range ss {
		fmt.Printf("%s  [%s, %s]  started %s  rw %s", s.ID, s.Enforcement, s.Network, s.Started.Format(time.Kitchen), strings.Join(s.Writable, ","))
		if len(s.ReadOnly) > 0 {
			fmt.Printf("  ro %s", strings.Join(s.ReadOnly, ","))
		}
		fmt.Println()
	}
	return nil
}

var sessionExecCommand = command{
	name:     "session exec",
	synopsis: "session exec ID [--timeout D] -- CMD [ARG…]   or   session exec ID [--timeout D] 'SHELL COMMAND'",
	about: `Runs a command in a session and exits with its status. Arguments after -- are the command
and its arguments, exactly as given (no shell, so "foo bar" stays one argument); a single
argument is a shell command, whose cd and export carry over to the session's next commands.

Standard input is passed to the command; there is no terminal inside. Ctrl-C is passed to the
command (SIGINT, then SIGTERM and SIGKILL 2 s apart if it does not end) and exits 130. One
command runs at a time in a session: another exec meanwhile is refused with a message.`,
	example: "openworker session exec 3f9c2a1b7d0e -- grep \"foo bar\" notes.txt\nopenworker session exec 3f9c2a1b7d0e 'cd src && make'",
	minArgs: 2,
	maxArgs: -1,
	needs:   "a session ID (openworker session ls lists them) and a command",
}

func sessionExec(c *apiclient.Client, ctx context.Context, args []string) error {
	fs := newFlags(sessionExecCommand)
	var timeout seconds
	fs.Var(&timeout, "timeout", "end the command after this long (30s, 5m, or a number of seconds); 0 means no limit")
	pos, _, err := parse(fs, sessionExecCommand, args)
	if err != nil {
		return err
	}
	id, words := pos[0], pos[1:]
	req := api.ExecRequest{TimeoutMS: time.Duration(timeout).Milliseconds(), Stdin: true}
	if len(words) == 1 {
		req.Command = words[0]
	} else {
		req.Argv = words
	}
	// Ctrl-C is sent to the command, whose output and status still come; the daemon may be
	// slow to answer, so a second Ctrl-C is sent too (it kills the command).
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	var interrupted atomicSignal
	go func() {
		for range sigs {
			interrupted.store(syscall.SIGINT)
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = c.Signal(sctx, id, api.SignalRequest{Signal: "SIGINT"})
			cancel()
		}
	}()
	res, err := c.ExecStream(ctx, id, req, os.Stdin, func(stream string, data []byte) {
		if stream == "stderr" {
			os.Stderr.Write(data)
		} else {
			os.Stdout.Write(data)
		}
	})
	if err != nil {
		return err
	}
	notices(res, true)
	if res.Interrupted != "" || interrupted.load() != 0 {
		fmt.Fprintln(os.Stderr, "openworker: interrupted; the command was stopped")
		return exitError{130}
	}
	if res.Error != "" {
		return errors.New(res.Error)
	}
	return exitError{res.ExitCode}
}

var sessionReadCommand = command{
	name:     "session read",
	synopsis: "session read ID PATH [--offset N] [--limit N]",
	about:    "Prints a file as the session's commands see it, whole or the part asked for.",
	example:  "openworker session read 3f9c2a1b7d0e src/main.go --limit 4096",
	minArgs:  2, maxArgs: 2,
	needs: "a session ID (openworker session ls lists them) and a path",
}

func sessionRead(c *apiclient.Client, ctx context.Context, args []string) error {
	fs := newFlags(sessionReadCommand)
	off := fs.Int64("offset", 0, "start at this byte")
	limit := fs.Int64("limit", 0, "read at most this many bytes (default: to the end)")
	pos, _, err := parse(fs, sessionReadCommand, args)
	if err != nil {
		return err
	}
	if *off < 0 || *limit < 0 {
		return fmt.Errorf("--offset and --limit are 0 or more")
	}
	id, path := pos[0], pos[1]
	// One call reads at most runner.MaxRead: a larger read is made of several, in order.
	for at, left := *off, *limit; ; {
		n := int64(runner.MaxRead)
		if *limit > 0 {
			n = min(n, left)
		}
		res, err := c.Read(ctx, id, api.ReadRequest{Path: path, Offset: at, Limit: n})
		if err != nil {
			return err
		}
		if res.Error != "" {
			notices(res, false)
			return fmt.Errorf("read %s: %s", path, res.Error)
		}
		os.Stdout.Write(res.Content)
		got := int64(len(res.Content))
		at, left = at+got, left-got
		if got < n || (*limit > 0 && left <= 0) || at >= res.Size {
			return nil
		}
	}
}

var sessionWriteCommand = command{
	name:     "session write",
	synopsis: "session write ID PATH",
	about:    "Writes standard input to a file in the session (its folders are made as needed).",
	example:  "echo 'hello' | openworker session write 3f9c2a1b7d0e notes.txt",
	minArgs:  2, maxArgs: 2,
	needs: "a session ID (openworker session ls lists them) and a path; the content comes from standard input",
}

func sessionWrite(c *apiclient.Client, ctx context.Context, args []string) error {
	pos, _, err := parse(newFlags(sessionWriteCommand), sessionWriteCommand, args)
	if err != nil {
		return err
	}
	id, path := pos[0], pos[1]
	content, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	res, err := c.Write(ctx, id, api.WriteRequest{Path: path, Content: content})
	if err != nil {
		return err
	}
	if res.Error != "" {
		notices(res, false)
		return fmt.Errorf("write %s: %s", path, res.Error)
	}
	return nil
}

var sessionListCommand = command{
	name:     "session list",
	synopsis: "session list ID [PATH]",
	about:    "Lists a folder as the session's commands see it (default: the working folder).",
	example:  "openworker session list 3f9c2a1b7d0e src",
	minArgs:  1, maxArgs: 2,
	needs: "a session ID (openworker session ls lists them)",
}

func sessionList(c *apiclient.Client, ctx context.Context, args []string) error {
	pos, _, err := parse(newFlags(sessionListCommand), sessionListCommand, args)
	if err != nil {
		return err
	}
	id, path := pos[0], "."
	if len(pos) > 1 {
		path = pos[1]
	}
	res, err := c.List(ctx, id, api.ListRequest{Path: path})
	if err != nil {
		return err
	}
	if res.Error != "" {
		notices(res, false)
		return fmt.Errorf("list %s: %s", path, res.Error)
	}
	for _, e := range res.Entries {
		name := e.Name
		if e.Dir {
			name += "/"
		}
		if e.Link != "" {
			name += " -> " + e.Link
		}
		fmt.Printf("%s %10d %s\n", e.Mode, e.Size, name)
	}
	return nil
}

var sessionAddFolderCommand = command{
	name:     "session add-folder",
	synopsis: "session add-folder ID [--ro] DIR",
	about:    "Adds a folder to a running session. The sandbox is restarted with it (a wall is fixed when it starts), so shell state (working folder, exported variables) is lost.",
	example:  "openworker session add-folder 3f9c2a1b7d0e --ro ../data",
	minArgs:  2, maxArgs: 2,
	needs: "a session ID (openworker session ls lists them) and a folder",
}

func sessionAddFolder(c *apiclient.Client, ctx context.Context, args []string) error {
	fs := newFlags(sessionAddFolderCommand)
	ro := fs.Bool("ro", false, "add the folder read-only")
	pos, _, err := parse(fs, sessionAddFolderCommand, args)
	if err != nil {
		return err
	}
	dir, err := absPath(pos[1])
	if err != nil {
		return err
	}
	if _, err := c.AddFolder(ctx, pos[0], api.FolderRequest{Path: dir, Writable: !*ro}); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "openworker: %s added; the sandbox was restarted, so shell state (working folder, exported variables) is lost\n", dir)
	return nil
}

var sessionEndCommand = command{
	name: "session end", synopsis: "session end ID",
	about:   "Ends a session: everything behind its wall is killed and its private folder deleted.",
	example: "openworker session end 3f9c2a1b7d0e", minArgs: 1, maxArgs: 1,
	needs: "a session ID (openworker session ls lists them)",
}

func sessionEnd(c *apiclient.Client, ctx context.Context, args []string) error {
	pos, _, err := parse(newFlags(sessionEndCommand), sessionEndCommand, args)
	if err != nil {
		return err
	}
	return c.End(ctx, pos[0])
}

// notices prints on stderr what a result says besides its output. streamed says every byte
// of the output was already printed as it came, so none was left out.
func notices(res *session.Result, streamed bool) {
	if res.ShellStateLost {
		fmt.Fprintln(os.Stderr, "openworker: the sandbox was restarted before this command (a folder was added); shell state from earlier commands was lost")
	}
	if res.Result != nil {
		if !streamed && res.StdoutTruncated > 0 {
			fmt.Fprintf(os.Stderr, "openworker: %d bytes of standard output were left out\n", res.StdoutTruncated)
		}
		if res.TimedOut {
			fmt.Fprintln(os.Stderr, "openworker: the command was stopped (timeout)")
		}
		if res.StateRefused != "" {
			fmt.Fprintln(os.Stderr, "openworker: shell state not taken:", res.StateRefused)
		}
	}
	how := ""
	if p, err := config.Path(); err == nil {
		how = backend.SessionHowToAllow(p, res.Session)("HOST:PORT")
	}
	reportBlocked(res.Blocked, how)
}
