package mcp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Only the host openworker agent started, with its token, on a loopback name, reaches the
// server: not another program of this machine, not a web page through a rebound name.
func TestHTTPHandlerWantsTheTokenAndLoopback(t *testing.T) {
	h := HTTPHandler(NewUnavailable("test"), "tok")
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, tt := range []struct {
		host, auth string
		code       int
	}{
		{"127.0.0.1:4000", "Bearer tok", 200},
		{"localhost:4000", "Bearer tok", 200},
		{"[::1]:4000", "Bearer tok", 200},
		{"127.0.0.1:4000", "", 401},
		{"127.0.0.1:4000", "Bearer nope", 401},
		{"evil.example:4000", "Bearer tok", 403},
	} {
		r := httptest.NewRequest("POST", "http://"+tt.host+"/mcp", strings.NewReader(body))
		r.Host = tt.host
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if tt.auth != "" {
			r.Header.Set("Authorization", tt.auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.code {
			t.Errorf("%s %q: %d, want %d: %s", tt.host, tt.auth, w.Code, tt.code, w.Body)
		}
	}
	if HTTPHandler(NewUnavailable("x"), "") == nil {
		t.Fatal("nil handler")
	}
	r := httptest.NewRequest("POST", "http://127.0.0.1/mcp", strings.NewReader(body))
	w := httptest.NewRecorder()
	HTTPHandler(NewUnavailable("x"), "").ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("an empty token let a request in: %d", w.Code)
	}
}
