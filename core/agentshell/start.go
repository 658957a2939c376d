package agentshell

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// startRequest is the subset of the local API's session start the shell sends.
type startRequest struct {
	Provider string            `json:"provider,omitempty"`
	Writable []string          `json:"writable,omitempty"`
	Dir      string            `json:"dir,omitempty"`
	Agent    bool              `json:"agent,omitempty"`
	Hold     bool              `json:"hold,omitempty"`
	Program  string            `json:"program,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Owner    int               `json:"owner,omitempty"`
}

// startSession starts, for a host that has none yet, a session on dir owned by owner, with
// this machine's sandbox (as openworker mcp does), held by the returned connection: it ends
// when the connection does. A daemon is started when none answers, as the MCP server starts
// one (it ends after its last session).
func startSession(c *client, owner int, dir string, getenv func(string) string) (string, io.Closer, error) {
	if _, err := c.sessions(); errors.Is(err, errNoDaemon) {
		if err := startDaemon(c); err != nil {
			return "", nil, err
		}
	}
	self, _ := os.Executable()
	env := map[string]string{}
	for _, name := range []string{"PATH", "LANG", "LC_ALL", "LC_CTYPE"} {
		if v := getenv(name); v != "" {
			env[name] = v
		}
	}
	body, err := json.Marshal(startRequest{Provider: "auto", Writable: []string{dir}, Dir: dir, Agent: true, Hold: true, Program: self, Env: env, Owner: owner})
	if err != nil {
		return "", nil, err
	}
	conn, err := c.dial()
	if err != nil {
		return "", nil, err
	}
	fmt.Fprintf(conn, "POST /v1/sessions HTTP/1.1\r\nHost: openworker\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	resp, err := readResponse(conn)
	if err != nil {
		conn.Close()
		return "", nil, err
	}
	if resp.status/100 != 2 {
		defer conn.Close()
		return "", nil, resp.failure()
	}
	var info sessionInfo
	if err := json.NewDecoder(resp.body).Decode(&info); err != nil || info.ID == "" {
		conn.Close()
		return "", nil, fmt.Errorf("the daemon's answer to the session's start cannot be read: %v", err)
	}
	return info.ID, conn, nil
}

// startDaemon starts OpenWorker's daemon, the program beside this one, to end after its last
// session, and waits for it to answer.
func startDaemon(c *client) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	self, _ = filepath.EvalSymlinks(self)
	var prog string
	for _, name := range []string{"openworker-mcp", "openworker"} {
		p := filepath.Join(filepath.Dir(self), name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			prog = p
			break
		}
	}
	if prog == "" {
		return fmt.Errorf("%w, and there is no openworker beside %s to start it with", errNoDaemon, self)
	}
	d := exec.Command(prog, "serve", "--exit-when-idle")
	d.Dir = "/"
	d.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := d.Start(); err != nil {
		return fmt.Errorf("starting the daemon: %w", err)
	}
	go d.Wait()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := c.sessions(); err == nil {
			return nil
		}
	}
	return errors.New("the daemon it started did not answer within 10 s")
}
