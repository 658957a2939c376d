package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/openworker/openworker/core/apitype"

	"github.com/openworker/openworker/core/backend"
)

// CredentialsRequest is apitype's, the local API's wire type.
type CredentialsRequest = apitype.CredentialsRequest

// CredentialsResponse is apitype's, the local API's wire type.
type CredentialsResponse = apitype.CredentialsResponse

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
		if req.Name == "ssh" {
			_, err = s.Backend.AddSSH(req.Keys, !req.Off)
			break
		}
		_, err = s.Backend.AddLogin(req.Name, req.Secrets, !req.Off)
	case "ssh-keys":
		_, err = s.Backend.SetSSHKeys(req.Keys)
	case "secrets":
		_, err = s.Backend.SetSecrets(req.Name, req.Secrets)
	case "add-path":
		_, err = s.Backend.AddCredentialPath(req.Path, req.Label, req.Hosts, req.Var, !req.Off)
	case "enable", "disable":
		_, err = s.Backend.SetCredentialEnabled(req.Name, req.Action == "enable")
	case "remove":
		err = s.Backend.RemoveCredential(req.Name)
	default:
		err = fmt.Errorf("action %q is not add, add-path, enable, disable, remove, ssh-keys or secrets", req.Action)
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
