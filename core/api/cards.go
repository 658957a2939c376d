package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/openworker/openworker/core/approvals"
	"github.com/openworker/openworker/core/backend"
)

func (s *Server) cards(w http.ResponseWriter, r *http.Request) {
	cards := s.Backend.Cards()
	if cards == nil {
		cards = []backend.CardInfo{}
	}
	writeJSON(w, http.StatusOK, cards)
}

func (s *Server) answerCard(w http.ResponseWriter, r *http.Request) {
	var req AnswerRequest
	if !decode(w, r, &req) {
		return
	}
	answer := s.Backend.Answer
	if req.Exact {
		answer = s.Backend.AnswerExact
	}
	e, err := answer(r.PathValue("id"), req.Answer)
	var pending *backend.ErrPending
	switch {
	case errors.Is(err, approvals.ErrNoCard):
		writeErr(w, http.StatusNotFound, err)
		return
	case errors.As(err, &pending):
		writeJSON(w, http.StatusOK, AnswerResponse{Outcome: string(e.Outcome), Card: e.Card.ID, Site: e.Card.Ask.Target(), Message: err.Error()})
		return
	case err != nil && e.Outcome == "":
		writeErr(w, http.StatusBadRequest, err)
		return
	case err != nil:
		writeJSON(w, http.StatusOK, AnswerResponse{Outcome: string(e.Outcome), Card: e.Card.ID, Site: e.Card.Ask.Target(), Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, AnswerResponse{Outcome: string(e.Outcome), Card: e.Card.ID, Site: e.Card.Ask.Target()})
}

func (s *Server) requestSite(w http.ResponseWriter, r *http.Request) {
	var req SiteRequest
	if !decode(w, r, &req) {
		return
	}
	kind := approvals.Kind(req.Kind)
	if kind != "" && kind != approvals.Command && kind != approvals.Fetch {
		writeErr(w, http.StatusBadRequest, fmt.Errorf("kind %q is not command or fetch", req.Kind))
		return
	}
	onCard, last := cardProgress(w, r)
	ans, err := s.Backend.RequestSite(r.Context(), backend.SiteRequest{Session: r.PathValue("id"), Site: req.Site, Reason: req.Reason,
		Kind: kind, Wait: time.Duration(req.WaitMS) * time.Millisecond, NoWait: req.NoWait, OnCard: onCard})
	if last != nil {
		if err != nil {
			last(CardProgress{Error: err.Error()})
		} else {
			last(CardProgress{Answer: &ans})
		}
		return
	}
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

// cardProgress is, for a request made with ?progress=1, what writes its card as soon as it
// is up and then its last line; for another, neither (nil, nil). The answer's status is
// 200 once streaming: an error is its last line.
func cardProgress(w http.ResponseWriter, r *http.Request) (onCard func(backend.CardInfo), last func(CardProgress)) {
	if r.URL.Query().Get("progress") == "" {
		return nil, nil
	}
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	fl, _ := w.(http.Flusher)
	started := false
	write := func(p CardProgress) {
		mu.Lock()
		defer mu.Unlock()
		if !started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			started = true
		}
		_ = enc.Encode(p)
		if fl != nil {
			fl.Flush()
		}
	}
	return func(c backend.CardInfo) { write(CardProgress{Card: &c}) }, write
}

func (s *Server) access(w http.ResponseWriter, r *http.Request) {
	a, err := s.Backend.Access(r.PathValue("id"))
	if err != nil {
		writeErr(w, http.StatusNotFound, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) changeAccess(w http.ResponseWriter, r *http.Request) {
	var req AccessRequest
	if !decode(w, r, &req) {
		return
	}
	id := r.PathValue("id")
	for _, site := range req.Allow {
		if err := s.Backend.AllowForSessionBy(id, site, backend.ByCLI); err != nil {
			writeErr(w, http.StatusBadRequest, err)
			return
		}
	}
	for _, site := range req.Revoke {
		if err := s.Backend.RevokeBy(id, site, backend.ByCLI); err != nil {
			writeErr(w, http.StatusBadRequest, err)
			return
		}
	}
	if req.LocalServers != nil {
		if err := s.Backend.SetLocalServers(id, *req.LocalServers); err != nil {
			writeErr(w, http.StatusBadRequest, err)
			return
		}
	}
	for _, ports := range []struct {
		list []int
		on   bool
	}{{req.Publish, true}, {req.Unpublish, false}} {
		for _, port := range ports.list {
			if err := s.Backend.SetPublishBy(id, port, ports.on, backend.ByCLI); err != nil {
				writeErr(w, http.StatusBadRequest, err)
				return
			}
		}
	}
	s.access(w, r)
}

func (s *Server) sites(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.Backend.Sites())
}

func (s *Server) changeSites(w http.ResponseWriter, r *http.Request) {
	var req SitesRequest
	if !decode(w, r, &req) {
		return
	}
	var err error
	switch req.Action {
	case "tick":
		err = s.Backend.TickBy(req.Value, backend.ByCLI)
	case "untick":
		err = s.Backend.UntickBy(req.Value, backend.ByCLI)
	case "add":
		err = s.Backend.AddSiteBy(req.Value, backend.ByCLI)
	case "remove":
		err = s.Backend.RemoveSiteBy(req.Value, backend.ByCLI)
	default:
		err = fmt.Errorf("action %q is not tick, untick, add or remove", req.Action)
	}
	var pending *backend.ErrPending
	if err != nil && !errors.As(err, &pending) {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	out := SitesResponse{Sites: s.Backend.Sites()}
	if err != nil {
		out.Message = err.Error()
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) fetch(w http.ResponseWriter, r *http.Request) {
	var req FetchRequest
	if !decode(w, r, &req) {
		return
	}
	onCard, last := cardProgress(w, r)
	res, err := s.Backend.Fetch(r.Context(), backend.FetchRequest{Session: r.PathValue("id"), URL: req.URL, Reason: req.Reason,
		Wait: time.Duration(req.WaitMS) * time.Millisecond, NoWait: req.NoWait, OnCard: onCard})
	if last != nil {
		if err != nil {
			last(CardProgress{Error: err.Error()})
		} else {
			last(CardProgress{Fetch: &res})
		}
		return
	}
	if err != nil {
		writeErr(w, http.StatusBadGateway, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
