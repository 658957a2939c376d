package main

import (
	"context"
	"fmt"
	"github.com/openworker/openworker/core/sandbox"
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
	"github.com/openworker/openworker/core/termtext"
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

Example:
  id=$(openworker session start --ro ../data)
  openworker session exec "$id" 'npm test'
  openworker session end "$id"
`

var sessionGroup = group{name: "session", usage: sessionUsage, subs: "start, exec, read, write, list, add-folder, end or ls"}

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
	if ok, err := sessionGroup.help(args); !ok {
		return err
	}
	sc, ok := sessionCommands[args[0]]
	if !ok {
		return sessionGroup.unknown(args[0])
	}
	state, err := config.StateDir()
	if err != nil {
		return err
	}
	return sc.run(apiclient.New(api.SocketPath(state)), context.Background(), args[1:])
}

var sessionStartCommand = command{
	name:     "session start",
	synopsis: "session start [--rw DIR]… [--ro DIR]… [--no-cwd] [--allow HOST[:PORT]]… [--network allowlist|open|none] [--provider P] [--local-servers] [--publish PORT]…",
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
	if err := f.checkFlags(sessionStartCommand.name); err != nil {
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
	info, err := c.Start(ctx, api.StartRequest{Provider: f.provider, Writable: rw, ReadOnly: ro, Dir: dir, Network: f.network, Allow: f.allow, GitMetadata: f.gitMetadata, LocalServers: f.localServers, Publish: f.publish, FreshCaches: f.freshCaches})
	if err != nil {
		return err
	}
	fmt.Println(info.ID)
	fmt.Fprintf(os.Stderr, "openworker: session %s started (%s) with %s\n", termtext.Escape(info.ID), wallWords(info.Enforcement, info.Network), termtext.Escape(strings.Join(info.Writable, ", ")))
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
	if len(ss) == 0 {
		fmt.Fprintln(os.Stderr, "openworker: no sessions running (openworker session start starts one)")
	}
	// A session a line, then its folders one a line: any character but a newline may be
	// in a folder's name, and a newline is shown escaped.
	for _, s := range ss {
		fmt.Printf("%s  %s, started %s\n", termtext.Escape(s.ID), wallWords(s.Enforcement, s.Network), s.Started.Format(time.Kitchen))
		for _, d := range s.Writable {
			fmt.Printf("  rw %s\n", termtext.Escape(d))
		}
		for _, d := range s.ReadOnly {
			fmt.Printf("  ro %s\n", termtext.Escape(d))
		}
		for _, line := range publishedLines(s.Published) {
			fmt.Printf("  %s\n", line)
		}
	}
	return nil
}

// publishedLines say, a port a line, what a session publishes on this machine's loopback.
func publishedLines(ps []session.Published) []string {
	var out []string
	for _, p := range ps {
		switch {
		case p.HostPort == 0:
			out = append(out, fmt.Sprintf("port %d: asked to be published; nothing listens there now", p.Port))
		case p.HostPort == p.Port:
			out = append(out, fmt.Sprintf("port %d published at 127.0.0.1:%d", p.Port, p.HostPort))
		default:
			out = append(out, fmt.Sprintf("port %d published at 127.0.0.1:%d (%d is taken on this machine)", p.Port, p.HostPort, p.Port))
		}
	}
	return out
}

// wallWords say what holds a session's commands: a direct session's list binds only the
// programs that choose to use its proxy, so it is not called an allow list.
func wallWords(enforcement, network string) string {
	if enforcement == string(sandbox.Direct) {
		return "direct: no sandbox, nothing enforced"
	}
	return termtext.Escape(enforcement) + " sandbox, " + termtext.Escape(network) + " network"
}

var sessionExecCommand = command{
	name:     "session exec",
	synopsis: "session exec ID [--timeout D] -- CMD [ARG…]   or   session exec ID [--timeout D] 'SHELL COMMAND'",
	about: `Runs a command in a session and exits with its status. Arguments after -- are the command
and its arguments, exactly as given, however many (no shell, so "foo bar" stays one argument
and -- "./bin dir/my tool" runs that program); a single argument without -- is a shell
command, whose cd and export carry over to the session's next commands.

Standard input is passed to the command; there is no terminal inside. Ctrl-C (or SIGTERM,
SIGHUP) is passed to the command (then SIGTERM and SIGKILL 2 s apart if it does not end) and
exits 130 (143, 129), saying so. One
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
	pos, dashdash, err := parse(fs, sessionExecCommand, args)
	if err != nil {
		return err
	}
	id, words := pos[0], pos[1:]
	req := api.ExecRequest{TimeoutMS: time.Duration(timeout).Milliseconds(), Stdin: true}
	// After --, the words are a program and its arguments whatever their count, as run takes
	// them: a single word is a program's name (one with spaces in its path, say), never text
	// a shell would expand. Only words given without -- are a shell command.
	switch {
	case dashdash:
		req.Argv = words
	case len(words) == 1:
		req.Command = words[0]
	default:
		return usagef("session exec", "session exec: give a shell command as one argument ('cd src && make') or a program and its arguments after -- (-- grep \"foo bar\" notes.txt), not %d words without --", len(words))
	}
	// Ctrl-C, SIGTERM and SIGHUP are sent to the command, as run sends them, whose output and
	// status still come; the daemon may be slow to answer, so a second one is sent too (it
	// kills the command).
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	var interrupted atomicSignal
	go func() {
		for sig := range sigs {
			interrupted.store(sig.(syscall.Signal))
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = c.Signal(sctx, id, api.SignalRequest{Signal: sigName(sig.(syscall.Signal))})
			cancel()
		}
	}()
	out := newCommandOutput()
	res, err := c.ExecStream(ctx, id, req, os.Stdin, out.write)
	rep := out.report()
	if err != nil {
		fmt.Fprintln(rep, "openworker:", termtext.Lines(err.Error()))
		return exitError{1}
	}
	notices(rep, res, true)
	if sig := interrupted.load(); res.Interrupted != "" || sig != 0 {
		if sig == 0 { // sent by another client: the result names it
			sig = map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGHUP": syscall.SIGHUP}[res.Interrupted]
			if sig == 0 {
				sig = syscall.SIGINT
			}
		}
		fmt.Fprintf(rep, "openworker: interrupted (%s); the command was stopped\n", sigName(sig))
		return exitError{128 + int(sig)}
	}
	if res.Error != "" {
		fmt.Fprintln(rep, "openworker:", termtext.Lines(res.Error))
		return exitError{1}
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
		return usagef("session read", "--offset and --limit are 0 or more")
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
			notices(os.Stderr, res, false)
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
		notices(os.Stderr, res, false)
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
		notices(os.Stderr, res, false)
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
		// A name is whatever a command made: shown escaped, one entry a line.
		fmt.Printf("%s %10d %s\n", termtext.Escape(e.Mode), e.Size, termtext.Escape(name))
	}
	return nil
}

var sessionAddFolderCommand = command{
	name:     "session add-folder",
	synopsis: "session add-folder ID [--ro] DIR",
	about: `Adds a folder to a running session. The sandbox is restarted with it (a wall is fixed when it
starts), so shell state (working folder, exported variables) is lost. While a command runs in
the session it is refused at once, as another exec is; interrupted, it leaves the session
running.`,
	example: "openworker session add-folder 3f9c2a1b7d0e --ro ../data",
	minArgs: 2, maxArgs: 2,
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
func notices(w io.Writer, res *session.Result, streamed bool) {
	if res.ShellStateLost {
		fmt.Fprintln(w, "openworker: the sandbox was restarted before this command (a folder was added); shell state from earlier commands was lost")
	}
	if res.Result != nil {
		if !streamed && res.StdoutTruncated > 0 {
			fmt.Fprintf(w, "openworker: %d bytes of standard output were left out\n", res.StdoutTruncated)
		}
		if res.TimedOut {
			fmt.Fprintln(w, "openworker: the command was stopped (timeout)")
		}
		if res.StateRefused != "" {
			fmt.Fprintln(w, "openworker: shell state not taken:", termtext.Escape(res.StateRefused))
		}
	}
	// The daemon says how each site opens in the session's state (after a Deny, with full
	// access, in a direct session), in the words its proxy answered the command with.
	reportBlocked(w, res.Blocked, "")
}
