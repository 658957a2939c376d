// Package scriptmodel is a scripted stand-in for a model service, for tests that drive a real
// agent host (Claude Code, Codex, gemini-cli) without a network. It serves, on 127.0.0.1 only:
//
//   - the Anthropic Messages API: POST /v1/messages, streaming (SSE, in the real API's event
//     order: message_start, content_block_start, ping, content_block_delta…,
//     content_block_stop, …, message_delta with the stop_reason, message_stop) and not
//     streaming; POST /v1/messages/count_tokens; GET /v1/models;
//   - the OpenAI Responses API: POST /v1/responses, streaming (response.created,
//     response.in_progress, response.output_item.added, the deltas, response.output_item.done,
//     …, response.completed) and not streaming; GET /v1/models;
//   - the Gemini API as gemini-cli calls it with an API key: POST
//     /v1beta/models/MODEL:streamGenerateContent?alt=sse (SSE of data-only events, each a
//     GenerateContentResponse: the text in pieces, then the function calls, the last with
//     finishReason STOP and usageMetadata), POST /v1beta/models/MODEL:generateContent (one
//     GenerateContentResponse) and :countTokens. A side request that asks for JSON
//     (generationConfig's responseMimeType application/json, or a response schema) gets
//     Config.SideText when it is a JSON object, otherwise {}.
//
// The same paths without the /v1 prefix are served too, for hosts whose base URL already ends
// in /v1. Anything else is recorded and answered 404 with an API-shaped error.
//
// A script is a list of turns. Each scripted request gets the next turn: one or more tool
// calls (Tool and Input, or Calls), optionally preceded by Text, with stop reason tool_use; or
// only Text, with stop reason end_turn. Once the script has run out, every scripted request
// gets the final text ExhaustedText.
//
// Which requests are scripted: by default (Config.Scripted nil), a request is scripted when it
// offers the model at least one tool (a non-empty "tools" array; for the Gemini API, at least
// one function declaration). Hosts make side requests that
// offer none, such as a session-title or summary request on a small model, or a one-token quota
// probe; those get Config.SideText and do not consume the script. (Claude Code 2.1.332 made
// none, in print or interactive mode: besides its model requests only HEAD /api/hello, which
// gets 200.) A subagent's requests do offer tools, so they take turns from the same script in
// the order they arrive: Claude Code starts an Agent subagent in the background, so the main
// loop's reply to the Agent call's result comes first, then the subagent's turns. Turn.Func
// makes a turn from earlier results, for inputs known only at run time.
//
// Every request is recorded (Requests) with its body, so a test can read the tools offered and
// the system prompt; ToolResults gathers what the host sent back for each tool call the script
// made, matched by call id.
package scriptmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Turn is one scripted model reply.
type Turn struct {
	// Text is the reply's text. Alone, it ends the agent's turn (stop reason end_turn);
	// with tool calls, it comes before them.
	Text string
	// Tool and Input are a single tool call, a shorthand for Calls with one entry.
	Tool  string
	Input any
	// Calls are further tool calls made in the same reply, after Tool's (parallel calls).
	Calls []Call
	// Func, when set, makes the turn when it is played, from the results of the script's
	// tool calls so far (those the request taking this turn carries included): for an input
	// that names what an earlier call returned, such as a background task's id. The other
	// fields are then ignored.
	Func func(results []ToolResult) Turn
}

// Call is one tool call.
type Call struct {
	// Tool is the tool's name as the host offered it (e.g. "Bash", "mcp__srv__tool", "shell").
	Tool string
	// Input is the call's input: anything encoding/json marshals to an object (a map, a
	// struct, json.RawMessage). Nil is sent as {}. For a Responses API custom (freeform) tool,
	// it is a string sent as it is.
	Input any
	// Custom makes the call a Responses API custom_tool_call (freeform input, as Codex's
	// apply_patch) instead of a function_call. The Messages API ignores it.
	Custom bool
	// Namespace is the Responses API function_call's "namespace", for a tool the host
	// offered inside a {"type":"namespace"} entry (Codex groups MCP tools so). The Messages
	// API ignores it.
	Namespace string
}

func (t Turn) calls() []Call {
	var cs []Call
	if t.Tool != "" {
		cs = append(cs, Call{Tool: t.Tool, Input: t.Input})
	}
	return append(cs, t.Calls...)
}

// ExhaustedText is the final text of every scripted request after the script has run out.
const ExhaustedText = "scriptmodel: the script has run out"

// DefaultSideText is the answer to side requests when Config.SideText is empty.
const DefaultSideText = "scripted side answer"

// Config is a server's script and rules; New covers the common case.
type Config struct {
	Turns []Turn
	// SideText answers requests that do not take a turn (DefaultSideText when empty).
	SideText string
	// Scripted decides whether a model request takes the next turn. Nil means: the request
	// offers at least one tool.
	Scripted func(r *Request) bool
}

// Request is one recorded HTTP request.
type Request struct {
	Seq    int    // 0-based order of arrival
	Method string // as received
	Path   string // URL path, without the query
	Query  string // raw query ("beta=true")
	Header http.Header
	Body   []byte
	// API is "messages" (Anthropic), "responses" (OpenAI), "gemini" (generateContent and
	// streamGenerateContent), or "" for anything else (count_tokens, model listing, unknown
	// paths).
	API string
	// Model is the body's "model" (for the Gemini API, the path's); Stream its "stream" (for
	// the Gemini API, whether it is streamGenerateContent).
	Model  string
	Stream bool
	// Tools are the names of the tools the request offers (for a Responses API tool without
	// a name, its type: "local_shell", "web_search"; for a tool inside a Responses API
	// namespace entry, "NAMESPACE.TOOL"; for the Gemini API, the function declarations').
	Tools []string
	// Turn is the index of the script turn this request got; -1 for a side request or a
	// non-model request; len(script) once the script had run out.
	Turn int
	// Received is when the request arrived, Done when its answer had been written.
	Received, Done time.Time
}

// Scripted reports whether the request took (or asked for, past the end) a script turn.
func (r Request) Scripted() bool { return r.Turn >= 0 }

// JSON decodes the request body into v.
func (r Request) JSON(v any) error { return json.Unmarshal(r.Body, v) }

// System returns the request's system prompt as plain text: the Messages API "system"
// (a string or text blocks, joined by newlines), the Responses API "instructions" or the
// Gemini API "systemInstruction" (its parts' texts, joined by newlines).
func (r Request) System() string {
	var b struct {
		System            json.RawMessage `json:"system"`
		Instructions      string          `json:"instructions"`
		SystemInstruction *geminiContent  `json:"systemInstruction"`
	}
	if json.Unmarshal(r.Body, &b) != nil {
		return ""
	}
	if b.Instructions != "" {
		return b.Instructions
	}
	if b.SystemInstruction != nil {
		var texts []string
		for _, p := range b.SystemInstruction.Parts {
			if p.Text != nil {
				texts = append(texts, *p.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return flattenContent(b.System)
}

// ToolResult is what the host sent back for one of the script's tool calls.
type ToolResult struct {
	// ID is the call's id: a tool_use id (toolu_…), a Responses call_id (call_…) or a Gemini
	// functionCall id (gcall_…).
	ID   string
	Tool string // the tool the script called
	// Content is the result as text: a string as it is, content blocks' texts joined by
	// newlines (non-text blocks appear as "[image]" and the like).
	Content string
	IsError bool            // the Messages API's is_error; a Gemini functionResponse with an error
	Raw     json.RawMessage // the whole tool_result / *_output item / functionResponse
	Request int             // Seq of the first request that carried it
}

// Server is a running scripted model service.
type Server struct {
	// URL is the base URL, http://127.0.0.1:PORT, without /v1: Claude Code takes it as
	// ANTHROPIC_BASE_URL; an OpenAI-style client wants URL+"/v1".
	URL string

	cfg Config
	srv *http.Server
	ln  net.Listener

	mu     sync.Mutex
	next   int
	reqs   []*Request
	calls  []issuedCall
	nextID int
	closed bool
}

type issuedCall struct {
	id, tool string
}

// New starts a server that plays turns, and closes it when tb's test ends.
func New(tb testing.TB, turns ...Turn) *Server {
	tb.Helper()
	return NewServer(tb, Config{Turns: turns})
}

// NewServer starts a server with cfg, and closes it when tb's test ends.
func NewServer(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	s, err := Start(cfg)
	if err != nil {
		tb.Fatalf("scriptmodel: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Start starts a server outside a test (a tool or a benchmark harness); Close stops it.
func Start(cfg Config) (*Server, error) {
	if cfg.SideText == "" {
		cfg.SideText = DefaultSideText
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), cfg: cfg, ln: ln}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln) //nolint:errcheck // ends with Close
	return s, nil
}

// Close stops the server; it may be called more than once.
func (s *Server) Close() {
	s.mu.Lock()
	done := s.closed
	s.closed = true
	s.mu.Unlock()
	if !done {
		s.srv.Close()
	}
}

// Requests returns copies of every request so far, in order of arrival.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = *r
	}
	return out
}

// ScriptedRequests returns the requests that took a turn (or came after the script ran out).
func (s *Server) ScriptedRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Scripted() {
			out = append(out, r)
		}
	}
	return out
}

// Remaining is the number of turns not yet played.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(0, len(s.cfg.Turns)-s.next)
}

// ToolResults returns, for each tool call the script has made whose result the host has sent
// back, that result, in the order the calls were made.
func (s *Server) ToolResults() []ToolResult {
	s.mu.Lock()
	calls := append([]issuedCall(nil), s.calls...)
	s.mu.Unlock()
	found := map[string]ToolResult{}
	for _, r := range s.Requests() {
		for _, tr := range toolResultsIn(r) {
			if _, ok := found[tr.ID]; !ok {
				tr.Request = r.Seq
				found[tr.ID] = tr
			}
		}
	}
	var out []ToolResult
	for _, c := range calls {
		if tr, ok := found[c.id]; ok {
			tr.Tool = c.tool
			out = append(out, tr)
		}
	}
	return out
}

// WaitDone waits until the script has been played to its end and the last turn's answer has
// been written, or within has passed; it reports whether it got there.
func (s *Server) WaitDone(within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		s.mu.Lock()
		done := s.next >= len(s.cfg.Turns)
		for _, r := range s.reqs {
			if r.Turn == len(s.cfg.Turns)-1 && r.Done.IsZero() {
				done = false
			}
		}
		s.mu.Unlock()
		if done {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *Server) serve(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(hr.Body, 256<<20))
	r := &Request{
		Method: hr.Method, Path: hr.URL.Path, Query: hr.URL.RawQuery,
		Header: hr.Header.Clone(), Body: body, Turn: -1, Received: time.Now(),
	}
	path := strings.TrimPrefix(hr.URL.Path, "/v1")
	var probe struct {
		Model  string            `json:"model"`
		Stream bool              `json:"stream"`
		Tools  []json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(body, &probe)
	r.Model, r.Stream = probe.Model, probe.Stream
	gModel, gMethod, isGemini := geminiPath(hr.URL.Path)
	for _, raw := range probe.Tools {
		var t struct {
			Name, Type string
			Tools      []struct{ Name string }
			Decls      []struct{ Name string } `json:"functionDeclarations"`
		}
		_ = json.Unmarshal(raw, &t)
		if isGemini {
			for _, d := range t.Decls {
				r.Tools = append(r.Tools, d.Name)
			}
			continue
		}
		if t.Name == "" {
			t.Name = t.Type
		}
		if t.Type == "namespace" {
			for _, sub := range t.Tools {
				r.Tools = append(r.Tools, t.Name+"."+sub.Name)
			}
			continue
		}
		r.Tools = append(r.Tools, t.Name)
	}
	isModel := hr.Method == http.MethodPost && (path == "/messages" || path == "/responses" ||
		isGemini && (gMethod == "generateContent" || gMethod == "streamGenerateContent"))
	switch {
	case isModel && isGemini:
		r.API, r.Model, r.Stream = "gemini", gModel, gMethod == "streamGenerateContent"
	case isModel:
		r.API = strings.TrimPrefix(path, "/")
	}

	s.mu.Lock()
	r.Seq = len(s.reqs)
	s.reqs = append(s.reqs, r)
	var turn Turn
	var ids []string
	if isModel {
		scripted := len(r.Tools) > 0
		if s.cfg.Scripted != nil {
			scripted = s.cfg.Scripted(r)
		}
		switch {
		case scripted && s.next < len(s.cfg.Turns):
			r.Turn, turn = s.next, s.cfg.Turns[s.next]
			s.next++
		case scripted:
			r.Turn, turn = len(s.cfg.Turns), Turn{Text: ExhaustedText}
		default:
			turn = Turn{Text: s.cfg.SideText}
		}
	}
	s.mu.Unlock()
	if turn.Func != nil {
		turn = turn.Func(s.ToolResults())
		turn.Func = nil
	}
	s.mu.Lock()
	if isModel {
		for _, c := range turn.calls() {
			s.nextID++
			var id string
			switch r.API {
			case "messages":
				id = fmt.Sprintf("toolu_%024d", s.nextID)
			case "gemini":
				id = fmt.Sprintf("gcall_%024d", s.nextID)
			default:
				id = fmt.Sprintf("call_%024d", s.nextID)
			}
			ids = append(ids, id)
			s.calls = append(s.calls, issuedCall{id: id, tool: c.Tool})
		}
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		r.Done = time.Now()
		s.mu.Unlock()
	}()

	model := r.Model
	if model == "" {
		model = "scriptmodel"
	}
	switch {
	case isModel && r.API == "messages":
		writeMessages(w, model, r.Stream, turn, ids)
	case isModel && r.API == "gemini":
		if r.Turn < 0 && wantsJSON(body) {
			turn = Turn{Text: jsonSideText(s.cfg.SideText)}
		}
		writeGemini(w, model, r.Stream, turn, ids)
	case isModel:
		writeResponses(w, model, r.Stream, turn, ids)
	case hr.Method == http.MethodPost && isGemini && gMethod == "countTokens":
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": len(body)/4 + 1})
	case hr.Method == http.MethodPost && path == "/messages/count_tokens":
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": len(body)/4 + 1})
	case hr.Method == http.MethodGet && path == "/models":
		writeJSON(w, http.StatusOK, modelList())
	case hr.Method == http.MethodHead || (hr.Method == http.MethodGet && (path == "" || path == "/")):
		w.WriteHeader(http.StatusOK)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{
			"type":  "error",
			"error": map[string]any{"type": "not_found_error", "message": "scriptmodel: no such endpoint: " + hr.Method + " " + hr.URL.Path},
		})
	}
}

// modelList answers both the Anthropic and the OpenAI model listing (each reads "data");
// "models" is the shape Codex's own model listing reads, empty.
func modelList() map[string]any {
	return map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"type": "model", "object": "model", "id": "scriptmodel", "display_name": "scriptmodel",
			"created_at": "2025-01-01T00:00:00Z", "created": 1735689600, "owned_by": "scriptmodel",
		}},
		"has_more": false, "first_id": "scriptmodel", "last_id": "scriptmodel",
		"models": []any{},
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// inputJSON is a call's input as the JSON text of an object.
func inputJSON(in any) string {
	switch v := in.(type) {
	case nil:
		return "{}"
	case json.RawMessage:
		return string(v)
	case []byte:
		return string(v)
	}
	b, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("scriptmodel: tool input does not marshal: %v", err))
	}
	return string(b)
}

// chunks splits s into pieces of at most n bytes (at least one piece), as the real APIs
// stream a tool call's arguments in several deltas.
func chunks(s string, n int) []string {
	if s == "" {
		return []string{""}
	}
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

type sse struct {
	w   http.ResponseWriter
	f   http.Flusher
	seq int
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// data sends an event that is only data, as the Gemini API does.
func (e *sse) data(data map[string]any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(data)
	fmt.Fprintf(e.w, "data: %s\r\n\r\n", bytes.TrimSpace(b.Bytes()))
	if e.f != nil {
		e.f.Flush()
	}
}

func (e *sse) send(event string, data map[string]any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(data)
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", event, bytes.TrimSpace(b.Bytes()))
	if e.f != nil {
		e.f.Flush()
	}
}

// --- Anthropic Messages API ---

func writeMessages(w http.ResponseWriter, model string, stream bool, turn Turn, ids []string) {
	msgID := fmt.Sprintf("msg_scripted%012d", time.Now().UnixNano()%1e12)
	calls := turn.calls()
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	outTokens := 1 + len(turn.Text)/4
	var content []map[string]any
	if turn.Text != "" || len(calls) == 0 {
		content = append(content, map[string]any{"type": "text", "text": turn.Text})
	}
	for i, c := range calls {
		in := inputJSON(c.Input)
		outTokens += 1 + len(in)/4
		content = append(content, map[string]any{"type": "tool_use", "id": ids[i], "name": c.Tool, "input": json.RawMessage(in)})
	}
	usage := map[string]any{"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": outTokens}
	if !stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model, "content": content,
			"stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}
	e := newSSE(w)
	e.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1},
	}})
	for i, blk := range content {
		if blk["type"] == "text" {
			e.send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			if i == 0 {
				e.send("ping", map[string]any{"type": "ping"})
			}
			for _, p := range chunks(turn.Text, 40) {
				e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": p}})
			}
		} else {
			e.send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{
				"type": "tool_use", "id": blk["id"], "name": blk["name"], "input": map[string]any{},
			}})
			if i == 0 {
				e.send("ping", map[string]any{"type": "ping"})
			}
			// The real API opens a tool call's input with an empty delta.
			e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": ""}})
			for _, p := range chunks(string(blk["input"].(json.RawMessage)), 64) {
				e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
			}
		}
		e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	e.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": outTokens}})
	e.send("message_stop", map[string]any{"type": "message_stop"})
}

// --- OpenAI Responses API ---

func writeResponses(w http.ResponseWriter, model string, stream bool, turn Turn, ids []string) {
	now := time.Now()
	respID := fmt.Sprintf("resp_scripted%012d", now.UnixNano()%1e12)
	calls := turn.calls()
	type item struct {
		added, done map[string]any
		kind        string // "message", "function_call", "custom_tool_call"
		text        string
	}
	var items []item
	if turn.Text != "" || len(calls) == 0 {
		id := fmt.Sprintf("msg_scripted%012d", now.UnixNano()%1e12)
		items = append(items, item{kind: "message", text: turn.Text,
			added: map[string]any{"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []any{}},
			done: map[string]any{"type": "message", "id": id, "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": turn.Text, "annotations": []any{}}}},
		})
	}
	for i, c := range calls {
		itemID := "fc_" + strings.TrimPrefix(ids[i], "call_")
		if c.Custom {
			in, ok := c.Input.(string)
			if !ok {
				in = inputJSON(c.Input)
			}
			itemID = "ctc_" + strings.TrimPrefix(ids[i], "call_")
			items = append(items, item{kind: "custom_tool_call", text: in,
				added: map[string]any{"type": "custom_tool_call", "id": itemID, "call_id": ids[i], "name": c.Tool, "input": "", "status": "in_progress"},
				done:  map[string]any{"type": "custom_tool_call", "id": itemID, "call_id": ids[i], "name": c.Tool, "input": in, "status": "completed"},
			})
			continue
		}
		args := inputJSON(c.Input)
		it := item{kind: "function_call", text: args,
			added: map[string]any{"type": "function_call", "id": itemID, "call_id": ids[i], "name": c.Tool, "arguments": "", "status": "in_progress"},
			done:  map[string]any{"type": "function_call", "id": itemID, "call_id": ids[i], "name": c.Tool, "arguments": args, "status": "completed"},
		}
		if c.Namespace != "" {
			it.added["namespace"], it.done["namespace"] = c.Namespace, c.Namespace
		}
		items = append(items, it)
	}
	output := make([]any, len(items))
	for i, it := range items {
		output[i] = it.done
	}
	response := func(status string, out []any) map[string]any {
		r := map[string]any{
			"id": respID, "object": "response", "created_at": now.Unix(), "status": status, "model": model,
			"output": out, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
			"error": nil, "incomplete_details": nil,
		}
		if status == "completed" {
			r["usage"] = map[string]any{
				"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15,
			}
		}
		return r
	}
	if !stream {
		writeJSON(w, http.StatusOK, response("completed", output))
		return
	}
	e := newSSE(w)
	send := func(event string, data map[string]any) {
		data["type"] = event
		data["sequence_number"] = e.seq
		e.seq++
		e.send(event, data)
	}
	send("response.created", map[string]any{"response": response("in_progress", []any{})})
	send("response.in_progress", map[string]any{"response": response("in_progress", []any{})})
	for i, it := range items {
		id := it.added["id"]
		send("response.output_item.added", map[string]any{"output_index": i, "item": it.added})
		switch it.kind {
		case "message":
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			send("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": part})
			for _, p := range chunks(it.text, 40) {
				send("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": p, "logprobs": []any{}})
			}
			send("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": it.text, "logprobs": []any{}})
			send("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": it.text, "annotations": []any{}}})
		case "function_call":
			for _, p := range chunks(it.text, 64) {
				send("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": p})
			}
			send("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": it.text})
		case "custom_tool_call":
			for _, p := range chunks(it.text, 64) {
				send("response.custom_tool_call_input.delta", map[string]any{"item_id": id, "output_index": i, "delta": p})
			}
			send("response.custom_tool_call_input.done", map[string]any{"item_id": id, "output_index": i, "input": it.text})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": it.done})
	}
	send("response.completed", map[string]any{"response": response("completed", output)})
}

// --- Gemini API ---

// geminiPath splits a Gemini API path, /v1beta/models/MODEL:METHOD (the version may be v1 or
// v1alpha too), into its model and method.
func geminiPath(p string) (model, method string, ok bool) {
	rest, found := strings.CutPrefix(p, "/")
	if !found {
		return "", "", false
	}
	version, rest, found := strings.Cut(rest, "/")
	if !found || !strings.HasPrefix(version, "v1") {
		return "", "", false
	}
	rest, found = strings.CutPrefix(rest, "models/")
	if !found {
		return "", "", false
	}
	model, method, found = strings.Cut(rest, ":")
	if !found || model == "" || strings.Contains(model, "/") {
		return "", "", false
	}
	return model, method, true
}

// geminiContent and geminiPart are the Gemini API's Content and Part, as far as they are read
// here.
type (
	geminiContent struct {
		Role  string       `json:"role"`
		Parts []geminiPart `json:"parts"`
	}
	geminiPart struct {
		Text             *string         `json:"text"`
		FunctionResponse json.RawMessage `json:"functionResponse"`
	}
)

// wantsJSON says whether a Gemini request asks for a JSON answer (gemini-cli's model router
// and next-speaker check do).
func wantsJSON(body []byte) bool {
	var b struct {
		GenerationConfig struct {
			ResponseMimeType   string          `json:"responseMimeType"`
			ResponseSchema     json.RawMessage `json:"responseSchema"`
			ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		} `json:"generationConfig"`
	}
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	g := b.GenerationConfig
	return g.ResponseMimeType == "application/json" || len(g.ResponseSchema) > 0 || len(g.ResponseJSONSchema) > 0
}

// jsonSideText is the side text when it is a JSON object, otherwise {}.
func jsonSideText(side string) string {
	var obj map[string]any
	if json.Unmarshal([]byte(side), &obj) == nil {
		return side
	}
	return "{}"
}

func writeGemini(w http.ResponseWriter, model string, stream bool, turn Turn, ids []string) {
	calls := turn.calls()
	usage := map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 1 + len(turn.Text)/4, "totalTokenCount": 11 + len(turn.Text)/4}
	response := func(parts []any, last bool) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		r := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": fmt.Sprintf("scripted%012d", time.Now().UnixNano()%1e12)}
		if last {
			cand["finishReason"] = "STOP"
			r["usageMetadata"] = usage
		}
		return r
	}
	var callParts []any
	for i, c := range calls {
		callParts = append(callParts, map[string]any{"functionCall": map[string]any{"id": ids[i], "name": c.Tool, "args": json.RawMessage(inputJSON(c.Input))}})
	}
	if !stream {
		var parts []any
		if turn.Text != "" || len(calls) == 0 {
			parts = append(parts, map[string]any{"text": turn.Text})
		}
		writeJSON(w, http.StatusOK, response(append(parts, callParts...), true))
		return
	}
	// The real API streams text in pieces, each an answer of its own; a function call comes
	// whole, and the last answer carries the finish reason and the usage.
	var pieces [][]any
	if turn.Text != "" || len(calls) == 0 {
		for _, p := range chunks(turn.Text, 40) {
			pieces = append(pieces, []any{map[string]any{"text": p}})
		}
	}
	if len(callParts) > 0 {
		pieces = append(pieces, callParts)
	}
	e := newSSE(w)
	for i, parts := range pieces {
		e.data(response(parts, i == len(pieces)-1))
	}
}

// --- reading tool results back ---

// toolResultsIn finds the tool results a model request carries: Messages API tool_result
// blocks in user messages, Responses API function_call_output / custom_tool_call_output items,
// Gemini API functionResponse parts.
func toolResultsIn(r Request) []ToolResult {
	var out []ToolResult
	switch r.API {
	case "messages":
		var b struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if json.Unmarshal(r.Body, &b) != nil {
			return nil
		}
		for _, m := range b.Messages {
			var blocks []json.RawMessage
			if json.Unmarshal(m.Content, &blocks) != nil {
				continue
			}
			for _, raw := range blocks {
				var tr struct {
					Type      string          `json:"type"`
					ToolUseID string          `json:"tool_use_id"`
					Content   json.RawMessage `json:"content"`
					IsError   bool            `json:"is_error"`
				}
				if json.Unmarshal(raw, &tr) != nil || tr.Type != "tool_result" {
					continue
				}
				out = append(out, ToolResult{ID: tr.ToolUseID, Content: flattenContent(tr.Content), IsError: tr.IsError, Raw: raw})
			}
		}
	case "responses":
		var b struct {
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal(r.Body, &b) != nil {
			return nil
		}
		var items []json.RawMessage
		if json.Unmarshal(b.Input, &items) != nil {
			return nil
		}
		for _, raw := range items {
			var it struct {
				Type   string          `json:"type"`
				CallID string          `json:"call_id"`
				Output json.RawMessage `json:"output"`
			}
			if json.Unmarshal(raw, &it) != nil || !strings.HasSuffix(it.Type, "_output") || it.CallID == "" {
				continue
			}
			out = append(out, ToolResult{ID: it.CallID, Content: flattenContent(it.Output), Raw: raw})
		}
	case "gemini":
		var b struct {
			Contents []geminiContent `json:"contents"`
		}
		if json.Unmarshal(r.Body, &b) != nil {
			return nil
		}
		for _, c := range b.Contents {
			for _, p := range c.Parts {
				if len(p.FunctionResponse) == 0 {
					continue
				}
				var fr struct {
					ID       string          `json:"id"`
					Response json.RawMessage `json:"response"`
				}
				if json.Unmarshal(p.FunctionResponse, &fr) != nil || fr.ID == "" {
					continue
				}
				content, isErr := geminiResponseText(fr.Response)
				out = append(out, ToolResult{ID: fr.ID, Content: content, IsError: isErr, Raw: p.FunctionResponse})
			}
		}
	}
	return out
}

// geminiResponseText is a functionResponse's response as text: gemini-cli sends a tool's
// result as {"output": TEXT} and a failure as {"error": TEXT}; anything else is its JSON.
func geminiResponseText(raw json.RawMessage) (string, bool) {
	var r struct {
		Output *string `json:"output"`
		Error  *string `json:"error"`
	}
	if json.Unmarshal(raw, &r) == nil {
		switch {
		case r.Error != nil:
			return *r.Error, true
		case r.Output != nil:
			return *r.Output, false
		}
	}
	return string(raw), false
}

// flattenContent turns a string, or an array of content blocks, into text.
func flattenContent(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	// Codex sends a function_call_output's output as {"content": "...", "success": …} in
	// some versions.
	var obj struct {
		Content json.RawMessage `json:"content"`
	}
	if raw[0] == '{' && json.Unmarshal(raw, &obj) == nil && len(obj.Content) > 0 {
		return flattenContent(obj.Content)
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		if b.Text != "" || strings.HasSuffix(b.Type, "text") {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}
