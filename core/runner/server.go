package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// ConnFD is the descriptor on which the runner inherits its end of the socketpair.
const ConnFD = 3

// DefaultMaxOutput bounds each of stdout and stderr kept in an exec result.
const DefaultMaxOutput = 256 << 10

// killGrace is how long a timed-out command's group has between TERM and KILL.
const killGrace = 2 * time.Second

// Main is the runner's entry point. It takes fd 3, marks it close-on-exec so no command
// inherits it, and serves tool calls on it until the core hangs up.
func Main() error {
	syscall.CloseOnExec(ConnFD)
	f := os.NewFile(ConnFD, "runner-conn")
	if f == nil {
		return errors.New("runner: no connection on fd 3; the runner is started by openworker, not by hand")
	}
	s, err := NewServer()
	if err != nil {
		return err
	}
	return s.Serve(f)
}

// Server carries out tool calls and keeps the shell state between them.
type Server struct {
	mu    sync.Mutex // one tool call at a time: shell state is sequential
	shell *shell
}

// NewServer returns a server whose shell starts in the current folder with the current
// environment.
func NewServer() (*Server, error) {
	sh, err := newShell()
	if err != nil {
		return nil, err
	}
	return &Server{shell: sh}, nil
}

// Serve reads requests from rw and answers them until EOF.
func (s *Server) Serve(rw io.ReadWriter) error {
	dec := json.NewDecoder(bufio.NewReaderSize(rw, 64<<10))
	var wmu sync.Mutex
	enc := json.NewEncoder(rw)
	send := func(r *Response) {
		wmu.Lock()
		defer wmu.Unlock()
		_ = enc.Encode(r)
	}
	for {
		var req Request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("runner: reading a request: %w", err)
		}
		res, err := s.handle(&req, send)
		out := &Response{ID: req.ID, Result: res}
		if err != nil {
			out.Result = nil
			out.Error = err.Error()
		}
		send(out)
	}
}

func (s *Server) handle(req *Request, send func(*Response)) (*Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case req.Tool == ToolExec && req.Exec != nil:
		return s.shell.exec(req.ID, req.Exec, send)
	case req.Tool == ToolRead && req.Read != nil:
		return readFile(s.shell.abs(req.Read.Path), req.Read.Offset, req.Read.Limit)
	case req.Tool == ToolWrite && req.Write != nil:
		return writeFile(s.shell.abs(req.Write.Path), req.Write.Content)
	case req.Tool == ToolList && req.List != nil:
		return listDir(s.shell.abs(req.List.Path))
	case req.Tool == ToolProbe && req.Probe != nil:
		return &Result{Checks: probe(context.Background(), req.Probe)}, nil
	}
	return nil, fmt.Errorf("unknown tool %q or missing arguments", req.Tool)
}

// MaxRead bounds one read call.
const MaxRead = 8 << 20

func readFile(path string, off, limit int64) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s is a folder; use list", path)
	}
	if limit <= 0 || limit > MaxRead {
		limit = MaxRead
	}
	buf := make([]byte, limit)
	n, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return &Result{Content: buf[:n], Size: fi.Size()}, nil
}

func writeFile(path string, content []byte) (*Result, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return nil, err
	}
	return &Result{Size: int64(len(content))}, nil
}

func listDir(path string) (*Result, error) {
	des, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	res := &Result{Entries: make([]Entry, 0, len(des))}
	for _, de := range des {
		e := Entry{Name: de.Name(), Dir: de.IsDir()}
		if fi, err := de.Info(); err == nil {
			e.Size, e.Mode, e.MTime = fi.Size(), fi.Mode().String(), fi.ModTime().Unix()
			if fi.Mode()&os.ModeSymlink != 0 {
				e.Link, _ = os.Readlink(filepath.Join(path, de.Name()))
			}
		}
		res.Entries = append(res.Entries, e)
	}
	return res, nil
}
