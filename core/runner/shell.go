package runner

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// shell keeps what carries over from one exec to the next: the working folder and the
// exported variables. Each command runs in a fresh sh whose state is read back on exit.
type shell struct {
	// mu guards dir and env, which a command started beside the shell (ExecArgs.Apart)
	// reads while the shell's own command may be changing them.
	mu    sync.Mutex
	dir   string
	env   []string
	state string // file the wrapper writes the state to, in the private tmp

	children Children // nil: commands are started directly

	// groups are the process groups of the commands this shell started: each command leads
	// one, and what it leaves running there (`server &`) stays in it after it exits.
	groupsMu sync.Mutex
	groups   map[int]bool
}

// groupGrace is how long the groups left at the end get between SIGTERM and SIGKILL.
const groupGrace = time.Second

// stopGroups ends every process group this shell started that still has a process: SIGTERM,
// a grace for their traps, then SIGKILL. The runner calls it before it exits: on macOS,
// which has no process namespace, nothing else would end a command's background processes
// with the session (on Linux the PID namespace ends them too).
func (sh *shell) stopGroups() {
	sh.groupsMu.Lock()
	var live []int
	for g := range sh.groups {
		if syscall.Kill(-g, syscall.SIGTERM) == nil {
			live = append(live, g)
		}
	}
	sh.groups = nil
	sh.groupsMu.Unlock()
	deadline := time.Now().Add(groupGrace)
	for len(live) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		live = slices.DeleteFunc(live, func(g int) bool { return syscall.Kill(-g, 0) != nil })
	}
	for _, g := range live {
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
}

// wrapper comes before the command in sh -c's script, on its first line: its EXIT trap runs
// however the command ends (`exit N` too) and records the working folder and the exported
// variables for the next command, with the shell's builtins only (`command` skips any
// function the command defined by their names). The names it uses are not exported, so they
// never reach the command's environment. The command is the script's own text, not eval's:
// the shell says what went wrong as sh -c does ("sh: 2: nosuchcmd: not found"), with no word
// of the wrapper's. A command the shell cannot read runs nothing, the trap included, and
// leaves the state as it was.
const wrapper = `__openworker_state=$1; shift; trap '__openworker_rc=$?; { command pwd -P; command printf "\0"; command export -p; } >"$__openworker_state" 2>/dev/null; exit $__openworker_rc' EXIT; `

// plainCommand returns the words of a shell command made of nothing but plain words naming
// a program: letters, digits and - _ . / , : + @ % = (not in the first word, where it makes
// an assignment), separated by spaces or tabs. A shell starts such a command with exactly
// those words and changes nothing of its own. Anything else it reads otherwise: quotes,
// expansions ($ ` ~ * ? [ { !), operators, redirections, comments, other bytes, and a first
// word that is one of its keywords or builtins (shellWords).
func plainCommand(cmd string) ([]string, bool) {
	words := strings.FieldsFunc(cmd, func(r rune) bool { return r == ' ' || r == '\t' })
	if len(words) == 0 || strings.Contains(words[0], "=") || strings.Contains(shellWords, " "+words[0]+" ") {
		return nil, false
	}
	for _, w := range words {
		for i := 0; i < len(w); i++ {
			c := w[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_./,:+@%=", c) >= 0) {
				return nil, false
			}
		}
	}
	return words, true
}

// shellWords are the keywords and builtins of the shells /bin/sh is (dash, bash, zsh as
// sh), between spaces: a command that starts with one is the shell's to run. true and false
// are not among them: their programs do what the builtins do.
const shellWords = ` . : alias bg bind break builtin caller case cd chdir command compgen complete ` +
	`compopt continue coproc declare dirs disown do done echo elif else emulate enable esac eval exec exit ` +
	`export fc fg fi for function getopts hash help history if in jobs kill let local logout mapfile popd ` +
	`print printf pushd pwd read readarray readonly repeat return select set setopt shift shopt source ` +
	`suspend test then time times trap type typeset ulimit umask unalias unfunction unhash unset unsetopt ` +
	`until wait whence where which while `

// shellReadsEnv says the environment makes /bin/sh more than a plain POSIX shell: exported
// bash functions (which a command's first word may name), or a start-up file to read.
func shellReadsEnv(env []string) bool {
	return slices.ContainsFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "BASH_FUNC_") || strings.HasPrefix(kv, "BASH_ENV=") || strings.HasPrefix(kv, "ENV=")
	})
}

func newShell(cfg Config) *shell {
	tmp := envValue(cfg.Env, "TMPDIR")
	if !filepath.IsAbs(tmp) {
		tmp = os.TempDir()
	}
	dir := cfg.Dir
	if dir == "" {
		dir = "/"
	}
	return &shell{
		dir:      dir,
		env:      slices.Clone(cfg.Env),
		state:    filepath.Join(tmp, fmt.Sprintf(".openworker-shell-%d", os.Getpid())),
		children: cfg.Children,
	}
}

func (sh *shell) abs(p string) string {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return absIn(sh.dir, p)
}

// absIn is p made absolute from the folder dir.
func absIn(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

func (sh *shell) exec(id uint64, a *ExecArgs, send func(*Response), x *execIO) (*Result, error) {
	defer x.finish()
	j, res, err := sh.begin(id, a, send, x)
	if j == nil {
		return res, err
	}
	if x != nil && x.pump != nil {
		// Returns once the command has exited (or the core hung up); Wait then reaps it.
		_ = x.pump(j.cmd.Process.Pid)
	}
	return j.end(), nil
}

// execApart starts a command beside the shell (ExecArgs.Apart) and returns once it has
// started, or could not; done is called with its result, on another goroutine, once it has
// ended.
func (sh *shell) execApart(id uint64, a *ExecArgs, send func(*Response), x *execIO, done func(*Result, error)) {
	j, res, err := sh.begin(id, a, send, x)
	if j == nil {
		x.finish()
		done(res, err)
		return
	}
	go func() {
		res := j.end()
		x.finish()
		done(res, nil)
	}()
}

// job is a command that has started, and what its result is made of.
type job struct {
	sh             *shell
	cmd            *exec.Cmd
	stdout, stderr *capture
	// state: the command runs in the shell's wrapper, which writes the shell's state for
	// the next command to start from.
	state bool
	start time.Time

	mu        sync.Mutex
	timedOut  bool
	termTimer *time.Timer
	killTimer *time.Timer
}

// begin starts a's command: it returns the job, or, for a command that could not start, its
// result as a shell reports it (or an error for a call that cannot be carried out at all).
func (sh *shell) begin(id uint64, a *ExecArgs, send func(*Response), x *execIO) (*job, *Result, error) {
	sh.mu.Lock()
	dir, env := sh.dir, sh.env
	sh.mu.Unlock()
	if a.Dir != "" {
		dir = absIn(dir, a.Dir)
	}
	if a.Apart && len(a.Env) > 0 {
		env = append(slices.Clone(env), a.Env...)
	}
	max := a.MaxOutput
	if max <= 0 {
		max = DefaultMaxOutput
	}
	// Both bounded copies must fit one answer (maxMessage) with room to spare.
	max = min(max, maxMessage/4)
	stdout := &capture{max: max, stream: "stdout", id: id, send: send, live: a.Stream}
	stderr := &capture{max: max, stream: "stderr", id: id, send: send, live: a.Stream}
	// A command that cannot start fails as a shell reports it: a line on its error output
	// and the shell's status (127 not found, 126 found but not runnable), so that a caller
	// handles it like any failed command and the shell stays as it was.
	cannot := func(code int, msg string) (*job, *Result, error) {
		fmt.Fprintln(stderr, msg)
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return nil, &Result{ExitCode: code, Stderr: stderr.buf.Bytes(), Dir: sh.dir}, nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return cannot(126, fmt.Sprintf("openworker: the working folder %s does not exist inside the sandbox; use a folder of the session (cd to it, or give it with --rw)", dir))
	}
	if !a.Apart {
		sh.mu.Lock()
		sh.dir = dir
		sh.mu.Unlock()
	}
	// argv is the program and its arguments when there is no shell around them: given so,
	// or a shell command of plain words that names a program in PATH, which a shell would
	// start with those words and nothing of its own changed (a process less, and no state
	// to write and read back). A program not found is left to the shell, to say so.
	argv, path := a.Argv, ""
	if len(argv) == 0 {
		if words, ok := plainCommand(a.Command); ok && !shellReadsEnv(env) {
			// Found in PATH at an absolute place, or named by a path: a PATH entry that is
			// relative (".") is the shell's to search, from its own folder.
			if p, err := lookPath(words[0], env); err == nil && (filepath.IsAbs(p) || strings.Contains(words[0], "/")) {
				argv, path = words, p
			}
		}
	} else {
		var err error
		if path, err = lookPath(argv[0], env); err != nil {
			return cannot(127, err.Error())
		}
	}
	// A command beside the shell runs in a plain sh: nothing of it is carried over.
	inShell := func() *exec.Cmd {
		if a.Apart {
			return exec.Command("/bin/sh", "-c", a.Command)
		}
		return exec.Command("/bin/sh", "-c", wrapper+a.Command, "sh", sh.state)
	}
	var cmd *exec.Cmd
	if len(argv) > 0 {
		cmd = exec.Command(path, argv[1:]...)
		cmd.Args[0] = argv[0] // as a shell passes it: the name as given
	} else {
		cmd = inShell()
	}
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := x.stdin()
	if err != nil {
		return nil, nil, err
	}
	if in != nil {
		// Only the command keeps the read end: once it and its children have closed it, a
		// write gets EPIPE and the rest of the input is dropped.
		cmd.Stdin = in
		defer in.Close()
	} else if len(a.Stdin) > 0 {
		cmd.Stdin = bytes.NewReader(a.Stdin)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A command may leave a background process holding its output open; once the command
	// itself has exited, its output is no longer waited for past this.
	cmd.WaitDelay = 250 * time.Millisecond
	if !a.Apart {
		// A folder left in its place would keep the wrapper from writing the state.
		_ = os.RemoveAll(sh.state)
	}
	start := time.Now()
	err = sh.start(cmd)
	if err != nil && len(a.Argv) == 0 && len(argv) > 0 {
		// A file the kernel does not start (a script without #!) a shell runs itself:
		// the command goes to the shell after all, which also says why, in its words.
		argv = nil
		retry := inShell()
		retry.Dir, retry.Env, retry.SysProcAttr = cmd.Dir, cmd.Env, cmd.SysProcAttr
		retry.Stdin, retry.Stdout, retry.Stderr, retry.WaitDelay = cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.WaitDelay
		cmd = retry
		err = sh.start(cmd)
	}
	if err != nil {
		return cannot(startStatus(err), fmt.Sprintf("%s: %s", cmd.Args[0], startReason(err)))
	}
	if in != nil {
		in.Close()
	}
	sh.groupsMu.Lock()
	if sh.groups == nil {
		sh.groups = map[int]bool{}
	}
	// Groups whose every process has gone are dropped, so a long session keeps few.
	for g := range sh.groups {
		if syscall.Kill(-g, 0) != nil {
			delete(sh.groups, g)
		}
	}
	sh.groups[cmd.Process.Pid] = true
	sh.groupsMu.Unlock()
	x.started(cmd.Process.Pid)
	j := &job{sh: sh, cmd: cmd, stdout: stdout, stderr: stderr, state: !a.Apart && len(argv) == 0, start: start}
	if a.Timeout > 0 {
		pgid := cmd.Process.Pid
		j.termTimer = time.AfterFunc(a.Timeout, func() {
			j.mu.Lock()
			defer j.mu.Unlock()
			j.timedOut = true
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			j.killTimer = time.AfterFunc(killGrace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		})
	}
	return j, nil, nil
}

// end waits for the job's command and makes its result.
func (j *job) end() *Result {
	sh, cmd := j.sh, j.cmd
	err := cmd.Wait()
	if sh.children != nil {
		sh.children.Done(cmd.Process.Pid)
	}
	if j.termTimer != nil {
		j.termTimer.Stop()
	}
	j.mu.Lock()
	if j.killTimer != nil {
		j.killTimer.Stop()
	}
	timedOut := j.timedOut
	j.mu.Unlock()
	res := &Result{Duration: time.Since(j.start), TimedOut: timedOut}
	if timedOut {
		// Whatever the command left in its group goes with it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	res.ExitCode = exitCode(cmd, err)
	res.Stdout, res.StdoutTruncated = j.stdout.buf.Bytes(), j.stdout.dropped
	res.Stderr, res.StderrTruncated = j.stderr.buf.Bytes(), j.stderr.dropped
	if j.state {
		if why := sh.readState(); why != "" {
			res.StateRefused = why + "; the working folder and exported variables are kept from before this command"
		}
	}
	sh.mu.Lock()
	res.Dir = sh.dir
	sh.mu.Unlock()
	return res
}

func (sh *shell) start(cmd *exec.Cmd) error {
	if sh.children == nil {
		return cmd.Start()
	}
	return sh.children.Start(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
}

// maxState bounds the shell-state file: a working folder and an `export -p` listing, which
// the kernel's bound on a program's environment (a few MiB at most) keeps well below it.
const maxState = 8 << 20

// readState takes the working folder and environment the last command left, and returns
// why it did not when the state file is not what the wrapper writes. The file lies in the
// private tmp, where every command writes, and a command may replace the wrapper's EXIT
// trap: it is hostile input. So it is opened without following a symbolic link and without
// waiting for a writer (a FIFO), must be a regular file of bounded size, and every part of
// it must hold, or none is taken. No file at all (a command killed before its trap ran) is
// no refusal: the state stays as it was.
func (sh *shell) readState() string {
	b, why := readStateFile(sh.state)
	_ = os.RemoveAll(sh.state)
	if b == nil {
		return why
	}
	dir, exports, ok := strings.Cut(string(b), "\n\x00")
	if !ok {
		return "the shell-state file is not what the shell writes"
	}
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || strings.IndexByte(dir, 0) >= 0 {
		return fmt.Sprintf("the working folder it names (%.200q) is not a folder path", dir)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Sprintf("the working folder it names (%.200q) is not a folder that exists", dir)
	}
	all, err := parseExports(exports)
	if err != nil {
		return "its exported variables cannot be read: " + err.Error()
	}
	env := all[:0]
	for _, kv := range all {
		if !strings.HasPrefix(kv, "_=") && !strings.HasPrefix(kv, "SHLVL=") && !strings.HasPrefix(kv, "OLDPWD=") {
			env = append(env, kv)
		}
	}
	sh.mu.Lock()
	sh.dir, sh.env = dir, env
	sh.mu.Unlock()
	return ""
}

// readStateFile reads the state file as readState says, and returns nil and why not (""
// when there is no file).
func readStateFile(path string) ([]byte, string) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ""
	case errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK):
		// EMLINK is what some BSDs, macOS among them, return for O_NOFOLLOW on a link.
		return nil, "the shell-state file was replaced by a symbolic link"
	case err != nil:
		return nil, "the shell-state file cannot be opened: " + err.Error()
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, "the shell-state file cannot be examined: " + err.Error()
	case !fi.Mode().IsRegular():
		return nil, fmt.Sprintf("the shell-state file is not a regular file (%s)", fi.Mode().Type())
	case fi.Size() > maxState:
		return nil, fmt.Sprintf("the shell-state file is larger than %d MiB", maxState>>20)
	}
	// The size may change after Stat; what is read is bounded all the same.
	b, err := io.ReadAll(io.LimitReader(f, maxState+1))
	switch {
	case err != nil:
		return nil, "the shell-state file cannot be read: " + err.Error()
	case len(b) > maxState:
		return nil, fmt.Sprintf("the shell-state file is larger than %d MiB", maxState>>20)
	}
	return b, ""
}

func exitCode(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		return -1
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// envValue is name's value in env, the last one if it is there twice, as a program sees it.
func envValue(env []string, name string) string {
	for _, kv := range slices.Backward(env) {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// startStatus is the status a shell gives a command that it could not start.
func startStatus(err error) int {
	if errors.Is(err, syscall.ENOENT) {
		return 127
	}
	return 126
}

func startReason(err error) string {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return "no such file inside the sandbox"
	case errors.Is(err, syscall.EACCES):
		return "permission denied (is it executable? chmod +x, or run it with its interpreter)"
	case errors.Is(err, syscall.ENOEXEC):
		return "cannot execute: not a program this system runs (a script needs a #! line)"
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(envValue(env, "PATH")) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found in PATH inside the sandbox (a tool under your home folder is reachable only when its toolchain is switched on)", name)
}

// capture keeps up to max bytes of a stream, counts what it drops, and forwards chunks live
// when asked.
type capture struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	dropped int64
	stream  string
	id      uint64
	send    func(*Response)
	live    bool
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
		c.dropped += int64(len(p) - min(room, len(p)))
	} else {
		c.dropped += int64(len(p))
	}
	if c.live {
		c.send(&Response{ID: c.id, Stream: c.stream, Data: bytes.Clone(p)})
	}
	return len(p), nil
}
