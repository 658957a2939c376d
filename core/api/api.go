// Package api is the local API: HTTP and JSON over a Unix socket in the state folder, which
// only its owner can open (the folder and socket are owner-only, and every connection's peer
// uid is checked). The CLI's session commands, the MCP server and watchers are its clients.
// A sandboxed command cannot reach it: the state folder is outside every wall, and the
// sandbox has no Unix sockets.
package api

import (
	"path/filepath"

	"github.com/openworker/openworker/core/apitype"
)

// SocketName is the socket's file name in the state folder.
const SocketName = "openworker.sock"

// SocketPath returns the socket's path for a state folder.
func SocketPath(stateDir string) string { return filepath.Join(stateDir, SocketName) }

// StartRequest is apitype's, the local API's wire type.
type StartRequest = apitype.StartRequest

// FormRefusal is apitype's, the local API's wire type.
type FormRefusal = apitype.FormRefusal

// SessionInfo is apitype's, the local API's wire type.
type SessionInfo = apitype.SessionInfo

// ExecRequest is apitype's, the local API's wire type.
type ExecRequest = apitype.ExecRequest

// SignalRequest is apitype's, the local API's wire type.
type SignalRequest = apitype.SignalRequest

// ReadRequest is apitype's, the local API's wire type.
type ReadRequest = apitype.ReadRequest

// WriteRequest is apitype's, the local API's wire type.
type WriteRequest = apitype.WriteRequest

// ListRequest is apitype's, the local API's wire type.
type ListRequest = apitype.ListRequest

// FolderRequest is apitype's, the local API's wire type.
type FolderRequest = apitype.FolderRequest

// StreamMessage is apitype's, the local API's wire type.
type StreamMessage = apitype.StreamMessage

// Status is apitype's, the local API's wire type.
type Status = apitype.Status

// errorBody is every error answer's body.
type errorBody struct {
	Error string `json:"error"`
}

// AnswerRequest is apitype's, the local API's wire type.
type AnswerRequest = apitype.AnswerRequest

// AnswerResponse is apitype's, the local API's wire type.
type AnswerResponse = apitype.AnswerResponse

// SiteRequest is apitype's, the local API's wire type.
type SiteRequest = apitype.SiteRequest

// AccessRequest is apitype's, the local API's wire type.
type AccessRequest = apitype.AccessRequest

// SitesRequest is apitype's, the local API's wire type.
type SitesRequest = apitype.SitesRequest

// SitesResponse is apitype's, the local API's wire type.
type SitesResponse = apitype.SitesResponse

// FetchRequest is apitype's, the local API's wire type.
type FetchRequest = apitype.FetchRequest

// CardProgress is apitype's, the local API's wire type.
type CardProgress = apitype.CardProgress
