package mcp

import (
	"context"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openworker/openworker/core/approvals"
	"github.com/openworker/openworker/core/backend"
)

// sshCarder is a Host that can list its session's pending SSH cards (OpenWorker's SSH agent
// asks on them while a command runs). A Host without it puts none to its client.
type sshCarder interface {
	SSHCards(ctx context.Context) []backend.CardInfo
}

func sshCardsOf(cards []backend.CardInfo, session string) []backend.CardInfo {
	var out []backend.CardInfo
	for _, c := range cards {
		if c.Session == session && approvals.Kind(c.Kind).SSH() {
			out = append(out, c)
		}
	}
	return out
}

func (h *LocalHost) SSHCards(context.Context) []backend.CardInfo {
	return sshCardsOf(h.B.Cards(), h.S.ID)
}

func (h *RemoteHost) SSHCards(ctx context.Context) []backend.CardInfo {
	cards, err := h.C.Cards(ctx)
	if err != nil {
		return nil
	}
	return sshCardsOf(cards, h.ID)
}

// sshForm is an SSH card's question as the client shows it to its person: the agent's own
// words, with the card's answers.
func sshForm(c backend.CardInfo) *sdk.ElicitParams {
	var titles []map[string]string
	for _, a := range formAnswers {
		titles = append(titles, map[string]string{"const": a.answer, "title": a.title})
	}
	return &sdk.ElicitParams{
		Mode:    "form",
		Message: c.Reason + ".\nYour key stays outside the sandbox; this allows its signature, not a copy.",
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"decision": map[string]any{"type": "string", "title": "Allow this signature?", "oneOf": titles},
			},
			"required": []string{"decision"},
		},
	}
}

// heldResults are run_command results held while their SSH card's form is with the client,
// by card: the answer brings the result back. Bounded as the questions are.
type heldResults struct {
	mu sync.Mutex
	m  map[string]*RunCommandResult
}

func (h *heldResults) put(card string, r *RunCommandResult) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]*RunCommandResult{}
	}
	if len(h.m) >= maxQuestions {
		for k := range h.m {
			delete(h.m, k)
			break
		}
	}
	h.m[card] = r
}

func (h *heldResults) take(card string) *RunCommandResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.m[card]
	delete(h.m, card)
	return r
}

// askSSHCard puts the session's pending SSH card to the client once the command that raised
// it has ended (a form cannot be put in the middle of a call), holding the command's result
// for the answer. It returns nil when there is nothing to ask or nobody to ask through.
func (s *Server) askSSHCard(ctx context.Context, req *sdk.CallToolRequest, out *RunCommandResult) *sdk.CallToolResult {
	sc, ok := s.host.(sshCarder)
	if !ok || !s.canAsk(ctx, req) {
		return nil
	}
	cards := sc.SSHCards(ctx)
	if len(cards) == 0 {
		return nil
	}
	c := cards[0]
	s.held.put(c.ID, out)
	return s.ask(c.ID, c.Site, sshForm(c), formAnswers)
}

// sshFormAnswered is run_command called again with the person's answer to an SSH card's
// form: the card is answered, and the command's held result comes back with what was
// decided. The command is not run again.
func (s *Server) sshFormAnswered(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, *RunCommandResult, error) {
	ans, refused := s.takeFormAnswer(ctx, req, formAnswers)
	if refused != nil {
		return refused, nil, nil
	}
	out := s.held.take(ans.Card)
	if out == nil {
		out = &RunCommandResult{}
	}
	var note string
	switch ans.Decision {
	case string(approvals.AllowedSession), string(approvals.AllowedAlways):
		note = "The person allowed the SSH signature (" + ans.Decision + "): run the command again."
	case string(approvals.NoAnswerYet):
		note = "The SSH card is waiting for the person; run the command again once they answered."
	default:
		note = "The person denied the SSH signature for this session: do not try it again."
	}
	if out.Notice != "" {
		note = out.Notice + " " + note
	}
	out.Notice = note
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: commandText(out)}}}, out, nil
}
