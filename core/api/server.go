package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/apitype"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/session"
	"github.com/openworker/openworker/core/termtext"
)

// Server serves the local API for one Backend: it decodes, calls, and encodes.
type Server struct {
	Backend *backend.Backend
	// Status describes the daemon.
	Status func() Status

	// held counts the sessions whose client holds them by its connection (StartRequest.Hold).
	held atomic.Int64

	mu   sync.Mutex
	http *http.Server
	shut bool // Shutdown was called: a Serve still to come returns at once
	stop chan struct{}
}

// Listen creates the socket in stateDir, owner-only. A socket left by a dead daemon is
// replaced; one a live daemon answers on is not.
func Listen(stateDir string) (net.Listener, error) {
	if err := apitype.CheckSocketPath(SocketPath(stateDir)); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(stateDir, 0o700); err != nil {
		return nil, err
	}
	path := SocketPath(stateDir)
	// One daemon per state folder, decided by a lock its process holds for as long as it
	// serves: two daemons started at once (two agents' servers with none running) cannot
	// both take the socket, or remove each other's.
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("a daemon is already running on %s", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		lock.Close()
		return nil, fmt.Errorf("a daemon is already running on %s", path)
	}
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		lock.Close()
		return nil, err
	}
	return &peerListener{Listener: l, uid: os.Getuid(), lock: lock}, nil
}

// peerListener accepts only connections from processes of the same user.
type peerListener struct {
	net.Listener
	uid  int
	lock *os.File // held while the daemon serves
}

func (l *peerListener) Close() error {
	err := l.Listener.Close()
	l.lock.Close()
	return err
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := peerUID(c)
		if err == nil && uid == l.uid {
			return c, nil
		}
		c.Close()
	}
}

// Serve answers requests on l until Shutdown.
func (s *Server) Serve(l net.Listener) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", s.status)
	mux.HandleFunc("GET /v1/sessions", s.list)
	mux.HandleFunc("POST /v1/sessions", s.start)
	mux.HandleFunc("DELETE /v1/sessions/{id}", s.end)
	mux.HandleFunc("POST /v1/sessions/{id}/exec", s.exec)
	mux.HandleFunc("POST /v1/sessions/{id}/signal", s.signal)
	mux.HandleFunc("POST /v1/sessions/{id}/read", s.read)
	mux.HandleFunc("POST /v1/sessions/{id}/write", s.write)
	mux.HandleFunc("POST /v1/sessions/{id}/list", s.listDir)
	mux.HandleFunc("POST /v1/sessions/{id}/folders", s.addFolder)
	mux.HandleFunc("GET /v1/events", s.events)
	mux.HandleFunc("GET /v1/cards", s.cards)
	mux.HandleFunc("POST /v1/cards/{id}/answer", s.answerCard)
	mux.HandleFunc("POST /v1/sessions/{id}/sites", s.requestSite)
	mux.HandleFunc("GET /v1/sessions/{id}/access", s.access)
	mux.HandleFunc("POST /v1/sessions/{id}/access", s.changeAccess)
	mux.HandleFunc("POST /v1/sessions/{id}/fetch", s.fetch)
	mux.HandleFunc("POST /v1/sessions/{id}/form-refused", s.formRefused)
	mux.HandleFunc("GET /v1/sites", s.sites)
	mux.HandleFunc("POST /v1/sites", s.changeSites)
	mux.HandleFunc("GET /v1/credentials", s.credentials)
	mux.HandleFunc("POST /v1/credentials", s.changeCredentials)
	s.mu.Lock()
	if s.shut {
		// A stop signal can come between starting the daemon and serving.
		s.mu.Unlock()
		l.Close()
		return nil
	}
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ConnContext: withConn}
	srv := s.http
	s.mu.Unlock()
	err := srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops answering and closes event streams.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shut = true
	srv := s.http
	if s.stop == nil {
		s.stop = make(chan struct{})
	}
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}

func (s *Server) stopped() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop == nil {
		s.stop = make(chan struct{})
	}
	return s.stop
}

// events streams the backend's events as JSON lines. ?cards=1 says the watcher shows cards
// to a person, as the app and openworker cards --watch do.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	ch, cancel := s.Backend.Subscribe(r.URL.Query().Get("cards") != "")
	defer cancel()
	w.Header().Set("Content-Type", "application/x-ndjson")
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	_ = enc.Encode(backend.Event{Time: time.Now(), Type: "status", Message: fmt.Sprintf("%d session(s)", len(s.Backend.Sessions()))})
	if fl != nil {
		fl.Flush()
	}
	stop := s.stopped()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-stop:
			return
		case e, ok := <-ch:
			if !ok {
				return
			}
			if enc.Encode(e) != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, errorBody{Error: err.Error()})
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeErr(w, http.StatusBadRequest, fmt.Errorf("bad request body: %w", err))
		return false
	}
	return true
}

func info(s *session.Session) SessionInfo {
	rw, ro := s.Folders()
	return SessionInfo{ID: s.ID, Enforcement: string(s.Enforcement), Network: string(s.Network), Writable: rw, ReadOnly: ro,
		ProxyPort: s.ProxyPort(), Active: s.Active(), Started: s.Started, Owner: s.Owner(), LocalServers: s.LocalServers(), Published: s.Published()}
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st := Status{}
	if s.Status != nil {
		st = s.Status()
	}
	st.CardWatchers = s.Backend.CardWatchers()
	st.Approvals = s.Backend.Settings().Settings.Approvals
	st.Sessions = []SessionInfo{}
	for _, ss := range s.Backend.Sessions() {
		st.Sessions = append(st.Sessions, info(ss))
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	out := []SessionInfo{}
	for _, ss := range s.Backend.Sessions() {
		out = append(out, info(ss))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) start(w http.ResponseWriter, r *http.Request) {
	var req StartRequest
	if !decode(w, r, &req) {
		return
	}
	// The daemon's own working folder means nothing to its client: paths must be absolute.
	for _, d := range append(append([]string(nil), req.Writable...), req.ReadOnly...) {
		if !filepath.IsAbs(d) {
			writeErr(w, http.StatusBadRequest, fmt.Errorf("folder %q is relative; give an absolute path", d))
			return
		}
	}
	ss, err := s.Backend.Start(r.Context(), backend.Request{Provider: req.Provider, Writable: req.Writable, ReadOnly: req.ReadOnly,
		Dir: req.Dir, Network: req.Network, Allow: req.Allow, Agent: req.Agent, Programs: append([]string{req.Program, peerProgram(r.Context())}, req.HostPrograms...), GitMetadata: req.GitMetadata, LocalServers: req.LocalServers, Publish: req.Publish, FreshCaches: req.FreshCaches, ClientEnv: req.Env, Owner: req.Owner})
	if err != nil {
		var re *session.RefusedError
		if errors.As(err, &re) {
			writeErr(w, http.StatusForbidden, err)
		} else {
			writeErr(w, http.StatusBadRequest, err)
		}
		return
	}
	if !req.Hold {
		writeJSON(w, http.StatusCreated, info(ss))
		return
	}
	// The client holds the session by this connection: when it goes (the client ended,
	// crashed or was killed), so does the session, and nothing of it waits for the daemon to
	// stop.
	s.held.Add(1)
	defer s.held.Add(-1)
	// Read the request to its end: only then does the server notice the connection close.
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(info(ss))
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	select {
	case <-r.Context().Done():
		_ = s.Backend.EndBecause(ss.ID, "its client went away: the connection that started it closed (the client ended, crashed or was killed)")
	case <-s.stopped():
	}
}

// Held counts the sessions a client holds by its connection now.
func (s *Server) Held() int { return int(s.held.Load()) }

func (s *Server) formRefused(w http.ResponseWriter, r *http.Request) {
	ss, ok := s.session(w, r)
	var req FormRefusal
	if ok && decode(w, r, &req) {
		s.Backend.FormAnswerRefused(ss.ID, req.Detail)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) (*session.Session, bool) {
	ss, ok := s.Backend.Session(r.PathValue("id"))
	if !ok {
		writeErr(w, http.StatusNotFound, fmt.Errorf("no session %q; list them with openworker session ls", r.PathValue("id")))
	}
	return ss, ok
}

// end ends a session. ?reason= says why, for the audit trail's session.ended (bounded, and
// escaped where it is shown, as everything a client sends).
func (s *Server) end(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.session(w, r); ok {
		why := "ended on request"
		if reason := r.URL.Query().Get("reason"); reason != "" {
			why = termtext.Short(reason, 200)
		}
		_ = s.Backend.EndBecause(r.PathValue("id"), why)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	ss, ok := s.session(w, r)
	if !ok {
		return
	}
	// The request is one JSON value, which may be followed by the command's standard
	// input: read the value alone, then the rest of the body is the input.
	body := http.MaxBytesReader(w, r.Body, 64<<20)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	var req ExecRequest
	if err := dec.Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, fmt.Errorf("bad request body: %w", err))
		return
	}
	if req.Command != "" && len(req.Argv) > 0 {
		writeErr(w, http.StatusBadRequest, errors.New("give command (a shell command) or argv (a program and its arguments), not both"))
		return
	}
	var stdin io.Reader
	if req.Stdin {
		// Read while the answer streams: the input comes as the command runs.
		_ = http.NewResponseController(w).EnableFullDuplex()
		stdin = io.MultiReader(dropNewline(dec.Buffered()), r.Body)
	}
	args := runner.ExecArgs{Command: req.Command, Argv: req.Argv, Dir: req.Dir, Timeout: time.Duration(req.TimeoutMS) * time.Millisecond, MaxOutput: req.MaxOutput}
	if (req.Tag != "" || len(req.Env) > 0) && !req.Apart {
		writeErr(w, http.StatusBadRequest, errors.New("a tag and variables are for a command that runs apart; give apart too"))
		return
	}
	for _, kv := range req.Env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || session.IsSecretName(name) {
			writeErr(w, http.StatusBadRequest, fmt.Errorf("variable %.100q is not NAME=VALUE, or its name says it holds a secret, which never enters a sandbox", kv))
			return
		}
	}
	args.Env = req.Env
	// A client that goes away (Ctrl-C, a killed script) interrupts its command.
	ctx := r.Context()
	execute := func(onChunk func(string, []byte)) (*session.Result, error) {
		if req.Apart {
			return ss.ExecApart(ctx, args, req.Tag, stdin, onChunk)
		}
		return ss.ExecContext(ctx, args, stdin, onChunk)
	}
	if r.URL.Query().Get("stream") == "" {
		res, err := execute(nil)
		answer(w, res, err)
		return
	}
	var once sync.Once
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	head := func() {
		once.Do(func() { w.Header().Set("Content-Type", "application/x-ndjson") })
	}
	res, err := execute(func(stream string, data []byte) {
		head()
		_ = enc.Encode(StreamMessage{Stream: stream, Data: data})
		if fl != nil {
			fl.Flush()
		}
	})
	var be *session.BusyError
	if errors.As(err, &be) {
		writeErr(w, http.StatusConflict, err)
		return
	}
	head()
	if err != nil {
		_ = enc.Encode(StreamMessage{Error: err.Error()})
		return
	}
	_ = enc.Encode(StreamMessage{Result: res})
}

// dropNewline is r without the newline that ends the JSON value before it.
func dropNewline(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	if b, err := br.Peek(1); err == nil && b[0] == '\n' {
		_, _ = br.Discard(1)
	}
	return br
}

func (s *Server) signal(w http.ResponseWriter, r *http.Request) {
	ss, ok := s.session(w, r)
	var req SignalRequest
	if !ok || !decode(w, r, &req) {
		return
	}
	sig, ok := map[string]syscall.Signal{"SIGINT": syscall.SIGINT, "SIGTERM": syscall.SIGTERM, "SIGHUP": syscall.SIGHUP}[req.Signal]
	if !ok {
		writeErr(w, http.StatusBadRequest, fmt.Errorf("signal %q is not one of SIGINT, SIGTERM, SIGHUP", req.Signal))
		return
	}
	if req.Tag != "" {
		if !ss.SignalApart(req.Tag, sig) {
			writeErr(w, http.StatusNotFound, fmt.Errorf("no command tagged %q runs in session %s", req.Tag, ss.ID))
			return
		}
	} else {
		ss.Signal(sig)
	}
	w.WriteHeader(http.StatusNoContent)
}

func answer(w http.ResponseWriter, res *session.Result, err error) {
	if err != nil {
		code := http.StatusInternalServerError
		var be *session.BusyError
		switch {
		case errors.Is(err, session.ErrEnded):
			code = http.StatusGone
		case errors.As(err, &be), errors.Is(err, session.ErrTagInUse):
			code = http.StatusConflict
		}
		writeErr(w, code, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) read(w http.ResponseWriter, r *http.Request) {
	ss, ok := s.session(w, r)
	var req ReadRequest
	if ok && decode(w, r, &req) {
		res, err := ss.Read(runner.ReadArgs{Path: req.Path, Offset: req.Offset, Limit: req.Limit})
		answer(w, res, err)
	}
}

func (s *Server) write(w http.ResponseWriter, r *http.Request) {
	ss, ok := s.session(w, r)
	var req WriteRequest
	if ok && decode(w, r, &req) {
		res, err := ss.Write(runner.WriteArgs{Path: req.Path, Content: req.Content})
		answer(w, res, err)
	}
}

func (s *Server) listDir(w http.ResponseWriter, r *http.Request) {
	ss, ok := s.session(w, r)
	var req ListRequest
	if ok && decode(w, r, &req) {
		res, err := ss.List(runner.ListArgs{Path: req.Path})
		answer(w, res, err)
	}
}

func (s *Server) addFolder(w http.ResponseWriter, r *http.Request) {
	ss, ok := s.session(w, r)
	var req FolderRequest
	if !ok || !decode(w, r, &req) {
		return
	}
	if !filepath.IsAbs(req.Path) {
		writeErr(w, http.StatusBadRequest, fmt.Errorf("folder %q is relative; give an absolute path", req.Path))
		return
	}
	if err := ss.AddFolder(r.Context(), req.Path, req.Writable); err != nil {
		code := http.StatusBadRequest
		var be *session.BusyError
		switch {
		case errors.Is(err, session.ErrEnded):
			code = http.StatusGone
		case errors.As(err, &be), errors.Is(err, session.ErrTagInUse):
			code = http.StatusConflict
		}
		writeErr(w, code, err)
		return
	}
	writeJSON(w, http.StatusOK, info(ss))
}
