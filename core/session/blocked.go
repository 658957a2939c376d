package session

import (
	"time"

	"github.com/openworker/openworker/core/proxy"
)

// blockedBetween are the sites the session's proxy (or relay) refused from from to to, once
// each, with the few words of why and how whoever reads the session's refusals opens each.
func (s *Session) blockedBetween(from, to time.Time) []Blocked {
	px := s.egress()
	if px == nil {
		return nil
	}
	px.Settle(200 * time.Millisecond)
	var out []Blocked
	seen := map[string]bool{}
	for _, r := range px.Blocked(from, to.Add(50*time.Millisecond)) {
		b := Blocked{Host: r.Host, Port: r.Port, Reason: shortReason(r), Allow: r.Allow}
		if how := s.spec.HowToAllow; how != nil {
			// As the proxy would say it now: an answer since may have changed the ways.
			b.HowTo = how(b.ToAllow())
		}
		if !seen[b.String()] {
			seen[b.String()] = true
			out = append(out, b)
		}
	}
	return out
}

// shortReason is the few words a result gives for a refusal; the client got the full line.
func shortReason(r proxy.Refusal) string {
	switch {
	case r.Denied:
		return "denied for this session"
	case r.Header == proxy.BlockedByAllowlist:
		return "not on the allow list"
	case r.Header == proxy.BlockedPrivateAddress && r.Allow != "":
		return "leads to " + r.Allow + ", a loopback, private or this machine's own address, which only an entry naming that address opens"
	case r.Header == proxy.BlockedPrivateAddress:
		return "a loopback, private or this machine's own address, allowed only by an entry that names it literally"
	}
	return r.Reason
}
