// Package mcp is OpenWorker's stdio MCP server: an agent's shell and file tools that run in
// one session behind the wall, report the sites the proxy blocked, and ask for a site on a
// card — in the app, in `openworker cards --watch`, or through the agent's own client when
// it can ask its person (elicitation). It is built on the official Go SDK.
//
// It decides nothing itself: the wall, the proxy and the cards are the backend's, which it
// reaches through a Host. A tool's argument or a command's output never answers a card.
package mcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openworker/openworker/core/approvals"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/session"
	"github.com/openworker/openworker/core/termtext"
)

// Version is the server's version in the MCP handshake.
var Version = "dev"

// maxOutput bounds each of a command's standard output and error in a result.
const maxOutput = 64 << 10

// Server is the tools of one session.
type Server struct {
	host Host
	opts Options
	// shell serialises the calls that use the session's one shell: the SDK runs calls
	// concurrently, and a session carries out one at a time. session_info does not wait.
	shell sync.Mutex
	mcp   *sdk.Server
	// held are run_command results waiting for their SSH card's form (see askSSHCard).
	held heldResults
	// asked are the questions this server put to its client in a form, by the request state
	// it gave each: an answer is taken only for one of them, once.
	asked questions
	// ending is closed once the client has closed the server's input: a host stops its
	// server so, and kills it soon after, so an ask still waiting for the person ends.
	ending     chan struct{}
	endingOnce sync.Once
}

// InputEnded tells the server that its client closed its input: asks waiting for the person
// end at once, since the session ends with the server.
func (s *Server) InputEnded() {
	s.endingOnce.Do(func() { close(s.ending) })
}

// errEnding is the cause of an ask cut short by the end of the client's input.
var errEnding = errors.New("the session is ending: the agent's host stopped this server before the person answered")

// unlessEnding is ctx, ended also when the client's input ends.
func (s *Server) unlessEnding(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-s.ending:
			cancel(errEnding)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

// Options shape how the server asks its person.
type Options struct {
	// AskWait bounds how long request_site and web_fetch wait for a person on a card before
	// they answer "no answer yet" (the card stays up). Zero means DefaultAskWait.
	AskWait time.Duration
	// NoForms: never ask through the client's form, even when the client could; the person
	// answers on a card (the app, openworker cards). For headless hosts that decline or
	// cancel every form.
	NoForms bool
}

// DefaultAskWait is below the 60 s request timeout that common MCP clients give a tool call,
// so that the model reads "no answer yet" rather than a timeout.
const DefaultAskWait = 40 * time.Second

// New returns a server for host's session.
func New(host Host, opts Options) *Server {
	if opts.AskWait <= 0 {
		opts.AskWait = DefaultAskWait
	}
	s := &Server{host: host, opts: opts, asked: questions{m: map[string]question{}}, ending: make(chan struct{})}
	s.mcp = sdk.NewServer(&sdk.Implementation{Name: "openworker", Title: "OpenWorker sandbox", Version: Version}, &sdk.ServerOptions{
		Instructions: instructions,
	})
	addTools(s.mcp, s)
	// Outside the SDK's own, which puts a form to a client on an older revision with
	// elicitation/create and checks its answer against the form.
	s.mcp.AddReceivingMiddleware(formAnswerRefused)
	return s
}

// formAnswerRefused turns a form answer the SDK could not take (it does not fit the form's
// choices, or the client failed to answer) into the tool's result, which a client and its
// model can read, instead of a JSON-RPC error without a code: nothing was decided, and the
// card waits for the person.
func formAnswerRefused(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil || method != "tools/call" || ctx.Err() != nil || !strings.Contains(err.Error(), "fulfilling input request") {
			return res, err
		}
		return toolError("the answer to the form could not be taken (" + termtext.Short(err.Error(), 300) + "), so nothing was decided; " +
			"the card is waiting for the person, whose answer still applies to this session when it comes: ask again later to learn it"), nil
	}
}

// NewUnavailable returns a server whose session could not start: it completes the handshake
// and lists its tools, so that the agent's host shows the server, and answers every call, and
// its instructions, with why and what the person must change.
func NewUnavailable(why string) *Server {
	s := &Server{ending: make(chan struct{})}
	s.mcp = sdk.NewServer(&sdk.Implementation{Name: "openworker", Title: "OpenWorker sandbox", Version: Version}, &sdk.ServerOptions{
		Instructions: "OpenWorker's sandbox could not start, so none of these tools can run: " + why,
	})
	refuse := func(context.Context, *sdk.CallToolRequest, map[string]any) (*sdk.CallToolResult, any, error) {
		return toolError("OpenWorker's sandbox could not start, so nothing can run: " + why), nil, nil
	}
	for _, t := range tools {
		sdk.AddTool(s.mcp, t.tool(), refuse)
	}
	return s
}

// toolSpec is one tool as the client sees it.
type toolSpec struct {
	name, description string
	ann               sdk.ToolAnnotations
}

func (t toolSpec) tool() *sdk.Tool {
	ann := t.ann
	return &sdk.Tool{Name: t.name, Description: t.description, Annotations: &ann}
}

func ptr[T any](v T) *T { return &v }

// tools are the server's tools with the annotations true of them: hosts that run read-only
// tools without asking (Codex's exec) may run those; the rest change files, the allow list
// or the world outside.
var tools = []toolSpec{
	{"run_command", runCommandDescription, sdk.ToolAnnotations{Title: "Run a command in the sandbox", DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}},
	{"read_file", "Read a file in the session's folders (relative paths are from the working folder). Returns its text, or part of it with offset and limit (bytes). A file that is not UTF-8 text is said to be so: read it with encoding base64 to get its bytes whole.",
		sdk.ToolAnnotations{Title: "Read a file", ReadOnlyHint: true, OpenWorldHint: ptr(false)}},
	{"write_file", "Write a whole file in the session's writable folders, creating its folders as needed. With encoding base64, content is the file's bytes in base64.",
		sdk.ToolAnnotations{Title: "Write a file", DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)}},
	{"list_directory", "List a folder in the session's folders: names, sizes, kinds.", sdk.ToolAnnotations{Title: "List a folder", ReadOnlyHint: true, OpenWorldHint: ptr(false)}},
	{"request_site", requestSiteDescription, sdk.ToolAnnotations{Title: "Ask the person for a site", DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}},
	{"web_fetch", webFetchDescription, sdk.ToolAnnotations{Title: "Fetch a web page", DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}},
	{"session_info", "The sandbox this session runs in: its folders (as given and as resolved), the sites it may reach (marking session-only and shared-login ones), the sites the person denied, the network profile, the enforcement level, the approvals mode, and the ports of servers it started that the person's machine reaches (published: the port inside and host_port, at 127.0.0.1 on the person's machine), and the shared logins with how each reached the sandbox (secrets: stand-in, its files hold stand-ins that work only on its own hosts; copy; agent, SSH keys kept outside).",
		sdk.ToolAnnotations{Title: "Describe the sandbox", ReadOnlyHint: true, OpenWorldHint: ptr(false)}},
}

// ToolNames are the tools' names, for help texts.
func ToolNames() []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.name)
	}
	return out
}

func spec(name string) *sdk.Tool {
	for _, t := range tools {
		if t.name == name {
			return t.tool()
		}
	}
	panic("mcp: no tool " + name)
}

func addTools(m *sdk.Server, s *Server) {
	sdk.AddTool(m, spec("run_command"), s.runCommand)
	sdk.AddTool(m, spec("read_file"), s.readFile)
	sdk.AddTool(m, spec("write_file"), s.writeFile)
	sdk.AddTool(m, spec("list_directory"), s.listDirectory)
	sdk.AddTool(m, spec("request_site"), s.requestSite)
	sdk.AddTool(m, spec("web_fetch"), s.webFetch)
	sdk.AddTool(m, spec("session_info"), s.sessionInfo)
}

// SDK is the underlying SDK server, to add tools to or run.
func (s *Server) SDK() *sdk.Server { return s.mcp }

// Run serves on t until the client disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error { return s.mcp.Run(ctx, t) }

const instructions = `These tools run commands and touch files inside OpenWorker's sandbox. Only the session's folders exist there; the network goes through an allow-list proxy. When a command fails because a site was blocked, the result names it: ask for it with request_site and a reason the person can judge. Only the person opens a site. Do not try to get around the proxy or the wall.`

const runCommandDescription = `Run a shell command in the session's sandbox (sh -c). The working folder and exported variables carry over to the next command. Returns the exit code, standard output and error (bounded; a notice says what was left out, and whether output was not UTF-8 text), the duration, the enforcement level, the network profile, and the sites the proxy blocked while it ran. A blocked site is reachable only once the person allows it: ask with request_site and a reason. There is no terminal: commands that prompt get no answer.`

const requestSiteDescription = `Ask the person to allow a site (host and port) for this session, with the reason the card shows them. Use it after a command reported the site blocked. Returns the decision: session (allowed for this session), always (allowed for every session), denied, no answer yet (the card stays up; a later answer still applies — ask again later to learn it), or refused: full access (no cards in this mode; only the person can put a site on the list).`

const webFetchDescription = `Fetch a web page (http or https) from OpenWorker itself, outside the sandbox, under the same allow list as the session's commands. HTML comes back as readable text, other text as is, binary as its type and size. A site not on the list is asked for on a card (Once, This session, Always allow, Deny) with your reason; the result says what the person decided. A name that leads to a loopback, private or link-local address is refused; such an address is reached only when the allowed site is that literal address (127.0.0.1:8080, [::1]:3000, localhost:PORT).`

// WebFetchArgs are web_fetch's arguments.
type WebFetchArgs struct {
	URL    string `json:"url" jsonschema:"the http or https URL"`
	Reason string `json:"reason,omitempty" jsonschema:"why, shown to the person if the site must be asked for"`
}

func (s *Server) webFetch(ctx context.Context, req *sdk.CallToolRequest, in WebFetchArgs) (*sdk.CallToolResult, any, error) {
	if strings.TrimSpace(in.URL) == "" {
		return toolError("web_fetch needs a url"), nil, nil
	}
	// As request_site: a card where someone watches cards, otherwise the client's form when
	// it can ask its person, otherwise a card for the person. The question's answer comes in
	// a second call, which fetches again: a site answered This session or Always is on the
	// list by then, and one answered Once is taken by that fetch alone.
	wait := s.opts.AskWait
	elicit := s.canAsk(ctx, req)
	if elicit {
		wait = time.Millisecond
	}
	if len(req.Params.InputResponses) > 0 || req.Params.RequestState != "" {
		out, refused := s.takeFormAnswer(ctx, req, fetchFormAnswers)
		if refused != nil {
			return refused, nil, nil
		}
		if out.Decision == string(approvals.NoAnswerYet) {
			return toolError("not fetched: no answer yet (" + out.Site + ")\n" + out.Message), nil, nil
		}
		elicit = false
	}
	stop := s.progressWhile(ctx, req, wait, "waiting for the person to answer the card for "+in.URL)
	askCtx, endAsk := s.unlessEnding(ctx)
	res, err := s.host.Fetch(askCtx, in.URL, in.Reason, wait)
	endAsk()
	if context.Cause(askCtx) == errEnding {
		stop()
		return toolError("web_fetch: not fetched: " + errEnding.Error()), nil, nil
	}
	stop()
	if err != nil {
		return toolError("web_fetch: " + err.Error()), nil, nil
	}
	if res.Page == nil && res.Outcome == approvals.NoAnswerYet && elicit && res.Card != nil {
		return s.ask(res.Card.ID, res.Site, form(res.Site, in.Reason, "The coworker's web fetch wants to reach", fetchFormAnswers), fetchFormAnswers), nil, nil
	}
	if res.Page == nil {
		msg := fmt.Sprintf("not fetched: %s (%s)", res.Outcome, res.Site)
		if res.Message != "" {
			msg += "\n" + res.Message
		}
		return toolError(msg), nil, nil
	}
	p := res.Page
	var b strings.Builder
	fmt.Fprintf(&b, "%s — %d %s, %d bytes\n", p.URL, p.Status, p.ContentType, p.Size)
	if p.Title != "" {
		fmt.Fprintf(&b, "title: %s\n", p.Title)
	}
	b.WriteString("\n" + p.Text)
	if p.Truncated {
		b.WriteString("\n[cut at the size limit]")
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: b.String()}}}, nil, nil
}

// RunCommandArgs are run_command's arguments.
type RunCommandArgs struct {
	Command        string `json:"command" jsonschema:"the shell command to run, as for sh -c"`
	Cwd            string `json:"cwd,omitempty" jsonschema:"the working folder for this command and the next ones; default the current one"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"end the command after this many seconds; 0 means no limit"`
}

// RunCommandResult is run_command's structured result.
type RunCommandResult struct {
	ExitCode        int      `json:"exit_code"`
	Stdout          string   `json:"stdout"`
	Stderr          string   `json:"stderr"`
	StdoutTruncated int64    `json:"stdout_left_out,omitempty"`
	StderrTruncated int64    `json:"stderr_left_out,omitempty"`
	DurationMS      float64  `json:"duration_ms"`
	Enforcement     string   `json:"enforcement"`
	Network         string   `json:"network"`
	Blocked         []string `json:"blocked_sites,omitempty"`
	TimedOut        bool     `json:"timed_out,omitempty"`
	Interrupted     string   `json:"interrupted,omitempty"`
	ShellStateLost  bool     `json:"shell_state_lost,omitempty"`
	Reach           string   `json:"reach,omitempty"`
	Notice          string   `json:"notice,omitempty"`
}

func (s *Server) runCommand(ctx context.Context, req *sdk.CallToolRequest, in RunCommandArgs) (*sdk.CallToolResult, *RunCommandResult, error) {
	if strings.TrimSpace(in.Command) == "" {
		return toolError("command is empty; give a shell command, e.g. ls -la"), nil, nil
	}
	if in.TimeoutSeconds < 0 {
		return toolError("timeout_seconds is negative; give 0 (no limit) or more"), nil, nil
	}
	if len(req.Params.InputResponses) > 0 || req.Params.RequestState != "" {
		// The person's answer to an SSH card this server put to its client.
		return s.sshFormAnswered(ctx, req)
	}
	a := runner.ExecArgs{Command: in.Command, Dir: in.Cwd, Timeout: time.Duration(in.TimeoutSeconds) * time.Second, MaxOutput: maxOutput}
	var onChunk func(string, []byte)
	if token := req.Params.GetProgressToken(); token != nil {
		var progress float64
		onChunk = func(stream string, data []byte) {
			progress++
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: progress, Message: stream + ": " + string(data)})
		}
	}
	s.shell.Lock()
	res, err := s.host.Exec(ctx, a, onChunk)
	s.shell.Unlock()
	if err != nil {
		return toolError("the command could not be run: " + err.Error()), nil, nil
	}
	if res.Error != "" {
		return toolError(res.Error), nil, nil
	}
	out := &RunCommandResult{
		ExitCode: res.ExitCode, Stdout: string(res.Stdout), Stderr: string(res.Stderr),
		StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated,
		DurationMS: float64(res.Duration.Microseconds()) / 1000, Enforcement: string(res.Enforcement), Network: string(res.Network),
		TimedOut: res.TimedOut, Interrupted: res.Interrupted, ShellStateLost: res.ShellStateLost, Reach: res.Reach,
	}
	var notes []string
	var ask, denied []string
	for _, b := range res.Blocked {
		out.Blocked = append(out.Blocked, b.String())
		// The proxy's reason says when the person denied the site: asking again is no use.
		if strings.Contains(b.Reason, "was denied for this session") {
			denied = append(denied, b.String())
		} else {
			ask = append(ask, b.String())
		}
	}
	if len(ask) > 0 {
		notes = append(notes, "The sandbox's proxy blocked "+strings.Join(ask, ", ")+" while this command ran. If the task needs a site, ask the person with request_site and a reason; do not try to get around the proxy.")
	}
	if len(denied) > 0 {
		notes = append(notes, "The person denied "+strings.Join(denied, ", ")+" for this session: do not ask for it again, and do not try to get around the proxy.")
	}
	if res.ShellStateLost {
		notes = append(notes, "The sandbox was restarted before this command (a folder was added, or its daemon stopped and was started again): the working folder and exported variables of earlier commands are gone.")
	}
	if res.StdoutTruncated > 0 || res.StderrTruncated > 0 {
		notes = append(notes, fmt.Sprintf("Output was cut: %d bytes of standard output and %d of standard error were left out; redirect to a file and read parts of it.", res.StdoutTruncated, res.StderrTruncated))
	}
	if res.TimedOut {
		notes = append(notes, "The command was stopped by its timeout.")
	}
	if res.Interrupted != "" {
		notes = append(notes, "The command was interrupted ("+res.Interrupted+").")
	}
	if !utf8.Valid(res.Stdout) || !utf8.Valid(res.Stderr) {
		notes = append(notes, "The output is not UTF-8 text: bytes that are not were shown as U+FFFD. To get them whole, write the output to a file and read it with read_file and encoding base64.")
	}
	out.Notice = strings.Join(notes, " ")
	if ask := s.askSSHCard(ctx, req, out); ask != nil {
		return ask, nil, nil
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: commandText(out)}}}, out, nil
}

// commandText is the result as text, for clients that read only the content.
func commandText(r *RunCommandResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit code %d (%.0f ms, %s, network %s)\n", r.ExitCode, r.DurationMS, r.Enforcement, r.Network)
	if r.Stdout != "" {
		fmt.Fprintf(&b, "--- stdout\n%s", r.Stdout)
		if !strings.HasSuffix(r.Stdout, "\n") {
			b.WriteString("\n")
		}
	}
	if r.Stderr != "" {
		fmt.Fprintf(&b, "--- stderr\n%s", r.Stderr)
		if !strings.HasSuffix(r.Stderr, "\n") {
			b.WriteString("\n")
		}
	}
	if r.Notice != "" {
		fmt.Fprintf(&b, "--- note\n%s\n", r.Notice)
	}
	return b.String()
}

// ReadFileArgs are read_file's arguments.
type ReadFileArgs struct {
	Path     string `json:"path" jsonschema:"the file, absolute or relative to the working folder"`
	Offset   int64  `json:"offset,omitempty" jsonschema:"start at this byte"`
	Limit    int64  `json:"limit,omitempty" jsonschema:"read at most this many bytes"`
	Encoding string `json:"encoding,omitempty" jsonschema:"text (the default) or base64: the bytes whole, for files that are not UTF-8 text"`
}

func (s *Server) readFile(ctx context.Context, _ *sdk.CallToolRequest, in ReadFileArgs) (*sdk.CallToolResult, any, error) {
	if in.Offset < 0 || in.Limit < 0 {
		return toolError("offset and limit are 0 or more"), nil, nil
	}
	b64, err := base64Encoding(in.Encoding)
	if err != nil {
		return toolError(err.Error()), nil, nil
	}
	s.shell.Lock()
	res, err := s.host.Read(ctx, runner.ReadArgs{Path: in.Path, Offset: in.Offset, Limit: in.Limit})
	s.shell.Unlock()
	if r := fileError("read", in.Path, res, err); r != nil {
		return r, nil, nil
	}
	text := string(res.Content)
	switch {
	case b64:
		text = base64.StdEncoding.EncodeToString(res.Content)
	case !utf8.Valid(res.Content):
		// Shown as text, the file would come back corrupt from an edit: say so.
		text = strings.ToValidUTF8(text, "\uFFFD") + "\n[this file is not UTF-8 text: bytes that are not were shown as U+FFFD; read it with encoding base64 to get them whole, and write it back with encoding base64]"
	}
	if end := in.Offset + int64(len(res.Content)); end < res.Size && (in.Limit == 0 || int64(len(res.Content)) < in.Limit) {
		text += fmt.Sprintf("\n[read stopped at byte %d of %d: one call reads at most %d bytes; read on with offset %d]", end, res.Size, runner.MaxRead, end)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
}

// base64Encoding says whether a file tool's encoding argument asks for base64.
func base64Encoding(enc string) (bool, error) {
	switch enc {
	case "", "text", "utf-8", "utf8":
		return false, nil
	case "base64":
		return true, nil
	}
	return false, fmt.Errorf("encoding %q is not text or base64", enc)
}

// WriteFileArgs are write_file's arguments.
type WriteFileArgs struct {
	Path     string `json:"path" jsonschema:"the file, absolute or relative to the working folder"`
	Content  string `json:"content" jsonschema:"the whole new content"`
	Encoding string `json:"encoding,omitempty" jsonschema:"text (the default) or base64: content is the file's bytes in base64"`
}

func (s *Server) writeFile(ctx context.Context, _ *sdk.CallToolRequest, in WriteFileArgs) (*sdk.CallToolResult, any, error) {
	b64, err := base64Encoding(in.Encoding)
	if err != nil {
		return toolError(err.Error()), nil, nil
	}
	content := []byte(in.Content)
	if b64 {
		if content, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			return toolError("content is not base64: " + err.Error()), nil, nil
		}
	}
	s.shell.Lock()
	res, err := s.host.Write(ctx, runner.WriteArgs{Path: in.Path, Content: content})
	s.shell.Unlock()
	if r := fileError("write", in.Path, res, err); r != nil {
		return r, nil, nil
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("wrote %d bytes to %s", len(content), in.Path)}}}, nil, nil
}

// ListDirectoryArgs are list_directory's arguments.
type ListDirectoryArgs struct {
	Path string `json:"path" jsonschema:"the folder, absolute or relative to the working folder"`
}

func (s *Server) listDirectory(ctx context.Context, _ *sdk.CallToolRequest, in ListDirectoryArgs) (*sdk.CallToolResult, any, error) {
	if in.Path == "" {
		in.Path = "."
	}
	s.shell.Lock()
	res, err := s.host.List(ctx, runner.ListArgs{Path: in.Path})
	s.shell.Unlock()
	if r := fileError("list", in.Path, res, err); r != nil {
		return r, nil, nil
	}
	var b strings.Builder
	for _, e := range res.Entries {
		name := e.Name
		if e.Dir {
			name += "/"
		}
		if e.Link != "" {
			name += " -> " + e.Link
		}
		fmt.Fprintf(&b, "%s %10d %s\n", e.Mode, e.Size, name)
	}
	if b.Len() == 0 {
		b.WriteString("(empty)\n")
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: b.String()}}}, nil, nil
}

// fileError is a file tool's failure as a tool error the model can act on, or nil.
func fileError(tool, path string, res *session.Result, err error) *sdk.CallToolResult {
	switch {
	case err != nil:
		return toolError(fmt.Sprintf("%s %s: %v", tool, path, err))
	case res.Error != "":
		return toolError(fmt.Sprintf("%s %s: %s (only the session's folders exist in the sandbox; session_info lists them)", tool, path, res.Error))
	}
	return nil
}

// RequestSiteArgs are request_site's arguments.
type RequestSiteArgs struct {
	Host   string `json:"host" jsonschema:"the host name or address, e.g. registry.example.com"`
	Port   int    `json:"port,omitempty" jsonschema:"the port; default 443"`
	Reason string `json:"reason" jsonschema:"why the task needs the site, in words the person can judge"`
}

// RequestSiteResult is request_site's structured result.
type RequestSiteResult struct {
	Decision string `json:"decision"`
	Site     string `json:"site"`
	Card     string `json:"card,omitempty"`
	Message  string `json:"message,omitempty"`
}

// formAnswer is one answer the client's form offers, as the card's button says it.
type formAnswer struct{ title, answer string }

// The answers a command's site card offers, and a web fetch's.
var (
	formAnswers = []formAnswer{
		{"Allow for this session", string(approvals.Session)},
		{"Always allow", string(approvals.Always)},
		{"Deny", string(approvals.Deny)},
	}
	fetchFormAnswers = []formAnswer{
		{"Once", string(approvals.Once)},
		{"This session", string(approvals.Session)},
		{"Always allow", string(approvals.Always)},
		{"Deny", string(approvals.Deny)},
	}
)

func (s *Server) requestSite(ctx context.Context, req *sdk.CallToolRequest, in RequestSiteArgs) (*sdk.CallToolResult, *RequestSiteResult, error) {
	if strings.TrimSpace(in.Host) == "" || strings.TrimSpace(in.Reason) == "" {
		return toolError("request_site needs a host and a reason the person can judge"), nil, nil
	}
	if strings.ContainsAny(in.Host, ":/ ") && !strings.HasPrefix(in.Host, "[") {
		if in.Port == 0 && strings.Count(in.Host, ":") == 1 {
			// host:port in one field is what people write; take it.
		} else {
			return toolError(fmt.Sprintf("host %q is not a host name or address; give the port in port", in.Host)), nil, nil
		}
	}
	site := in.Host
	if in.Port != 0 {
		site = fmt.Sprintf("%s:%d", strings.Trim(in.Host, "[]"), in.Port)
		if strings.Contains(strings.Trim(in.Host, "[]"), ":") {
			site = fmt.Sprintf("[%s]:%d", strings.Trim(in.Host, "[]"), in.Port)
		}
	}
	// The person answers on the card where someone shows cards (the app, cards --watch);
	// otherwise through this client, when it can ask its person; otherwise the card waits
	// for a person. Everything before the question may run twice (a client on an older
	// revision has the SDK ask and call this again): asking again for the same site finds
	// the same pending card.
	wait := s.opts.AskWait
	elicit := s.canAsk(ctx, req)
	if elicit {
		wait = time.Millisecond
	}
	if len(req.Params.InputResponses) > 0 || req.Params.RequestState != "" {
		out, refused := s.takeFormAnswer(ctx, req, formAnswers)
		if refused != nil {
			return refused, nil, nil
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: decisionText(out)}}}, out, nil
	}
	stop := s.progressWhile(ctx, req, wait, "waiting for the person to answer the card for "+site)
	askCtx, endAsk := s.unlessEnding(ctx)
	ans, err := s.host.RequestSite(askCtx, site, in.Reason, wait)
	endAsk()
	if context.Cause(askCtx) == errEnding {
		stop()
		return toolError("request_site: no answer: " + errEnding.Error()), nil, nil
	}
	stop()
	if err != nil {
		return toolError("request_site: " + err.Error()), nil, nil
	}
	out := &RequestSiteResult{Decision: string(ans.Outcome), Site: ans.Site, Message: ans.Message}
	if ans.Card != nil {
		out.Card = ans.Card.ID
	}
	if ans.Outcome == approvals.NoAnswerYet && elicit && ans.Card != nil {
		return s.ask(ans.Card.ID, ans.Site, form(ans.Site, in.Reason, "A command in the sandbox wants to reach", formAnswers), formAnswers), nil, nil
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: decisionText(out)}}}, out, nil
}

func decisionText(out *RequestSiteResult) string {
	text := "decision: " + out.Decision + " (" + out.Site + ")"
	if out.Message != "" {
		text += "\n" + out.Message
	}
	return text
}

// canAsk says whether the person is asked through this client's form: nobody shows cards,
// the client can show a form, and forms are not turned off.
func (s *Server) canAsk(ctx context.Context, req *sdk.CallToolRequest) bool {
	return !s.opts.NoForms && canElicit(req) && s.host.CardWatchers(ctx) == 0
}

// canElicit says whether the client can ask its person with a form.
func canElicit(req *sdk.CallToolRequest) bool {
	p := req.Session.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// progressWhile tells a client that gave a progress token, now and then, that the call is
// waiting for a person, so that it neither times the call out as stuck nor leaves its person
// guessing; stop ends it.
func (s *Server) progressWhile(ctx context.Context, req *sdk.CallToolRequest, wait time.Duration, what string) (stop func()) {
	token := req.Params.GetProgressToken()
	if token == nil || wait < time.Second {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for n := 1.0; ; n++ {
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: n, Message: what})
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done) }
}

// ask puts the card's question to the client in a form. The request state the client must
// echo is a fresh random token this server keeps, never the card's ID: only an answer to a
// question this server asked, once, can answer a card.
func (s *Server) ask(card, site string, q *sdk.ElicitParams, answers []formAnswer) *sdk.CallToolResult {
	return &sdk.CallToolResult{
		InputRequests: sdk.InputRequestMap{"site": q},
		RequestState:  s.asked.put(question{card: card, site: site, answers: answers}),
	}
}

// form is the question the client shows its person: the card's answers.
func form(site, reason, asks string, answers []formAnswer) *sdk.ElicitParams {
	var titles []map[string]string
	for _, a := range answers {
		titles = append(titles, map[string]string{"const": a.answer, "title": a.title})
	}
	return &sdk.ElicitParams{
		Mode:    "form",
		Message: fmt.Sprintf("%s %s.\nThe coworker's reason: %s", asks, site, reason),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"decision": map[string]any{"type": "string", "title": "Allow " + site + "?", "oneOf": titles},
			},
			"required": []string{"decision"},
		},
	}
}

// takeFormAnswer answers the card of the question the request state names with what the
// person chose in the client's form, and says what it came to. An answer for a question
// this server never put to this client (a forged or replayed state, another session's card)
// answers nothing: it is refused, and reported for the audit trail. Cancel (the form was
// dismissed, or the host cannot show one) leaves the card to a person; decline, and anything
// not among the form's answers, is a deny.
func (s *Server) takeFormAnswer(ctx context.Context, req *sdk.CallToolRequest, answers []formAnswer) (*RequestSiteResult, *sdk.CallToolResult) {
	q, ok := s.asked.take(req.Params.RequestState, answers)
	if !ok || !canElicit(req) {
		s.host.FormRefused(ctx, fmt.Sprintf("a form answer with request state %q answers no question this server put to its client", termtext.Short(req.Params.RequestState, 80)))
		return nil, toolError("this form answer answers no question this server asked, so nothing was decided; only the person answers a card")
	}
	r, _ := req.Params.InputResponses["site"].(*sdk.ElicitResult)
	if r == nil || r.Action == "cancel" {
		return &RequestSiteResult{Decision: string(approvals.NoAnswerYet), Site: q.site, Card: q.card,
			Message: "the form was dismissed without a choice, so the card is waiting for the person; their answer still applies to this session when it comes: ask again later to learn it"}, nil
	}
	answer := string(approvals.Deny)
	if v, ok := r.Content["decision"].(string); ok && r.Action == "accept" {
		for _, a := range answers {
			if v == a.answer {
				answer = v
			}
		}
	}
	site, err := s.host.Answer(ctx, q.card, answer)
	if err != nil {
		return nil, toolError("answering the card: " + err.Error())
	}
	out := &RequestSiteResult{Decision: string(approvals.Denied), Site: site, Card: q.card}
	switch approvals.Answer(answer) {
	case approvals.Session:
		out.Decision = string(approvals.AllowedSession)
	case approvals.Always:
		out.Decision = string(approvals.AllowedAlways)
	case approvals.Once:
		out.Decision = string(approvals.AllowedOnce)
	}
	return out, nil
}

// question is a card's question this server put to its client, with the answers its form
// offered.
type question struct {
	card, site string
	answers    []formAnswer
}

// questions are the forms this server has put to its client and not yet had answered.
type questions struct {
	mu sync.Mutex
	m  map[string]question
}

// maxQuestions bounds the forms awaiting an answer; a client that never answers cannot
// grow the server.
const maxQuestions = 64

func (q *questions) put(asked question) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on the systems we run on
	}
	state := hex.EncodeToString(b[:])
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.m) >= maxQuestions {
		for k := range q.m {
			delete(q.m, k)
			break
		}
	}
	q.m[state] = asked
	return state
}

// take removes and returns the question state names, if it was asked with these answers.
func (q *questions) take(state string, answers []formAnswer) (question, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	got, ok := q.m[state]
	if !ok || len(got.answers) != len(answers) {
		return question{}, false
	}
	delete(q.m, state)
	return got, true
}

func (s *Server) sessionInfo(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, *Info, error) {
	info, err := s.host.Info(ctx)
	if err != nil {
		return toolError("session_info: " + err.Error()), nil, nil
	}
	b, _ := json.MarshalIndent(info, "", "  ")
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, &info, nil
}

func toolError(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
}
