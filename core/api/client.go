package api

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

	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/session"
)

// Client talks to a daemon's local API.
type Client struct {
	path string
	http *http.Client
}

// NewClient returns a client for the socket at path.
func NewClient(path string) *Client {
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
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, fmt.Errorf("the daemon is not running (start it with openworker serve): %w", err)
		}
		return nil, fmt.Errorf("the daemon did not answer (its log may say why): %w", err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var eb errorBody
		if json.NewDecoder(resp.Body).Decode(&eb) == nil && eb.Error != "" {
			return nil, fmt.Errorf("%s", eb.Error)
		}
		return nil, fmt.Errorf("the daemon answered %s", resp.Status)
	}
	return resp, nil
}

func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	return st, c.do(ctx, "GET", "/v1/status", nil, &st)
}

func (c *Client) Sessions(ctx context.Context) ([]SessionInfo, error) {
	var out []SessionInfo
	return out, c.do(ctx, "GET", "/v1/sessions", nil, &out)
}

func (c *Client) Start(ctx context.Context, req StartRequest) (SessionInfo, error) {
	var out SessionInfo
	return out, c.do(ctx, "POST", "/v1/sessions", req, &out)
}

func (c *Client) End(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/v1/sessions/"+id, nil, nil)
}

func (c *Client) Exec(ctx context.Context, id string, req ExecRequest) (*session.Result, error) {
	var out session.Result
	return &out, c.do(ctx, "POST", "/v1/sessions/"+id+"/exec", req, &out)
}

// ExecStream runs a command and hands output chunks to onChunk as they come.
//
// With req.Stdin, stdin is streamed to the command in the same request, after it.
func (c *Client) ExecStream(ctx context.Context, id string, req ExecRequest, stdin io.Reader, onChunk func(stream string, data []byte)) (*session.Result, error) {
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
		var m StreamMessage
		if err := dec.Decode(&m); err != nil {
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

func (c *Client) Read(ctx context.Context, id string, req ReadRequest) (*session.Result, error) {
	var out session.Result
	return &out, c.do(ctx, "POST", "/v1/sessions/"+id+"/read", req, &out)
}

func (c *Client) Write(ctx context.Context, id string, req WriteRequest) (*session.Result, error) {
	var out session.Result
	return &out, c.do(ctx, "POST", "/v1/sessions/"+id+"/write", req, &out)
}

func (c *Client) List(ctx context.Context, id string, req ListRequest) (*session.Result, error) {
	var out session.Result
	return &out, c.do(ctx, "POST", "/v1/sessions/"+id+"/list", req, &out)
}

func (c *Client) AddFolder(ctx context.Context, id string, req FolderRequest) (SessionInfo, error) {
	var out SessionInfo
	return out, c.do(ctx, "POST", "/v1/sessions/"+id+"/folders", req, &out)
}

// Events follows the daemon's event stream until ctx ends or the daemon stops. cards says
// this client shows cards to a person (the app, openworker cards --watch).
func (c *Client) Events(ctx context.Context, cards bool, fn func(backend.Event)) error {
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
		var e backend.Event
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
func (c *Client) Cards(ctx context.Context) ([]backend.CardInfo, error) {
	var out []backend.CardInfo
	return out, c.do(ctx, "GET", "/v1/cards", nil, &out)
}

// Answer answers a card.
func (c *Client) Answer(ctx context.Context, card string, req AnswerRequest) (AnswerResponse, error) {
	var out AnswerResponse
	return out, c.do(ctx, "POST", "/v1/cards/"+card+"/answer", req, &out)
}

// RequestSite asks for a site for a session and waits for the decision.
func (c *Client) RequestSite(ctx context.Context, id string, req SiteRequest) (backend.SiteAnswer, error) {
	var out backend.SiteAnswer
	return out, c.do(ctx, "POST", "/v1/sessions/"+id+"/sites", req, &out)
}

// Access returns a session's Access list.
func (c *Client) Access(ctx context.Context, id string) (backend.Access, error) {
	var out backend.Access
	return out, c.do(ctx, "GET", "/v1/sessions/"+id+"/access", nil, &out)
}

// ChangeAccess allows sites for a session or revokes session-only ones, and returns the list.
func (c *Client) ChangeAccess(ctx context.Context, id string, req AccessRequest) (backend.Access, error) {
	var out backend.Access
	return out, c.do(ctx, "POST", "/v1/sessions/"+id+"/access", req, &out)
}

// Sites returns the "Choose sites…" list.
func (c *Client) Sites(ctx context.Context) (backend.Sites, error) {
	var out backend.Sites
	return out, c.do(ctx, "GET", "/v1/sites", nil, &out)
}

// ChangeSites ticks, unticks, adds or removes on the "Choose sites…" list.
func (c *Client) ChangeSites(ctx context.Context, req SitesRequest) (SitesResponse, error) {
	var out SitesResponse
	return out, c.do(ctx, "POST", "/v1/sites", req, &out)
}

// Signal interrupts the command running in session id.
func (c *Client) Signal(ctx context.Context, id string, req SignalRequest) error {
	return c.do(ctx, "POST", "/v1/sessions/"+id+"/signal", req, nil)
}

// Fetch fetches a URL for a session, asking for its site on a card if needed.
func (c *Client) Fetch(ctx context.Context, id string, req FetchRequest) (backend.FetchResult, error) {
	var out backend.FetchResult
	return out, c.do(ctx, "POST", "/v1/sessions/"+id+"/fetch", req, &out)
}
