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
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openworker/openworker/core/approvals"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/session"
)

// Version is the server's version in the MCP handshake.
var Version = "dev"

// maxOutput bounds each of a command's standard output and error in a result.
const maxOutput = 64 << 10

// Server is the tools of one session.
type Server struct {
	host Host
	// shell serialises the calls that use the session's one shell: the SDK runs calls
	// concurrently, and a session carries out one at a time. session_info does not wait.
	shell sync.Mutex
	// lost says a restart lost the shell state, to tell the agent once.
	mcp *sdk.Server
}

// New returns a server for host's session.
func New(host Host) *Server {
	s := &Server{host: host}
	s.mcp = sdk.NewServer(&sdk.Implementation{Name: "openworker", Title: "OpenWorker sandbox", Version: Version}, &sdk.ServerOptions{
		Instructions: instructions,
	})
	sdk.AddTool(s.mcp, &sdk.Tool{Name: "run_command", Description: runCommandDescription}, s.runCommand)
	sdk.AddTool(s.mcp, &sdk.Tool{Name: "read_file", Description: "Read a file in the session's folders (relative paths are from the working folder). Returns its text, or part of it with offset and limit (bytes)."}, s.readFile)
	sdk.AddTool(s.mcp, &sdk.Tool{Name: "write_file", Description: "Write a whole file in the session's writable folders, creating its folders as needed."}, s.writeFile)
	sdk.AddTool(s.mcp, &sdk.Tool{Name: "list_directory", Description: "List a folder in the session's folders: names, sizes, kinds."}, s.listDirectory)
	sdk.AddTool(s.mcp, &sdk.Tool{Name: "request_site", Description: requestSiteDescription}, s.requestSite)
	sdk.AddTool(s.mcp, &sdk.Tool{Name: "web_fetch", Description: webFetchDescription}, s.webFetch)
	sdk.AddTool(s.mcp, &sdk.Tool{Name: "session_info", Description: "The sandbox this session runs in: its folders (as given and as resolved), the sites it may reach (marking session-only and shared-login ones), the sites the person denied, the network profile, the enforcement level and the approvals mode."}, s.sessionInfo)
	return s
}

// SDK is the underlying SDK server, to add tools to or run.
func (s *Server) SDK() *sdk.Server { return s.mcp }

// Run serves on t until the client disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error { return s.mcp.Run(ctx, t) }

const instructions = `These tools run commands and touch files inside OpenWorker's sandbox. Only the session's folders exist there; the network goes through an allow-list proxy. When a command fails because a site was blocked, the result names it: ask for it with request_site and a reason the person can judge. Do not try to get around the proxy or the wall.`

const runCommandDescription = `Run a shell command in the session's sandbox (sh -c). The working folder and exported variables carry over to the next command. Returns the exit code, standard output and error (bounded; a notice says what was left out), the duration, the enforcement level, the network profile, and the sites the proxy blocked while it ran. A blocked site is reachable only once the person allows it: ask with request_site and a reason. There is no terminal: commands that prompt get no answer.`

const requestSiteDescription = `Ask the person to allow a site (host and port) for this session, with the reason the card shows them. Use it after a command reported the site blocked. Returns the decision: session (allowed for this session), always (allowed for every session), denied, no answer yet (the card stays up; a later answer still applies), or refused: full access (the person must add it themselves in Settings).`

const webFetchDescription = `Fetch a web page (http or https) from OpenWorker itself, outside the sandbox, under the same allow list as the session's commands. HTML comes back as readable text, other text as is, binary as its type and size. A site not on the list is asked for on a card (Once, This session, Always allow, Deny) with your reason; the result says what the person decided. Loopback and private addresses are refused.`

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
	// it can ask its person, otherwise a card for openworker answer. The question's answer
	// comes in a second call, which fetches again: a site answered This session or Always
	// is on the list by then, and one answered Once is taken by that fetch alone.
	wait := siteWait
	elicit := s.host.CardWatchers(ctx) == 0 && canElicit(req)
	if elicit {
		wait = time.Millisecond
	}
	if len(req.Params.InputResponses) > 0 {
		if _, err := s.takeFormAnswer(ctx, req, fetchFormAnswers); err != nil {
			return toolError(err.Error()), nil, nil
		}
		elicit = false
	}
	res, err := s.host.Fetch(ctx, in.URL, in.Reason, wait)
	if err != nil {
		return toolError("web_fetch: " + err.Error()), nil, nil
	}
	if res.Page == nil && res.Outcome == approvals.NoAnswerYet && elicit && res.Card != nil {
		return &sdk.CallToolResult{
			InputRequests: sdk.InputRequestMap{"site": form(res.Site, in.Reason, "The coworker's web fetch wants to reach", fetchFormAnswers)},
			RequestState:  res.Card.ID,
		}, nil, nil
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
	Notice          string   `json:"notice,omitempty"`
}

func (s *Server) runCommand(ctx context.Context, req *sdk.CallToolRequest, in RunCommandArgs) (*sdk.CallToolResult, *RunCommandResult, error) {
	if strings.TrimSpace(in.Command) == "" {
		return toolError("command is empty; give a shell command, e.g. ls -la"), nil, nil
	}
	if in.TimeoutSeconds < 0 {
		return toolError("timeout_seconds is negative; give 0 (no limit) or more"), nil, nil
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
		TimedOut: res.TimedOut, Interrupted: res.Interrupted, ShellStateLost: res.ShellStateLost,
	}
	var notes []string
	for _, b := range res.Blocked {
		out.Blocked = append(out.Blocked, b.String())
	}
	if len(out.Blocked) > 0 {
		notes = append(notes, "The sandbox's proxy blocked "+strings.Join(out.Blocked, ", ")+" while this command ran. If the task needs a site, ask the person with request_site and a reason; do not try to get around the proxy.")
	}
	if res.ShellStateLost {
		notes = append(notes, "The sandbox was restarted before this command (a folder was added): the working folder and exported variables of earlier commands are gone.")
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
	out.Notice = strings.Join(notes, " ")
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
	Path   string `json:"path" jsonschema:"the file, absolute or relative to the working folder"`
	Offset int64  `json:"offset,omitempty" jsonschema:"start at this byte"`
	Limit  int64  `json:"limit,omitempty" jsonschema:"read at most this many bytes"`
}

func (s *Server) readFile(ctx context.Context, _ *sdk.CallToolRequest, in ReadFileArgs) (*sdk.CallToolResult, any, error) {
	if in.Offset < 0 || in.Limit < 0 {
		return toolError("offset and limit are 0 or more"), nil, nil
	}
	s.shell.Lock()
	res, err := s.host.Read(ctx, runner.ReadArgs{Path: in.Path, Offset: in.Offset, Limit: in.Limit})
	s.shell.Unlock()
	if r := fileError("read", in.Path, res, err); r != nil {
		return r, nil, nil
	}
	text := string(res.Content)
	if end := in.Offset + int64(len(res.Content)); end < res.Size && (in.Limit == 0 || int64(len(res.Content)) < in.Limit) {
		text += fmt.Sprintf("\n[read stopped at byte %d of %d: one call reads at most %d bytes; read on with offset %d]", end, res.Size, runner.MaxRead, end)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
}

// WriteFileArgs are write_file's arguments.
type WriteFileArgs struct {
	Path    string `json:"path" jsonschema:"the file, absolute or relative to the working folder"`
	Content string `json:"content" jsonschema:"the whole new content"`
}

func (s *Server) writeFile(ctx context.Context, _ *sdk.CallToolRequest, in WriteFileArgs) (*sdk.CallToolResult, any, error) {
	s.shell.Lock()
	res, err := s.host.Write(ctx, runner.WriteArgs{Path: in.Path, Content: []byte(in.Content)})
	s.shell.Unlock()
	if r := fileError("write", in.Path, res, err); r != nil {
		return r, nil, nil
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("wrote %d bytes to %s", len(in.Content), in.Path)}}}, nil, nil
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

// siteWait is how long request_site waits for a person on a card.
const siteWait = 60 * time.Second

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
	// for openworker answer. Everything before the question may run twice (a client on an
	// older revision has the SDK ask and call this again): asking again for the same site
	// finds the same pending card.
	wait := siteWait
	elicit := s.host.CardWatchers(ctx) == 0 && canElicit(req)
	if elicit {
		wait = time.Millisecond
	}
	if r := req.Params.InputResponses; len(r) > 0 {
		out, err := s.takeFormAnswer(ctx, req, formAnswers)
		if err != nil {
			return toolError(err.Error()), nil, nil
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "decision: " + out.Decision + " (" + out.Site + ")"}}}, out, nil
	}
	ans, err := s.host.RequestSite(ctx, site, in.Reason, wait)
	if err != nil {
		return toolError("request_site: " + err.Error()), nil, nil
	}
	out := &RequestSiteResult{Decision: string(ans.Outcome), Site: ans.Site, Message: ans.Message}
	if ans.Card != nil {
		out.Card = ans.Card.ID
	}
	if ans.Outcome == approvals.NoAnswerYet && elicit && ans.Card != nil {
		return &sdk.CallToolResult{
			InputRequests: sdk.InputRequestMap{"site": form(ans.Site, in.Reason, "A command in the sandbox wants to reach", formAnswers)},
			RequestState:  ans.Card.ID,
		}, nil, nil
	}
	if ans.Outcome == approvals.NoAnswerYet && ans.Card != nil {
		out.Message = fmt.Sprintf("The card is waiting for the person: they can answer it in the OpenWorker app, or with `openworker answer %s session|always|deny`. Its answer still applies to this session later.", ans.Card.ID)
	}
	text := "decision: " + out.Decision + " (" + out.Site + ")"
	if out.Message != "" {
		text += "\n" + out.Message
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, out, nil
}

// canElicit says whether the client can ask its person with a form.
func canElicit(req *sdk.CallToolRequest) bool {
	p := req.Session.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
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

// takeFormAnswer answers the card named by the request state with what the person chose in
// the client's form, and says what it came to. Declining, cancelling or anything unknown is
// a deny.
func (s *Server) takeFormAnswer(ctx context.Context, req *sdk.CallToolRequest, answers []formAnswer) (*RequestSiteResult, error) {
	card := req.Params.RequestState
	if card == "" {
		return nil, fmt.Errorf("the client answered a question this server did not ask")
	}
	answer := string(approvals.Deny)
	if r, ok := req.Params.InputResponses["site"].(*sdk.ElicitResult); ok && r.Action == "accept" {
		if v, ok := r.Content["decision"].(string); ok {
			for _, a := range answers {
				if v == a.answer {
					answer = v
				}
			}
		}
	}
	site, err := s.host.Answer(ctx, card, answer)
	if err != nil {
		return nil, fmt.Errorf("answering the card: %w", err)
	}
	out := &RequestSiteResult{Decision: string(approvals.Denied), Site: site, Card: card}
	switch approvals.Answer(answer) {
	case approvals.Session:
		out.Decision = string(approvals.AllowedSession)
	case approvals.Always:
		out.Decision = string(approvals.AllowedAlways)
	}
	return out, nil
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
