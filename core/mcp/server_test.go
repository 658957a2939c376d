package mcp

import (
	"testing"
	"time"
)

// The MCP TypeScript SDK and Codex time a tool call out after 60 s: an ask must answer
// before, with room for the round trips around it, or the model reads a timeout and never
// "no answer yet".
func TestDefaultAskWaitIsBelowClientTimeouts(t *testing.T) {
	if DefaultAskWait > 45*time.Second {
		t.Fatalf("DefaultAskWait is %s; keep it at 45 s or less", DefaultAskWait)
	}
}

// A request state is a fresh random token, taken once, and only with the answers of the
// question it was given for.
func TestQuestionsAreTakenOnce(t *testing.T) {
	q := questions{m: map[string]question{}}
	state := q.put(question{card: "c1", site: "example.com:443", answers: formAnswers})
	if state == "c1" || len(state) < 32 {
		t.Fatalf("request state %q is not a fresh token", state)
	}
	if _, ok := q.take(state, fetchFormAnswers); ok {
		t.Fatal("a site question was taken with a fetch form's answers")
	}
	if got, ok := q.take(state, formAnswers); !ok || got.card != "c1" {
		t.Fatalf("take: %+v %v", got, ok)
	}
	if _, ok := q.take(state, formAnswers); ok {
		t.Fatal("a question was taken twice")
	}
	if _, ok := q.take("c1", formAnswers); ok {
		t.Fatal("a card ID answered a question")
	}
	for i := 0; i < 2*maxQuestions; i++ {
		q.put(question{card: "c", answers: formAnswers})
	}
	if len(q.m) > maxQuestions {
		t.Fatalf("%d questions kept", len(q.m))
	}
}
