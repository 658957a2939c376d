package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// multi is a flag that may be given more than once.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

// seconds is a duration flag that also takes a bare number of seconds ("5" is 5s), the way
// people write timeouts, and refuses a negative one.
type seconds time.Duration

func (d *seconds) String() string { return time.Duration(*d).String() }
func (d *seconds) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		n, nerr := strconv.ParseFloat(s, 64)
		if nerr != nil {
			return fmt.Errorf("%q is not a duration; write it as 30s, 5m or 1h30m, or a number of seconds", s)
		}
		v = time.Duration(n * float64(time.Second))
	}
	if v < 0 {
		return fmt.Errorf("%q is negative; a timeout is 0 (no limit) or more", s)
	}
	*d = seconds(v)
	return nil
}

// command describes a subcommand for its --help: what it does, its synopsis, an example.
type command struct {
	name     string // "session exec"
	synopsis string // after "openworker "
	about    string
	example  string
	// minArgs and maxArgs bound its positional arguments (maxArgs -1: any); needs says in
	// words what the first minArgs are, for the error when they are missing.
	minArgs, maxArgs int
	needs            string
	// commandAfter says its first positional argument is a command's name: it and everything
	// after it are the command's, as after "--" (run's CMD ARG…).
	commandAfter bool
}

// newFlags returns a flag set for c whose --help prints c's usage on standard output.
func newFlags(c command) *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: openworker %s\n\n", c.synopsis)
		if c.about != "" {
			fmt.Fprintf(out, "%s\n\n", c.about)
		}
		if c.example != "" {
			fmt.Fprintf(out, "Example:\n  %s\n\n", strings.ReplaceAll(c.example, "\n", "\n  "))
		}
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(out, "Flags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parse parses args, which may put flags before and after the positional arguments (a
// session ID, a path), up to a "--" after which everything is positional. --help prints the
// usage on standard output and is a success. It returns the positional arguments, checked
// against c's count; dashdash says whether a "--" was given.
func parse(fs *flag.FlagSet, c command, args []string) (positional []string, dashdash bool, err error) {
	usage := fs.Usage
	// The flag package prints the usage on any error; the whole of it is for --help only.
	// Its own error line is replaced by one in the CLI's style (see usageError).
	fs.Usage = func() {}
	out := fs.Output()
	fs.SetOutput(io.Discard)
	defer func() { fs.Usage = usage; fs.SetOutput(out) }()
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				fs.SetOutput(os.Stdout)
				usage()
				return nil, false, exitError{0}
			}
			return nil, false, usagef(c.name, "%s: %s", c.name, flagMessage(err))
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := len(args) - len(rest); c.commandAfter || consumed > 0 && args[consumed-1] == "--" {
			positional = append(positional, rest...)
			dashdash = consumed > 0 && args[consumed-1] == "--"
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	switch {
	case len(positional) < c.minArgs:
		return nil, false, usagef(c.name, "%s needs %s", c.name, c.needs)
	case c.maxArgs >= 0 && len(positional) > c.maxArgs:
		return nil, false, usagef(c.name, "%s: unexpected argument %q", c.name, positional[c.maxArgs])
	}
	return positional, dashdash, nil
}

// flagMessage is the flag package's error in the words and the double dashes that the CLI's
// help uses.
func flagMessage(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + name
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "--" + name + " needs a value"
	}
	// invalid value "V" for flag -NAME: WHY
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if i := strings.Index(rest, " for flag -"); i > 0 {
			value, tail := rest[:i], rest[i+len(" for flag -"):]
			if name, why, ok := strings.Cut(tail, ": "); ok {
				if strings.HasPrefix(why, "needs ") {
					return "--" + name + " " + why
				}
				return "--" + name + " " + value + ": " + why
			}
		}
	}
	return msg
}

// atomicSignal is the first signal a process got, read from another goroutine.
type atomicSignal struct{ v atomic.Int32 }

func (a *atomicSignal) store(sig syscall.Signal) { a.v.CompareAndSwap(0, int32(sig)) }
func (a *atomicSignal) load() syscall.Signal     { return syscall.Signal(a.v.Load()) }
