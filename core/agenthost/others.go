package agenthost

import "errors"

// Placeholders until their routing is written.
var codex = &Host{Name: "codex", Title: "Codex CLI", launch: func(Routing) (Launch, error) { return Launch{}, errors.New("not yet") }}
var gemini = &Host{Name: "gemini", Title: "gemini-cli", launch: func(Routing) (Launch, error) { return Launch{}, errors.New("not yet") }}
