package agentshell

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/internal/randbytes"
)

// The variables openworker agent gives the host, which its shell reads.
const (
	// EnvSocket is the daemon's socket.
	EnvSocket = "OPENWORKER_SOCKET"
	// EnvSession is the session openworker agent started for the host; a shell whose session
	// is gone finds the one its owner started since (a daemon started again).
	EnvSession = "OPENWORKER_SESSION"
	// EnvRefused says why the host has no session: every command is refused with it.
	EnvRefused = "OPENWORKER_AGENT_REFUSED"
)

// passedVars are the few variables of the host's that its shell passes on to a command:
// how the host wants editors, pagers and colours. Everything else of the host's environment
// (its API keys, its sockets) stays outside; the command gets the session's.
var passedVars = []string{"GIT_EDITOR", "GIT_PAGER", "PAGER", "CLAUDECODE", "GEMINI_CLI", "NO_COLOR", "FORCE_COLOR", "COLORTERM", "TERM", "COLUMNS", "LINES"}

// errNoSession is a host whose session is not found.
var errNoSession = errors.New("this agent host has no OpenWorker session: start it with openworker agent HOST, " +
	"or check that the openworker MCP server of its configuration started (openworker agent --print-config HOST)")

// findWait is how long a shell waits for its host's session to appear: a host's MCP server
// (which starts the session in a configuration the person keeps) may still be starting when
// the host runs its first command.
const findWait = 20 * time.Second

// Options are where Main takes the world from, so that tests can give their own.
type Options struct {
	Args    []string // os.Args
	Getenv  func(string) string
	Stdin   *os.File
	Stdout  io.Writer
	Stderr  io.Writer
	Getwd   func() (string, error)
	Pid     int
	Signals chan os.Signal // nil: the process's SIGINT, SIGTERM and SIGHUP
	// FindWait bounds the wait for the host's session; 0 is findWait.
	FindWait time.Duration
}

// Main runs the command the host gave and returns the exit status for the shell.
func Main(o Options) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(o.Stderr, "openworker: "+format+"\n", a...)
		return 126
	}
	tmp := o.Getenv("CLAUDE_CODE_TMPDIR")
	if tmp == "" {
		tmp = nodeTmpDir(o.Getenv)
	}
	self, _ := os.Executable()
	executor := len(o.Args) == 3 && o.Args[1] == ExecutorFlag
	var inv Invocation
	var err error
	if !executor {
		if inv, err = Parse(o.Args[0], o.Args[1:], o.Getenv("SHELL"), tmp, self); err != nil {
			return fail("%v", err)
		}
	}
	if inv.Outside != nil {
		err := syscall.Exec(inv.Outside[0], inv.Outside, os.Environ())
		return fail("starting OpenWorker's MCP server %s: %v", inv.Outside[0], err)
	}
	if why := o.Getenv(EnvRefused); why != "" {
		return fail("nothing was run: this agent host's commands go through OpenWorker's sandbox, whose session could not start: %s", why)
	}
	socket := o.Getenv(EnvSocket)
	if socket == "" {
		if socket, err = defaultSocket(o.Getenv); err != nil {
			return fail("nothing was run: %v", err)
		}
	}
	dir, err := o.Getwd()
	if err != nil {
		return fail("nothing was run: the working folder cannot be found (%v)", err)
	}
	c := &client{socket: socket}
	wait := findWait
	if o.FindWait > 0 {
		wait = o.FindWait
	}
	if executor {
		// Codex starts its MCP servers once its executor is up: the executor cannot wait
		// for the session they would start, and starts it itself.
		wait = 0
	}
	// The session openworker agent named is used as it is, without asking first: a shell
	// call is on the host's every command's way. Should it be gone (the daemon was started
	// again), the host's new session is found by its owner.
	named := o.Getenv(EnvSession)
	id := named
	if id == "" || executor {
		id, err = findSession(c, named, o.Pid, wait)
	}
	if err != nil && executor && (errors.Is(err, errNoSession) || errors.Is(err, errNoDaemon)) {
		var hold io.Closer
		id, hold, err = startSession(c, parentOf(o.Pid), dir, o.Getenv)
		if err == nil {
			defer hold.Close()
		}
	}
	if err != nil {
		return fail("nothing was run: %v", err)
	}
	if executor {
		return runExecutor(o, c, id, o.Args[2], dir)
	}
	req := execRequest{Argv: append([]string{inv.Shell, "-c", inv.Command}, inv.Args...), Dir: dir, Apart: true, Tag: newTag()}
	for _, name := range passedVars {
		if v := o.Getenv(name); v != "" {
			req.Env = append(req.Env, name+"="+v)
		}
	}
	var stdin io.Reader
	if o.Stdin != nil && readable(o.Stdin) {
		stdin = o.Stdin
	}
	sigs := o.Signals
	if sigs == nil {
		sigs = make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(sigs)
		watchParent(sigs)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				// The host stops a command by signalling this shell: the command gets it.
				// Once the host kills this shell too, the connection's end interrupts it.
				_ = c.signal(id, req.Tag, signalWord(sig))
			}
		}
	}()
	var tail *trailer
	switch {
	case inv.CwdFile != "":
		tail = newCwdTrailer()
	case inv.PidsFile != "":
		tail = newPidsTrailer()
	}
	onChunk := func(stream string, data []byte) {
		switch {
		case stream == "stdout":
			_, _ = o.Stdout.Write(data)
		case tail != nil:
			_, _ = o.Stderr.Write(tail.write(data))
		default:
			_, _ = o.Stderr.Write(data)
		}
	}
	res, err := c.exec(id, req, stdin, onChunk)
	if named != "" && sessionGone(err) {
		if id, err = findSession(c, "", o.Pid, wait); err == nil {
			res, err = c.exec(id, req, stdin, onChunk)
		}
	}
	if tail != nil {
		_, _ = o.Stderr.Write(tail.end())
	}
	if err != nil {
		return fail("the command did not run to its end in the sandbox: %v", err)
	}
	if res.Error != "" {
		return fail("%s", res.Error)
	}
	if tail != nil && tail.found {
		if inv.CwdFile != "" {
			writeCwdFile(inv.CwdFile, tail.value)
		} else {
			writePidsFile(inv.PidsFile, tail.value)
		}
	}
	var sites []string
	var denied []bool
	for _, b := range res.Blocked {
		sites = append(sites, b.Host+":"+strconv.Itoa(b.Port))
		denied = append(denied, Denied(b.Reason))
	}
	if note := BlockedNote(sites, denied); note != "" {
		fmt.Fprintf(o.Stderr, "openworker: %s\n", note)
	}
	return res.ExitCode
}

// findSession is the session the host's commands go into: the one openworker agent named,
// while it runs, otherwise the one owned by the nearest of this process's ancestors (the
// host, or openworker agent around it), waiting a while for it to appear.
func findSession(c *client, named string, pid int, wait time.Duration) (string, error) {
	up := ancestors(pid)
	deadline := time.Now().Add(wait)
	for {
		list, err := c.sessions()
		if err != nil && !(errors.Is(err, errNoDaemon) && time.Now().Before(deadline)) {
			return "", err
		}
		for _, s := range list {
			if named != "" && s.ID == named {
				return named, nil
			}
		}
		if id, ok := ownedSession(list, up); ok {
			return id, nil
		}
		if time.Now().After(deadline) {
			return "", errNoSession
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sessionGone says err is a call that never reached its session: no daemon, or no such
// session in it.
func sessionGone(err error) bool {
	var ae *apiError
	return errors.Is(err, errNoDaemon) || errors.As(err, &ae) && (ae.status == 404 || ae.status == 410)
}

// readable says whether a command should get f as its standard input: a pipe, a file or a
// terminal the host writes to, not /dev/null or a socket nobody writes to.
func readable(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	m := fi.Mode()
	switch {
	case m&os.ModeNamedPipe != 0, m.IsRegular() && fi.Size() > 0:
		return true
	case m&os.ModeCharDevice != 0:
		return !isDevNull(fi)
	}
	return false
}

func isDevNull(fi os.FileInfo) bool {
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(fi, null)
}

func signalWord(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return "SIGTERM"
}

func newTag() string {
	b := make([]byte, 12)
	_ = randbytes.Read(b)
	return hex.EncodeToString(b)
}

// writeCwdFile writes the folder the command ended in where the host reads it back: a file
// in the host's temporary folder, never through a symbolic link.
func writeCwdFile(path, dir string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(dir + "\n")
}

// writePidsFile writes the command's background jobs where gemini-cli reads them back: a new
// file in the folder gemini-cli made for the command, never through a symbolic link.
func writePidsFile(path, pids string) {
	if fi, err := os.Lstat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(pids + "\n")
}

// nodeTmpDir is the temporary folder of a host that runs on Node.js (os.tmpdir()), where
// it makes the files it reads back.
func nodeTmpDir(getenv func(string) string) string {
	for _, name := range []string{"TMPDIR", "TMP", "TEMP"} {
		if v := getenv(name); v != "" {
			if len(v) > 1 {
				v = strings.TrimSuffix(v, "/")
			}
			return v
		}
	}
	return "/tmp"
}

// defaultSocket is the daemon's socket for this user, where the CLI's own commands find it.
func defaultSocket(getenv func(string) string) (string, error) {
	dir, err := stateDir(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "openworker.sock"), nil
}

// stateDir is OpenWorker's state folder, as core/config says where it is.
func stateDir(getenv func(string) string) (string, error) {
	home := getenv("HOME")
	if home == "" || !filepath.IsAbs(home) {
		return "", errors.New("the home folder is not known; set HOME, or start the host with openworker agent")
	}
	if isDarwin {
		return filepath.Join(home, "Library", "Application Support", "OpenWorker"), nil
	}
	if v := getenv("XDG_STATE_HOME"); v != "" && filepath.IsAbs(v) {
		return filepath.Join(v, "openworker"), nil
	}
	return filepath.Join(home, ".local", "state", "openworker"), nil
}
