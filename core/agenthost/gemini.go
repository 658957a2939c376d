package agenthost

import "errors"

var gemini = &Host{Name: "gemini", Title: "gemini-cli", launch: func(Routing, []string) (Launch, error) { return Launch{}, errors.New("not yet") }}
