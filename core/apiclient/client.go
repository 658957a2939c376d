// Package apiclient is the local API's client: the CLI, the MCP server attached to a running
// daemon or app, and scripts use it. It imports the wire types (core/apitype) and nothing of
// the server, the sessions or the walls.
package apiclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	"github.com/openworker/openworker/core/apitype"
)

// ErrNotRunning is the error of a request to a daemon that is not running.
var ErrNotRunning = errors.New("the daemon is not running (start it with openworker serve)")

// StatusError is an answer of the daemon's other than success, in its words.
type StatusError struct {
	Code int
	Msg  string
}

func (e *StatusError) Error() string { return e.Msg }

// SessionGone says err is a call that found no daemon, or no such session in it (ended, or
// the daemon is a new one): a call that never reached the session, which may be made again
// in a session started anew.
func SessionGone(err error) bool {
	var se *StatusError
	return errors.Is(err, ErrNotRunning) || errors.As(err, &se) && (se.Code == http.StatusNotFound || se.Code == http.StatusGone)
}

// errorBody is every error answer's body.
type errorBody struct {
	Error string `json:"error"`
}

// Client talks to a daemon's local API.
type Client struct {
	path string
	http *http.Client
}

// New returns a client for the socket at path.
func New(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		MaxIdleConnsPerHost: 4,
	}
	return &Client{path: path, http: &http.Client{Transport: tr}}
}

// do sends a request and decodes a JSON answer into out. Error answers become errors.
func (c *Client) do(ctx context.Context, method, url string, in, out any) error {
	resp, err := c.send(ctx, method, url, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (c *Client) send(ctx context.Context, method, url string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	return c.sendBody(ctx, method, url, body)
}

func (c *Client) sendBody(ctx context.Context, method, url string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://openworker"+url, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if perr := apitype.CheckSocketPath(c.path); perr != nil {
			return nil, perr
		}
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, fmt.Errorf("%w: %v", ErrNotRunning, err)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errors.New("the daemon stopped before it answered (its log may say why)")
		}
		return nil, fmt.Errorf("the daemon did not answer (its log may say why): %w", err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var eb errorBody
		if json.NewDecoder(resp.Body).Decode(&eb) == nil && eb.Error != "" {
			return nil, &StatusError{Code: resp.StatusCode, Msg: eb.Error}
		}
		return nil, &StatusError{Code: resp.StatusCode, Msg: "the daemon answered " + resp.Status}
	}
	return resp, nil
}

func (c *Client) Status(ctx context.Context) (apitype.Status, error) {
	var st apitype.Status
	return st, c.do(ctx, "GET", "/v1/status", nil, &st)
}

func (c *Client) Sessions(ctx context.Context) ([]apitype.SessionInfo, error) {
	var out []apitype.SessionInfo
	return out, c.do(ctx, "GET", "/v1/sessions", nil, &out)
}

// Start starts a session. req.Program, when empty, is this process's own program: it runs
// outside the sandbox, so the daemon keeps the folder that holds it from being writable.
func (c *Client) Start(ctx context.Context, req apitype.StartRequest) (apitype.SessionInfo, error) {
	if req.Program == "" {
		req.Program = ownProgram()
	}
	if req.Env == nil {
		req.Env = ownEnv()
	}
	var out apitype.SessionInfo
	return out, c.do(ctx, "POST", "/v1/sessions", req, &out)
}

// StartHeld starts a session that lives as long as the returned closer stays open: closing
// it, or this process ending however it ends, ends the session in the daemon.
func (c *Client) StartHeld(ctx context.Context, req apitype.StartRequest) (apitype.SessionInfo, io.Closer, error) {
	req.Hold = true
	if req.Program == "" {
		req.Program = ownProgram()
	}
	if req.Env == nil {
		req.Env = ownEnv()
	}
	var out apitype.SessionInfo
	// The request outlives ctx: it is the session's lifetime, not a call's.
	resp, err := c.send(context.WithoutCancel(ctx), "POST", "/v1/sessions", req)
	if err != nil {
		return out, nil, err
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		resp.Body.Close()
		return out, nil, fmt.Errorf("the daemon hung up while starting the session: %w", err)
	}
	return out, resp.Body, nil
}

// FormRefused reports a form answer that answered nothing, for the audit trail.
func (c *Client) FormRefused(ctx context.Context, id, detail string) error {
	return c.do(ctx, "POST", "/v1/sessions/"+id+"/form-refused", apitype.FormRefusal{Detail: detail}, nil)
}

func (c *Client) End(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/v1/sessions/"+id, nil, nil)
}

// EndBecause ends a session with the reason its session.ended record gives.
func (c *Client) EndBecause(ctx context.Context, id, reason string) error {
	return c.do(ctx, "DELETE", "/v1/sessions/"+id+"?reason="+url.QueryEscape(reason), nil, nil)
}

func (c *Client) Exec(ctx context.Context, id string, req apitype.ExecRequest) (*apitype.Result, error) {
	var out apitype.Result
	return &out, c.do(ctx, "POST", "/v1/sessions/"+id+"/exec", req, &out)
}

// ExecStream runs a command and hands output chunks to onChunk as they come.
//
// With req.Stdin, stdin is streamed to the command in the same request, after it.
func (c *Client) ExecStream(ctx context.Context, id string, req apitype.ExecRequest, stdin io.Reader, onChunk func(stream string, data []byte)) (*apitype.Result, error) {
	req.Stdin = req.Stdin && stdin != nil
	var resp *http.Response
	var err error
	if req.Stdin {
		head, merr := json.Marshal(req)
		if merr != nil {
			return nil, merr
		}
		body := io.MultiReader(bytes.NewReader(append(head, '\n')), stdin)
		resp, err = c.sendBody(ctx, "POST", "/v1/sessions/"+id+"/exec?stream=1", body)
	} else {
		resp, err = c.send(ctx, "POST", "/v1/sessions/"+id+"/exec?stream=1", req)
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	for {
		var m apitype.StreamMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, errors.New("the daemon stopped during the command without saying why (killed or crashed; its log may say more)")
			}
			return nil, fmt.Errorf("the daemon hung up during the command: %w", err)
		}
		switch {
		case m.Error != "":
			return nil, fmt.Errorf("%s", m.Error)
		case m.Result != nil:
			return m.Result, nil
		default:
			onChunk(m.Stream, m.Data)
		}
	}
}

func (c *Client) Read(ctx context.Context, id string, req apitype.ReadRequest) (*apitype.Result, error) {
	var out apitype.Result
	return &out, c.do(ctx, "POST", "/v1/sessions/"+id+"/read", req, &out)
}

func (c *Client) Write(ctx context.Context, id string, req apitype.WriteRequest) (*apitype.Result, error) {
	var out apitype.Result
	return &out, c.do(ctx, "POST", "/v1/sessions/"+id+"/write", req, &out)
}

func (c *Client) List(ctx context.Context, id string, req apitype.ListRequest) (*apitype.Result, error) {
	var out apitype.Result
	return &out, c.do(ctx, "POST", "/v1/sessions/"+id+"/list", req, &out)
}

func (c *Client) AddFolder(ctx context.Context, id string, req apitype.FolderRequest) (apitype.SessionInfo, error) {
	var out apitype.SessionInfo
	return out, c.do(ctx, "POST", "/v1/sessions/"+id+"/folders", req, &out)
}

// Events follows the daemon's event stream until ctx ends or the daemon stops. cards says
// this client shows cards to a person (the app, openworker cards --watch).
func (c *Client) Events(ctx context.Context, cards bool, fn func(apitype.Event)) error {
	url := "/v1/events"
	if cards {
		url += "?cards=1"
	}
	resp, err := c.send(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var e apitype.Event
		if err := dec.Decode(&e); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		fn(e)
	}
}

// Cards lists the pending cards.
func (c *Client) Cards(ctx context.Context) ([]apitype.CardInfo, error) {
	var out []apitype.CardInfo
	return out, c.do(ctx, "GET", "/v1/cards", nil, &out)
}

// Answer answers a card.
func (c *Client) Answer(ctx context.Context, card string, req apitype.AnswerRequest) (apitype.AnswerResponse, error) {
	var out apitype.AnswerResponse
	return out, c.do(ctx, "POST", "/v1/cards/"+card+"/answer", req, &out)
}

// RequestSite asks for a site for a session and waits for the decision.
func (c *Client) RequestSite(ctx context.Context, id string, req apitype.SiteRequest) (apitype.SiteAnswer, error) {
	var out apitype.SiteAnswer
	return out, c.do(ctx, "POST", "/v1/sessions/"+id+"/sites", req, &out)
}

// RequestSiteProgress is RequestSite that tells onCard the card as soon as it is up, while
// the request waits for its answer.
func (c *Client) RequestSiteProgress(ctx context.Context, id string, req apitype.SiteRequest, onCard func(apitype.CardInfo)) (apitype.SiteAnswer, error) {
	last, err := c.cardProgress(ctx, "/v1/sessions/"+id+"/sites?progress=1", req, onCard)
	if err != nil {
		return apitype.SiteAnswer{}, err
	}
	if last.Answer == nil {
		return apitype.SiteAnswer{}, errors.New("the daemon's answer ended without a decision")
	}
	return *last.Answer, nil
}

// FetchProgress is Fetch that tells onCard each card the fetch asks, as soon as it is up.
func (c *Client) FetchProgress(ctx context.Context, id string, req apitype.FetchRequest, onCard func(apitype.CardInfo)) (apitype.FetchResult, error) {
	last, err := c.cardProgress(ctx, "/v1/sessions/"+id+"/fetch?progress=1", req, onCard)
	if err != nil {
		return apitype.FetchResult{}, err
	}
	if last.Fetch == nil {
		return apitype.FetchResult{}, errors.New("the daemon's answer ended without a result")
	}
	return *last.Fetch, nil
}

// cardProgress sends a request made with ?progress=1 and reads its lines: each card goes to
// onCard, and the last line is returned (its Error as an error).
func (c *Client) cardProgress(ctx context.Context, url string, req any, onCard func(apitype.CardInfo)) (apitype.CardProgress, error) {
	resp, err := c.send(ctx, "POST", url, req)
	if err != nil {
		return apitype.CardProgress{}, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	for {
		var p apitype.CardProgress
		if err := dec.Decode(&p); err != nil {
			return p, fmt.Errorf("the daemon's answer was cut short: %w", err)
		}
		switch {
		case p.Error != "":
			return p, errors.New(p.Error)
		case p.Card != nil && p.Answer == nil && p.Fetch == nil:
			if onCard != nil {
				onCard(*p.Card)
			}
		default:
			return p, nil
		}
	}
}

// Access returns a session's Access list.
func (c *Client) Access(ctx context.Context, id string) (apitype.Access, error) {
	var out apitype.Access
	return out, c.do(ctx, "GET", "/v1/sessions/"+id+"/access", nil, &out)
}

// ChangeAccess allows sites for a session or revokes session-only ones, and returns the list.
func (c *Client) ChangeAccess(ctx context.Context, id string, req apitype.AccessRequest) (apitype.Access, error) {
	var out apitype.Access
	return out, c.do(ctx, "POST", "/v1/sessions/"+id+"/access", req, &out)
}

// Sites returns the "Choose sites…" list.
func (c *Client) Sites(ctx context.Context) (apitype.Sites, error) {
	var out apitype.Sites
	return out, c.do(ctx, "GET", "/v1/sites", nil, &out)
}

// ChangeSites ticks, unticks, adds or removes on the "Choose sites…" list.
func (c *Client) ChangeSites(ctx context.Context, req apitype.SitesRequest) (apitype.SitesResponse, error) {
	var out apitype.SitesResponse
	return out, c.do(ctx, "POST", "/v1/sites", req, &out)
}

// Signal interrupts the command running in session id.
func (c *Client) Signal(ctx context.Context, id string, req apitype.SignalRequest) error {
	return c.do(ctx, "POST", "/v1/sessions/"+id+"/signal", req, nil)
}

// Fetch fetches a URL for a session, asking for its site on a card if needed.
func (c *Client) Fetch(ctx context.Context, id string, req apitype.FetchRequest) (apitype.FetchResult, error) {
	var out apitype.FetchResult
	return out, c.do(ctx, "POST", "/v1/sessions/"+id+"/fetch", req, &out)
}

// Credentials returns the shared logins: the entries added and the catalog.
func (c *Client) Credentials(ctx context.Context) (apitype.Credentials, error) {
	var out apitype.Credentials
	return out, c.do(ctx, "GET", "/v1/credentials", nil, &out)
}

// ChangeCredentials adds, switches or removes a shared login.
func (c *Client) ChangeCredentials(ctx context.Context, req apitype.CredentialsRequest) (apitype.CredentialsResponse, error) {
	var out apitype.CredentialsResponse
	return out, c.do(ctx, "POST", "/v1/credentials", req, &out)
}

// ownProgram is this process's executable, resolved, or "" when it cannot be found.
func ownProgram() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		return r
	}
	return exe
}

// ownEnv is this process's PATH and language, for a session's start.
func ownEnv() map[string]string {
	out := map[string]string{}
	for _, k := range apitype.ClientVars {
		if v := os.Getenv(k); v != "" {
			out[k] = v
		}
	}
	return out
}
