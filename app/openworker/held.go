//go:build !mcpapart

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/apiclient"
	"github.com/openworker/openworker/core/mcp"
)

// heldSession is a session in the daemon that an agent's server (openworker mcp, or
// openworker agent for its host) holds for as long as it runs: when the daemon stops under
// it, a daemon is started again with a new session on the same folders, to which the
// server's calls (and the host's shell) turn, and the next result says what was lost.
type heldSession struct {
	c      *apiclient.Client
	e      *env
	socket string
	start  api.StartRequest
	host   *mcp.RemoteHost
	who    string // "openworker mcp", for its lines on standard error
	ended  string // the audit trail's reason when the holder ends it

	mu     sync.Mutex
	info   api.SessionInfo
	hold   io.Closer
	ending bool
	// again is closed once a restart has finished; nil while none runs.
	again chan struct{}
	err   error // the last restart's
}

// holdSession starts the session in the running daemon, or in one it starts.
func holdSession(ctx context.Context, e *env, start api.StartRequest, who, ended string) (*heldSession, error) {
	sock := api.SocketPath(e.stateDir)
	c := apiclient.New(sock)
	if _, err := ensureDaemon(ctx, c, e); err != nil {
		return nil, err
	}
	info, hold, err := c.StartHeld(ctx, start)
	if err != nil {
		return nil, err
	}
	s := &heldSession{c: c, e: e, socket: sock, start: start, who: who, ended: ended, info: info, hold: hold}
	s.host = &mcp.RemoteHost{C: c, ID: info.ID, Socket: sock, Given: start, Reconnect: s.restart}
	go s.watch(hold)
	return s, nil
}

func (s *heldSession) current() api.SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

// watch starts the session again when the daemon hangs up on its hold.
func (s *heldSession) watch(hold io.Closer) {
	if r, ok := hold.(io.Reader); ok {
		_, _ = io.Copy(io.Discard, r)
	}
	_ = s.restart(context.Background())
}

// restart starts the daemon and the session again, unless the holder is ending or the
// session still answers; callers at once share one restart.
func (s *heldSession) restart(ctx context.Context) error {
	s.mu.Lock()
	if s.ending {
		s.mu.Unlock()
		return errors.New("the session has ended")
	}
	if s.again != nil {
		wait := s.again
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.err
	}
	id := s.info.ID
	s.again = make(chan struct{})
	s.mu.Unlock()
	err := s.startAgain(ctx, id)
	s.mu.Lock()
	close(s.again)
	s.again, s.err = nil, err
	s.mu.Unlock()
	return err
}

func (s *heldSession) startAgain(ctx context.Context, old string) error {
	if list, err := s.c.Sessions(ctx); err == nil {
		for _, x := range list {
			if x.ID == old {
				return nil // the daemon answers, and still has the session
			}
		}
	}
	fmt.Fprintf(os.Stderr, "%s: the daemon stopped under session %s; starting it again with a new session (the shell's folder and variables are lost)\n", s.who, old)
	var info api.SessionInfo
	var hold io.Closer
	var err error
	for try := 0; try < 3; try++ {
		if _, err = ensureDaemon(ctx, s.c, s.e); err == nil {
			if info, hold, err = s.c.StartHeld(ctx, s.start); err == nil {
				break
			}
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: the session could not be started again: %v\n", s.who, err)
		return fmt.Errorf("the sandbox's session stopped and could not be started again: %w", err)
	}
	s.mu.Lock()
	s.info, s.hold = info, hold
	s.mu.Unlock()
	s.host.Retarget(info.ID)
	fmt.Fprintf(os.Stderr, "%s: now session %s\n", s.who, info.ID)
	go s.watch(hold)
	return nil
}

// end ends the session: its holder is done.
func (s *heldSession) end() {
	s.mu.Lock()
	s.ending = true
	hold, id := s.hold, s.info.ID
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.c.EndBecause(ctx, id, s.ended)
	hold.Close()
}
