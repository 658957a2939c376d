package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/openworker/openworker/core/backend"
)

// CredentialsRequest changes the shared logins: add (a CLI's login by Name), add-path (a
// file or folder under the home folder, with its Label, Hosts and Var), enable, disable or
// remove (an entry by Name: a catalog name or "~/path").
type CredentialsRequest struct {
	Action string   `json:"action"`
	Name   string   `json:"name,omitempty"`
	Path   string   `json:"path,omitempty"`
	Label  string   `json:"label,omitempty"`
	Hosts  []string `json:"hosts,omitempty"`
	Var    string   `json:"var,omitempty"`
	// Off adds the entry switched off.
	Off bool `json:"off,omitempty"`
}

// CredentialsResponse is the list after a change, and what was left pending.
type CredentialsResponse struct {
	Credentials backend.Credentials `json:"credentials"`
	Message     string              `json:"message,omitempty"`
}

func (s *Server) credentials(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.Backend.Credentials())
}

func (s *Server) changeCredentials(w http.ResponseWriter, r *http.Request) {
	var req CredentialsRequest
	if !decode(w, r, &req) {
		return
	}
	var err error
	switch req.Action {
	case "add":
		_, err = s.Backend.AddCredential(req.Name, !req.Off)
	case "add-path":
		_, err = s.Backend.AddCredentialPath(req.Path, req.Label, req.Hosts, req.Var, !req.Off)
	case "enable", "disable":
		_, err = s.Backend.SetCredentialEnabled(req.Name, req.Action == "enable")
	case "remove":
		err = s.Backend.RemoveCredential(req.Name)
	default:
		err = fmt.Errorf("action %q is not add, add-path, enable, disable or remove", req.Action)
	}
	var pending *backend.ErrPending
	if err != nil && !errors.As(err, &pending) {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	out := CredentialsResponse{Credentials: s.Backend.Credentials()}
	if err != nil {
		out.Message = err.Error()
	}
	writeJSON(w, http.StatusOK, out)
}

// Credentials returns the shared logins: the entries added and the catalog.
func (c *Client) Credentials(ctx context.Context) (backend.Credentials, error) {
	var out backend.Credentials
	return out, c.do(ctx, "GET", "/v1/credentials", nil, &out)
}

// ChangeCredentials adds, switches or removes a shared login.
func (c *Client) ChangeCredentials(ctx context.Context, req CredentialsRequest) (CredentialsResponse, error) {
	var out CredentialsResponse
	return out, c.do(ctx, "POST", "/v1/credentials", req, &out)
}
