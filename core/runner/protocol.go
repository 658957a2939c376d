// Package runner is the tool runner: the small process that runs inside the wall and carries
// out tool calls (exec, read, write, list) for a session, and the core's client for it.
//
// The two talk over a socketpair the runner inherits as fd 3, never over a socket file: a
// socket file in a writable folder could be replaced by a sandboxed command to impersonate the
// runner. Messages are frames in package wire's encoding (see wire.go). The runner is
// untrusted: it holds no keys and decides nothing, and everything it returns is treated as
// data by the core, which reads it with a decoder written for a sender that may lie.
package runner

import (
	"time"
)

// Tool names.
const (
	ToolExec  = "exec"
	ToolRead  = "read"
	ToolWrite = "write"
	ToolList  = "list"
	ToolProbe = "probe"
	// ToolSignal and ToolStdin are sent while an exec runs, for that exec: a signal for the
	// command's process group, and a piece of its standard input. They get no answer of
	// their own (stdin is acknowledged on the exec's stream, see Response.Ack).
	ToolSignal = "signal"
	ToolStdin  = "stdin"
)

// Request is one tool call sent to the runner.
type Request struct {
	ID    uint64      `json:"id"`
	Tool  string      `json:"tool"`
	Exec  *ExecArgs   `json:"exec,omitempty"`
	Read  *ReadArgs   `json:"read,omitempty"`
	Write *WriteArgs  `json:"write,omitempty"`
	List  *ListArgs   `json:"list,omitempty"`
	Probe *ProbeArgs  `json:"probe,omitempty"`
	Sig   *SignalArgs `json:"signal,omitempty"`
	In    *StdinArgs  `json:"stdin,omitempty"`
}

// SignalArgs sends a signal to the process group of the command that call Call started.
type SignalArgs struct {
	Call   uint64 `json:"call"`
	Signal int    `json:"signal"`
}

// StdinArgs is a piece of the standard input of the command that call Call started; EOF
// closes it. A command that has ended, or that stopped reading, drops what comes.
type StdinArgs struct {
	Call uint64 `json:"call"`
	Data []byte `json:"data,omitempty"`
	EOF  bool   `json:"eof,omitempty"`
}

// ExecArgs runs a shell command. Shell state (the working folder and exported variables)
// carries over from one exec to the next.
type ExecArgs struct {
	Command string `json:"command"`
	// Argv, when set, is run as is instead of Command through the shell.
	Argv []string `json:"argv,omitempty"`
	// Dir, when set, is the working folder for this command (and the next ones).
	Dir     string        `json:"dir,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
	// MaxOutput bounds each of stdout and stderr in the result; 0 means the default, and
	// no bound is above 16 MiB.
	MaxOutput int `json:"max_output,omitempty"`
	// Stream asks for output chunks as they come, besides the bounded copy in the result.
	Stream bool `json:"stream,omitempty"`
	// Stdin is given to the command; empty means /dev/null, unless StdinStream says it
	// comes in ToolStdin calls while the command runs.
	Stdin       []byte `json:"stdin,omitempty"`
	StdinStream bool   `json:"stdin_stream,omitempty"`
	// Apart runs the command beside the shell: it starts at once, even while another
	// command runs (an agent host's background command, a dev server), in Dir (default the
	// shell's folder) with the shell's variables and Env, and nothing it changes carries
	// over. Its result comes when it ends, in between the answers to other calls.
	Apart bool     `json:"apart,omitempty"`
	Env   []string `json:"env,omitempty"` // NAME=VALUE pairs added for an Apart command
}

// ReadArgs reads part of a file.
type ReadArgs struct {
	Path   string `json:"path"`
	Offset int64  `json:"offset,omitempty"`
	Limit  int64  `json:"limit,omitempty"`
}

// WriteArgs writes a whole file, creating parent folders.
type WriteArgs struct {
	Path    string `json:"path"`
	Content []byte `json:"content"`
}

// ListArgs lists a folder.
type ListArgs struct {
	Path string `json:"path"`
}

// ProbeArgs are the wall check's probes, run from inside.
type ProbeArgs struct {
	Writable []string `json:"writable,omitempty"`
	ReadOnly []string `json:"read_only,omitempty"`
	// Home is the real home folder, which must be neither listable nor readable.
	Home string `json:"home,omitempty"`
	// Unreachable are host:port addresses that must not accept a connection (the canary).
	Unreachable []string `json:"unreachable,omitempty"`
	// Reachable are host:port addresses that must accept one (the proxy).
	Reachable []string `json:"reachable,omitempty"`
	// Unwritable are files that must not open for writing and must lie on a read-only
	// mount (KernelSettings, inside a Linux sandbox). One that does not exist passes.
	Unwritable []string `json:"unwritable,omitempty"`
}

// Response is one message from the runner: an output chunk or the final result.
type Response struct {
	ID     uint64  `json:"id"`
	Stream string  `json:"stream,omitempty"` // "stdout" or "stderr" for a chunk
	Data   []byte  `json:"data,omitempty"`
	Result *Result `json:"result,omitempty"` // set on the last message of a call
	Error  string  `json:"error,omitempty"`  // the call failed; set on the last message
	// Ack counts bytes of streamed standard input the command's pipe took (or dropped, once
	// the command stopped reading), so that the core sends more only as they are taken.
	Ack int64 `json:"ack,omitempty"`
}

// Result is the outcome of one tool call.
type Result struct {
	// exec
	ExitCode        int           `json:"exit_code"`
	Duration        time.Duration `json:"duration,omitempty"`
	Stdout          []byte        `json:"stdout,omitempty"`
	Stderr          []byte        `json:"stderr,omitempty"`
	StdoutTruncated int64         `json:"stdout_truncated,omitempty"` // bytes left out
	StderrTruncated int64         `json:"stderr_truncated,omitempty"`
	TimedOut        bool          `json:"timed_out,omitempty"`
	Dir             string        `json:"dir,omitempty"` // the working folder after the command
	// StateRefused says why the shell state the command left (its working folder and
	// exported variables) was not taken: the file it is read back from was not what the
	// shell writes. The next command starts from the state before this one.
	StateRefused string `json:"shell_state_refused,omitempty"`
	// Idle says that once the command ended nothing else ran in the sandbox: whatever it
	// started had ended too. Only a runner that is its sandbox's init can tell; the others
	// leave it false.
	Idle bool `json:"idle,omitempty"`
	// read
	Content []byte `json:"content,omitempty"`
	Size    int64  `json:"size,omitempty"`
	// list
	Entries []Entry `json:"entries,omitempty"`
	// probe
	Checks []Check `json:"checks,omitempty"`
}

// Entry is one item of a folder listing.
type Entry struct {
	Name  string `json:"name"`
	Dir   bool   `json:"dir,omitempty"`
	Size  int64  `json:"size"`
	Mode  string `json:"mode"`
	Link  string `json:"link,omitempty"`
	MTime int64  `json:"mtime"`
}

// Check is the outcome of one probe of the wall check.
type Check struct {
	Name   string `json:"name"`   // e.g. "write /work/proj"
	Target string `json:"target"` // the folder or address probed
	OK     bool   `json:"ok"`     // the wall behaved as it must
	Detail string `json:"detail,omitempty"`
}
