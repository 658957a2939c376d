package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/session"
)

const sessionUsage = `Usage (a running daemon is needed: openworker serve):
  openworker session start [--rw DIR]… [--ro DIR]… [--allow HOST[:PORT]]… [--network MODE] [--provider P]
                                       start a session; prints its ID
  openworker session exec ID [--timeout D] -- COMMAND…
                                       run a shell command; cd and export carry over to the next
  openworker session read ID PATH [--offset N] [--limit N]
  openworker session write ID PATH     (the content comes from standard input)
  openworker session list ID [PATH]
  openworker session add-folder ID [--ro] DIR
                                       add a folder; the sandbox restarts and shell state is lost
  openworker session end ID
  openworker session ls                the running sessions
`

func cmdSession(args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		fmt.Print(sessionUsage)
		return nil
	}
	state, err := config.StateDir()
	if err != nil {
		return err
	}
	c := api.NewClient(api.SocketPath(state))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sub, rest := args[0], args[1:]
	needID := func() (string, []string, error) {
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			return "", nil, fmt.Errorf("session %s needs a session ID (openworker session ls lists them)", sub)
		}
		return rest[0], rest[1:], nil
	}
	switch sub {
	case "start":
		fs := newFlags("session start", "openworker session start [--rw DIR]… [--ro DIR]… [--allow HOST[:PORT]]… [--network MODE] [--provider P]")
		var f sessionFlags
		f.register(fs, true)
		if err := parse(fs, rest); err != nil {
			return err
		}
		if len(f.rw) == 0 && len(f.ro) == 0 {
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			f.rw = multi{wd}
		}
		rw, err := absAll(f.rw)
		if err != nil {
			return err
		}
		ro, err := absAll(f.ro)
		if err != nil {
			return err
		}
		info, err := c.Start(ctx, api.StartRequest{Provider: f.provider, Writable: rw, ReadOnly: ro, Network: f.network, Allow: f.allow})
		if err != nil {
			return err
		}
		fmt.Println(info.ID)
		fmt.Fprintf(os.Stderr, "openworker: session %s started [%s, %s] with %s\n", info.ID, info.Enforcement, info.Network, strings.Join(info.Writable, ", "))
		return nil
	case "ls":
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
	case "exec":
		id, rest, err := needID()
		if err != nil {
			return err
		}
		fs := newFlags("session exec", "openworker session exec ID [--timeout D] -- COMMAND…")
		timeout := fs.Duration("timeout", 0, "end the command after this long; 0 means no limit")
		if err := parse(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			return fmt.Errorf("no command given; put it after --")
		}
		res, err := c.ExecStream(ctx, id, api.ExecRequest{Command: strings.Join(fs.Args(), " "), TimeoutMS: timeout.Milliseconds()}, func(stream string, data []byte) {
			if stream == "stderr" {
				os.Stderr.Write(data)
			} else {
				os.Stdout.Write(data)
			}
		})
		if err != nil {
			return err
		}
		notices(res)
		return exitError{res.ExitCode}
	case "read":
		id, rest, err := needID()
		if err != nil {
			return err
		}
		fs := newFlags("session read", "openworker session read ID PATH [--offset N] [--limit N]")
		off := fs.Int64("offset", 0, "start at this byte")
		limit := fs.Int64("limit", 0, "read at most this many bytes")
		if len(rest) == 0 {
			return fmt.Errorf("session read needs a path")
		}
		if err := parse(fs, rest[1:]); err != nil {
			return err
		}
		res, err := c.Read(ctx, id, api.ReadRequest{Path: rest[0], Offset: *off, Limit: *limit})
		if err != nil {
			return err
		}
		if res.Error != "" {
			notices(res)
			return fmt.Errorf("read %s: %s", rest[0], res.Error)
		}
		os.Stdout.Write(res.Content)
		return nil
	case "write":
		id, rest, err := needID()
		if err != nil {
			return err
		}
		if len(rest) != 1 {
			return fmt.Errorf("session write needs one path; the content comes from standard input")
		}
		content, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		res, err := c.Write(ctx, id, api.WriteRequest{Path: rest[0], Content: content})
		if err != nil {
			return err
		}
		if res.Error != "" {
			notices(res)
			return fmt.Errorf("write %s: %s", rest[0], res.Error)
		}
		return nil
	case "list":
		id, rest, err := needID()
		if err != nil {
			return err
		}
		path := "."
		if len(rest) > 0 {
			path = rest[0]
		}
		res, err := c.List(ctx, id, api.ListRequest{Path: path})
		if err != nil {
			return err
		}
		if res.Error != "" {
			notices(res)
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
	case "add-folder":
		id, rest, err := needID()
		if err != nil {
			return err
		}
		fs := newFlags("session add-folder", "openworker session add-folder ID [--ro] DIR")
		ro := fs.Bool("ro", false, "add the folder read-only")
		if err := parse(fs, rest); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return fmt.Errorf("session add-folder needs one folder")
		}
		dir, err := absPath(fs.Arg(0))
		if err != nil {
			return err
		}
		if _, err := c.AddFolder(ctx, id, api.FolderRequest{Path: dir, Writable: !*ro}); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "openworker: %s added; the sandbox was restarted, so shell state (working folder, exported variables) is lost\n", dir)
		return nil
	case "end":
		id, _, err := needID()
		if err != nil {
			return err
		}
		return c.End(ctx, id)
	}
	return fmt.Errorf("unknown session command %q\n%s", sub, sessionUsage)
}

// notices prints on stderr what a result says besides its output.
func notices(res *session.Result) {
	if res.ShellStateLost {
		fmt.Fprintln(os.Stderr, "openworker: the sandbox was restarted before this command (a folder was added); shell state from earlier commands was lost")
	}
	if res.Result != nil {
		if res.StdoutTruncated > 0 {
			fmt.Fprintf(os.Stderr, "openworker: %d bytes of standard output were left out\n", res.StdoutTruncated)
		}
		if res.TimedOut {
			fmt.Fprintln(os.Stderr, "openworker: the command was stopped (timeout)")
		}
	}
	reportBlocked(res.Blocked)
}
