package mcp

import (
	"crypto/subtle"
	"net"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPHandler serves s over MCP's streamable HTTP, to a client that sends token as a bearer
// token: the way openworker agent gives an agent host its tools, which the host reaches
// itself (a server the host started would be started through its shell, inside the wall).
// It listens on loopback, where other programs of this machine can connect too: without the
// token they get 401. A request whose Host is not a loopback name is refused as well, so a
// web page cannot reach it through a name it rebinds to 127.0.0.1.
func HTTPHandler(s *Server, token string) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.mcp }, nil)
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			http.Error(w, "refused: not a loopback host", http.StatusForbidden)
			return
		}
		if token == "" || subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "refused: this MCP server is openworker agent's, for the agent host it started", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
