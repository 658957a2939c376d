// Package agentbridge carries an agent host's remote executor into a session: Codex runs
// every tool that touches the machine (its shell, apply_patch, view_image) on an executor it
// reaches over a WebSocket (CODEX_EXEC_SERVER_URL), and openworker agent serves that
// WebSocket on loopback and starts the executor for each connection inside the session,
// behind the wall, passing the executor's JSON-RPC messages both ways (read as
// core/codexexec says). It decides nothing.
package agentbridge

import (
	"bytes"
	"context"
	"crypto/subtle"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/websocket"

	"github.com/openworker/openworker/core/codexexec"
)

// Executor runs the executor's program in the session: with stdin as its standard input,
// handing its output to onChunk as it comes, until it ends or ctx does.
type Executor func(ctx context.Context, stdin io.Reader, onChunk func(stream string, data []byte)) error

// Bridge serves an executor's WebSocket.
type Bridge struct {
	// Token is the path a client must ask for (/TOKEN): the URL the host is given is the
	// only place it is written, so another program on this machine cannot connect.
	Token string
	// Run starts the executor inside the session, once per connection.
	Run Executor
	// Blocked returns what a model should read of the sites the session's proxy blocked
	// between two times ("" for none).
	Blocked func(from, to time.Time) string
	// Log is told of what went wrong, for the person's terminal.
	Log func(format string, a ...any)
}

// ServeHTTP takes a WebSocket on /TOKEN from a loopback client.
func (b *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(strings.TrimPrefix(r.URL.Path, "/")), []byte(b.Token)) != 1 || b.Token == "" {
		http.Error(w, "refused: this executor is openworker agent's, for the agent host it started", http.StatusUnauthorized)
		return
	}
	if r.Header.Get("Origin") != "" {
		// A web page's WebSocket always says where it comes from; the host's does not.
		http.Error(w, "refused: a web page may not connect here", http.StatusForbidden)
		return
	}
	websocket.Server{Handler: b.serve, Handshake: func(*websocket.Config, *http.Request) error { return nil }}.ServeHTTP(w, r)
}

// serve is one connection: one executor inside, its messages both ways.
func (b *Bridge) serve(ws *websocket.Conn) {
	defer ws.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in, feed := io.Pipe()
	t := codexexec.NewStream(b.Blocked)
	var sendMu sync.Mutex
	send := func(msg []byte) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return websocket.Message.Send(ws, string(msg))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var lines codexexec.Lines
		err := b.Run(ctx, in, func(stream string, data []byte) {
			if stream != "stdout" {
				return // the executor's own log
			}
			for _, line := range lines.Add(data) {
				for _, msg := range t.FromExecutor(line) {
					if send(msg) != nil {
						cancel()
						return
					}
				}
			}
		})
		if err != nil && ctx.Err() == nil && b.Log != nil {
			b.Log("the host's executor in the session stopped: %v", err)
		}
		ws.Close()
	}()
	for {
		var msg []byte
		if err := websocket.Message.Receive(ws, &msg); err != nil {
			break
		}
		t.FromHost(msg)
		if _, err := feed.Write(append(bytes.TrimRight(msg, "\n"), '\n')); err != nil {
			break
		}
	}
	// The host went: the executor ends at the end of its input (and with ctx).
	feed.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cancel()
		<-done
	}
}
