package agentbridge

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Only the host, which has the URL, connects: a wrong path or a web page's WebSocket (which
// always says where it comes from) is refused before any executor starts.
func TestBridgeRefusesStrangers(t *testing.T) {
	b := &Bridge{Token: "secret"}
	for _, tt := range []struct {
		path, origin string
		code         int
	}{
		{"/wrong", "", http.StatusUnauthorized},
		{"/", "", http.StatusUnauthorized},
		{"/secret", "https://evil.example", http.StatusForbidden},
	} {
		r := httptest.NewRequest("GET", "http://127.0.0.1"+tt.path, nil)
		r.Header.Set("Upgrade", "websocket")
		r.Header.Set("Connection", "Upgrade")
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		w := httptest.NewRecorder()
		b.ServeHTTP(w, r)
		if w.Code != tt.code {
			t.Errorf("%s %q: %d, want %d", tt.path, tt.origin, w.Code, tt.code)
		}
	}
	empty := &Bridge{}
	w := httptest.NewRecorder()
	empty.ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1/", nil))
	if w.Code != http.StatusUnauthorized {
		t.Errorf("a bridge without a token let a request in: %d", w.Code)
	}
}
