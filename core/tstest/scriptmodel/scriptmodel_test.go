package scriptmodel

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

type event struct {
	name string
	data map[string]any
}

// post sends body to s's path and returns the SSE events, or the JSON answer as one event
// named "json".
// send posts body as JSON to s's path, and fails the test unless the answer is 200.
func send(t *testing.T, s *Server, path string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("%s: status %d", path, resp.StatusCode)
	}
	return resp
}

func post(t *testing.T, s *Server, path string, body any) []event {
	t.Helper()
	resp := send(t, s, path, body)
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return []event{{"json", m}}
	}
	// As an SSE client does: fields gather until a blank line dispatches the event.
	var evs []event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var name, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if name == "" && data == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatalf("data of %s: %v (%q)", name, err, data)
			}
			if m["type"] != name {
				t.Fatalf("event %q carries type %v", name, m["type"])
			}
			evs = append(evs, event{name, m})
			name, data = "", ""
		case strings.HasPrefix(line, "event: "):
			if name != "" {
				t.Fatalf("event %q before %q was dispatched", line, name)
			}
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data += strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if name != "" || data != "" {
		t.Fatalf("stream ended inside event %q", name)
	}
	return evs
}

func names(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.name)
	}
	return out
}

var bashTool = []map[string]any{{"name": "Bash", "input_schema": map[string]any{"type": "object"}}}

func TestMessagesToolCallThenText(t *testing.T) {
	s := New(t,
		Turn{Tool: "Bash", Input: map[string]any{"command": "echo " + strings.Repeat("x", 100)}},
		Turn{Text: "done"},
	)
	evs := post(t, s, "/v1/messages?beta=true", map[string]any{
		"model": "claude-test", "stream": true, "tools": bashTool,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}},
	})
	got := names(evs)
	if got[0] != "message_start" || got[1] != "content_block_start" || got[len(got)-2] != "message_delta" || got[len(got)-1] != "message_stop" {
		t.Fatalf("event order: %v", got)
	}
	// The tool input arrives in several input_json_delta pieces that join to the input.
	var js strings.Builder
	for _, e := range evs {
		if e.name == "content_block_start" {
			cb := e.data["content_block"].(map[string]any)
			if cb["type"] != "tool_use" || cb["name"] != "Bash" || !strings.HasPrefix(cb["id"].(string), "toolu_") {
				t.Fatalf("content_block_start: %v", cb)
			}
		}
		if e.name == "content_block_delta" {
			d := e.data["delta"].(map[string]any)
			if d["type"] != "input_json_delta" {
				t.Fatalf("delta: %v", d)
			}
			js.WriteString(d["partial_json"].(string))
		}
	}
	var in map[string]any
	if err := json.Unmarshal([]byte(js.String()), &in); err != nil || !strings.HasPrefix(in["command"].(string), "echo xxx") {
		t.Fatalf("joined input %q: %v", js.String(), err)
	}
	md := evs[len(evs)-2].data["delta"].(map[string]any)
	if md["stop_reason"] != "tool_use" {
		t.Fatalf("stop_reason %v", md["stop_reason"])
	}
	id := evs[1].data["content_block"].(map[string]any)["id"].(string)

	// A side request (no tools) does not take a turn.
	side := post(t, s, "/v1/messages", map[string]any{"model": "claude-haiku", "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "title?"}}})
	if txt := side[3].data["delta"].(map[string]any)["text"]; txt != DefaultSideText {
		t.Fatalf("side answer: %v (%v)", txt, names(side))
	}
	if s.Remaining() != 1 {
		t.Fatalf("remaining %d", s.Remaining())
	}

	evs = post(t, s, "/v1/messages?beta=true", map[string]any{
		"model": "claude-test", "stream": true, "tools": bashTool,
		"messages": []any{
			map[string]any{"role": "user", "content": "hi"},
			map[string]any{"role": "user", "content": []any{map[string]any{
				"type": "tool_result", "tool_use_id": id, "is_error": true,
				"content": []any{map[string]any{"type": "text", "text": "refused"}, map[string]any{"type": "text", "text": "Exit code 1"}},
			}}},
		},
	})
	if got := names(evs); !reflect.DeepEqual(got, []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}) {
		t.Fatalf("text reply events: %v", got)
	}
	if evs[5].data["delta"].(map[string]any)["stop_reason"] != "end_turn" {
		t.Fatalf("final stop_reason: %v", evs[5].data)
	}
	trs := s.ToolResults()
	if len(trs) != 1 || trs[0].ID != id || trs[0].Tool != "Bash" || trs[0].Content != "refused\nExit code 1" || !trs[0].IsError || trs[0].Request != 2 {
		t.Fatalf("tool results: %+v", trs)
	}
	reqs := s.Requests()
	if len(reqs) != 3 || reqs[0].Turn != 0 || reqs[1].Turn != -1 || reqs[2].Turn != 1 || reqs[0].Query != "beta=true" ||
		!reflect.DeepEqual(reqs[0].Tools, []string{"Bash"}) || reqs[0].API != "messages" {
		t.Fatalf("requests: %+v", reqs)
	}
	if !s.WaitDone(time.Second) {
		t.Fatal("not done")
	}
	// Past the end of the script.
	evs = post(t, s, "/v1/messages", map[string]any{"stream": true, "tools": bashTool})
	if evs[3].data["delta"].(map[string]any)["text"] != ExhaustedText {
		t.Fatalf("exhausted: %v", evs[3].data)
	}
}

func TestMessagesNotStreamingAndParallelCalls(t *testing.T) {
	s := New(t, Turn{Text: "two at once", Tool: "Read", Input: map[string]any{"file_path": "/a"},
		Calls: []Call{{Tool: "Glob", Input: json.RawMessage(`{"pattern":"*"}`)}}})
	evs := post(t, s, "/v1/messages", map[string]any{"model": "m", "tools": bashTool})
	m := evs[0].data
	content := m["content"].([]any)
	if m["stop_reason"] != "tool_use" || len(content) != 3 || content[0].(map[string]any)["text"] != "two at once" ||
		content[2].(map[string]any)["name"] != "Glob" || content[2].(map[string]any)["input"].(map[string]any)["pattern"] != "*" {
		t.Fatalf("message: %v", m)
	}
}

func TestSideEndpoints(t *testing.T) {
	s := New(t)
	evs := post(t, s, "/v1/messages/count_tokens", map[string]any{"messages": []any{}})
	if _, ok := evs[0].data["input_tokens"]; !ok {
		t.Fatalf("count_tokens: %v", evs[0].data)
	}
	resp, err := http.Get(s.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"data"`) {
		t.Fatalf("models: %s", b)
	}
	resp, err = http.Get(s.URL + "/api/whatever")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown path: %d", resp.StatusCode)
	}
	if n := len(s.Requests()); n != 3 {
		t.Fatalf("%d requests recorded", n)
	}
}

func TestResponsesFunctionAndCustomCalls(t *testing.T) {
	s := New(t,
		Turn{Tool: "shell", Input: map[string]any{"command": []string{"bash", "-lc", "true"}},
			Calls: []Call{{Tool: "apply_patch", Input: "*** Begin Patch\n*** End Patch\n", Custom: true}}},
		Turn{Text: "all done"},
	)
	tools := []map[string]any{{"type": "function", "name": "shell"}, {"type": "custom", "name": "apply_patch"}, {"type": "web_search"},
		{"type": "namespace", "name": "mcp__ow__", "tools": []map[string]any{{"type": "function", "name": "read"}}}}
	evs := post(t, s, "/v1/responses", map[string]any{"model": "gpt-test", "stream": true, "tools": tools, "input": []any{}})
	got := names(evs)
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "response.output_item.done",
		"response.completed"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events:\n got %v\nwant %v", got, want)
	}
	for i, e := range evs {
		if int(e.data["sequence_number"].(float64)) != i {
			t.Fatalf("sequence_number of %d: %v", i, e.data["sequence_number"])
		}
	}
	fc := evs[5].data["item"].(map[string]any)
	ctc := evs[9].data["item"].(map[string]any)
	if fc["type"] != "function_call" || fc["arguments"] != `{"command":["bash","-lc","true"]}` ||
		ctc["type"] != "custom_tool_call" || ctc["input"] != "*** Begin Patch\n*** End Patch\n" {
		t.Fatalf("items: %v / %v", fc, ctc)
	}
	if r := s.Requests()[0]; !reflect.DeepEqual(r.Tools, []string{"shell", "apply_patch", "web_search", "mcp__ow__.read"}) || r.API != "responses" {
		t.Fatalf("request: %+v", r)
	}
	evs = post(t, s, "/v1/responses", map[string]any{"model": "gpt-test", "stream": true, "tools": tools, "input": []any{
		map[string]any{"type": "function_call_output", "call_id": fc["call_id"], "output": "ok\n"},
		map[string]any{"type": "custom_tool_call_output", "call_id": ctc["call_id"], "output": []any{map[string]any{"type": "input_text", "text": "patched"}}},
	}})
	if got := names(evs); got[3] != "response.content_part.added" || got[len(got)-1] != "response.completed" {
		t.Fatalf("text events: %v", got)
	}
	done := evs[len(evs)-1].data["response"].(map[string]any)
	if done["status"] != "completed" || done["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"] != "all done" {
		t.Fatalf("completed: %v", done)
	}
	trs := s.ToolResults()
	if len(trs) != 2 || trs[0].Tool != "shell" || trs[0].Content != "ok\n" || trs[1].Tool != "apply_patch" || trs[1].Content != "patched" {
		t.Fatalf("tool results: %+v", trs)
	}
}

func TestCustomRule(t *testing.T) {
	s := NewServer(t, Config{
		Turns:    []Turn{{Text: "main"}},
		SideText: "side",
		Scripted: func(r *Request) bool { return r.Model != "small" },
	})
	side := post(t, s, "/responses", map[string]any{"model": "small", "tools": []any{map[string]any{"type": "function", "name": "x"}}})
	if side[0].data["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"] != "side" {
		t.Fatalf("side: %v", side[0].data)
	}
	main := post(t, s, "/responses", map[string]any{"model": "big"})
	if main[0].data["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"] != "main" {
		t.Fatalf("main: %v", main[0].data)
	}
	ns := New(t, Turn{Calls: []Call{{Tool: "read", Namespace: "mcp__ow__", Input: map[string]any{"path": "/a"}}}})
	got := post(t, ns, "/v1/responses", map[string]any{"tools": []any{map[string]any{"type": "function", "name": "x"}}})
	if it := got[0].data["output"].([]any)[0].(map[string]any); it["namespace"] != "mcp__ow__" || it["name"] != "read" || it["arguments"] != `{"path":"/a"}` {
		t.Fatalf("namespaced call: %v", it)
	}
	if sys := (Request{Body: []byte(`{"system":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`)}).System(); sys != "a\nb" {
		t.Fatalf("system: %q", sys)
	}
}

func TestFuncTurnSeesEarlierResults(t *testing.T) {
	s := New(t,
		Turn{Tool: "Bash", Input: map[string]any{"command": "start", "run_in_background": true}},
		Turn{Func: func(results []ToolResult) Turn {
			id := strings.TrimPrefix(results[len(results)-1].Content, "task ")
			return Turn{Tool: "TaskStop", Input: map[string]any{"task_id": id}}
		}},
	)
	evs := post(t, s, "/v1/messages", map[string]any{"stream": true, "tools": bashTool})
	id := evs[1].data["content_block"].(map[string]any)["id"]
	evs = post(t, s, "/v1/messages", map[string]any{"stream": true, "tools": bashTool, "messages": []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": "task b42"}}},
	}})
	var js strings.Builder
	for _, e := range evs {
		if e.name == "content_block_delta" {
			js.WriteString(e.data["delta"].(map[string]any)["partial_json"].(string))
		}
	}
	if evs[1].data["content_block"].(map[string]any)["name"] != "TaskStop" || js.String() != `{"task_id":"b42"}` {
		t.Fatalf("made turn: %v %s", evs[1].data, js.String())
	}
}

// postGemini sends body to s's Gemini path and returns the answers: each SSE event's data
// (events carry data only, as the Gemini API's do), or the one JSON answer.
func postGemini(t *testing.T, s *Server, path string, body any) []map[string]any {
	t.Helper()
	resp := send(t, s, path, body)
	defer resp.Body.Close()
	var out []map[string]any
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return append(out, m)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		switch {
		case line == "":
		case strings.HasPrefix(line, "data: "):
			var m map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
			out = append(out, m)
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return out
}

// parts is an answer's first candidate's parts, and its finish reason.
func parts(t *testing.T, answer map[string]any) ([]any, any) {
	t.Helper()
	cand := answer["candidates"].([]any)[0].(map[string]any)
	return cand["content"].(map[string]any)["parts"].([]any), cand["finishReason"]
}

var geminiTools = []any{map[string]any{"functionDeclarations": []any{
	map[string]any{"name": "run_shell_command"}, map[string]any{"name": "read_file"},
}}}

func TestGeminiCallsThenText(t *testing.T) {
	s := New(t,
		Turn{Text: "looking", Tool: "run_shell_command", Input: map[string]any{"command": "ls"},
			Calls: []Call{{Tool: "read_file", Input: map[string]any{"file_path": "/a"}}}},
		Turn{Text: strings.Repeat("done ", 20)},
	)
	const stream = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
	answers := postGemini(t, s, stream, map[string]any{"contents": []any{
		map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hi"}}},
	}, "tools": geminiTools, "systemInstruction": map[string]any{"parts": []any{map[string]any{"text": "be brief"}}}})
	if len(answers) != 2 {
		t.Fatalf("answers: %v", answers)
	}
	if ps, fin := parts(t, answers[0]); len(ps) != 1 || ps[0].(map[string]any)["text"] != "looking" || fin != nil {
		t.Fatalf("text answer: %v %v", ps, fin)
	}
	ps, fin := parts(t, answers[1])
	if fin != "STOP" || answers[1]["usageMetadata"] == nil || len(ps) != 2 {
		t.Fatalf("calls answer: %v", answers[1])
	}
	var ids []string
	for i, want := range []string{"run_shell_command", "read_file"} {
		fc := ps[i].(map[string]any)["functionCall"].(map[string]any)
		if fc["name"] != want || !strings.HasPrefix(fc["id"].(string), "gcall_") {
			t.Fatalf("call %d: %v", i, fc)
		}
		ids = append(ids, fc["id"].(string))
	}
	if fc := ps[0].(map[string]any)["functionCall"].(map[string]any); fc["args"].(map[string]any)["command"] != "ls" {
		t.Fatalf("args: %v", fc)
	}

	// Side requests: plain text, or JSON when the request asks for it; neither takes a turn.
	side := postGemini(t, s, "/v1beta/models/gemini-2.5-flash-lite:generateContent", map[string]any{"contents": []any{}})
	if ps, _ := parts(t, side[0]); ps[0].(map[string]any)["text"] != DefaultSideText {
		t.Fatalf("side: %v", side)
	}
	side = postGemini(t, s, "/v1beta/models/gemini-2.5-flash-lite:generateContent", map[string]any{"contents": []any{},
		"generationConfig": map[string]any{"responseJsonSchema": map[string]any{"type": "object"}}})
	if ps, _ := parts(t, side[0]); ps[0].(map[string]any)["text"] != "{}" {
		t.Fatalf("JSON side: %v", side)
	}
	postGemini(t, s, "/v1beta/models/gemini-2.5-flash:countTokens", map[string]any{"contents": []any{}})

	answers = postGemini(t, s, stream, map[string]any{"tools": geminiTools, "contents": []any{
		map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"id": ids[0], "name": "run_shell_command"}}}},
		map[string]any{"role": "user", "parts": []any{
			map[string]any{"functionResponse": map[string]any{"id": ids[0], "name": "run_shell_command", "response": map[string]any{"output": "a\nb"}}},
			map[string]any{"functionResponse": map[string]any{"id": ids[1], "name": "read_file", "response": map[string]any{"error": `Tool "read_file" not found.`}}},
		}},
	}})
	var text strings.Builder
	for _, a := range answers {
		ps, _ := parts(t, a)
		text.WriteString(ps[0].(map[string]any)["text"].(string))
	}
	if _, fin := parts(t, answers[len(answers)-1]); len(answers) < 2 || text.String() != strings.Repeat("done ", 20) || fin != "STOP" {
		t.Fatalf("final text in %d answers: %q %v", len(answers), text.String(), fin)
	}
	trs := s.ToolResults()
	if len(trs) != 2 || trs[0].Tool != "run_shell_command" || trs[0].Content != "a\nb" || trs[0].IsError ||
		trs[1].Tool != "read_file" || !strings.Contains(trs[1].Content, "not found") || !trs[1].IsError {
		t.Fatalf("tool results: %+v", trs)
	}
	reqs := s.Requests()
	if len(reqs) != 5 || reqs[0].API != "gemini" || reqs[0].Model != "gemini-2.5-flash" || !reqs[0].Stream || reqs[0].Turn != 0 ||
		!reflect.DeepEqual(reqs[0].Tools, []string{"run_shell_command", "read_file"}) || reqs[0].System() != "be brief" ||
		reqs[1].Turn != -1 || reqs[1].Stream || reqs[3].API != "" || reqs[4].Turn != 1 {
		t.Fatalf("requests: %+v", reqs)
	}

	// Not streaming, and past the end of the script.
	got := postGemini(t, s, "/v1beta/models/m:generateContent", map[string]any{"tools": geminiTools})
	if ps, fin := parts(t, got[0]); ps[0].(map[string]any)["text"] != ExhaustedText || fin != "STOP" {
		t.Fatalf("exhausted: %v", got)
	}
}
