package session

import (
	"github.com/openworker/openworker/core/dnsstub"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/proxy"
	"github.com/openworker/openworker/core/sandbox"
)

// egress is the proxy whose list decides the session's connections: the proxy in allowlist
// mode, the open mode's relay decider in open mode (nil without one).
func (s *Session) egress() *proxy.Proxy {
	if s.proxy != nil {
		return s.proxy
	}
	return s.openRelay
}

// serveRelay serves the relay and the DNS stub of a wall whose network sends every
// connection to them: the same list, denials, refusal record and hook, caps and buffers as
// the proxy's (in open mode, a decider of its own that admits every public address).
func (s *Session) serveRelay(proc sandbox.Process) error {
	rl, ok := proc.(sandbox.Relayer)
	if !ok {
		return nil
	}
	l, pc := rl.RelayListeners()
	if l == nil {
		if pc != nil {
			pc.Close()
		}
		return nil
	}
	px := s.proxy
	if s.Network == policy.Open {
		if s.openRelay == nil {
			var err error
			s.openRelay, err = proxy.New(proxy.Options{Token: proxy.NewToken(), HowToAllow: s.spec.HowToAllow, OnRefusal: s.spec.OnRefusal,
				Denied: s.spec.Denied, MaxConns: s.spec.ProxyConns, Shared: s.m.proxyConns, Resolver: s.m.opts.Resolver, Dial: s.m.opts.Dial, StandIns: s.standIns})
			if err != nil {
				l.Close()
				pc.Close()
				return err
			}
			s.openRelay.SetAllowList(allowList(s.spec))
			if err := s.serveHTTPSocket(s.openRelay); err != nil {
				l.Close()
				pc.Close()
				return err
			}
		}
		px = s.openRelay
	}
	if px == nil {
		l.Close()
		pc.Close()
		return nil
	}
	if s.names == nil {
		s.names = dnsstub.NewMap()
	}
	// The last wall's sockets hold its network namespace: let them go.
	if s.stub != nil {
		s.stub.Close()
	}
	if s.relayLn != nil {
		s.relayLn.Close()
	}
	s.stub, s.relayLn = pc, l
	s.relayed = true
	go dnsstub.Serve(pc, s.names)
	go px.ServeRelay(l, proxy.Relay{Names: s.names.Hold, Open: s.Network == policy.Open})
	return nil
}

// closeRelay ends the open mode's relay decider and the stub.
func (s *Session) closeRelay() {
	if s.openRelay != nil {
		_ = s.openRelay.Close()
	}
	if s.stub != nil {
		s.stub.Close()
	}
	if s.relayLn != nil {
		s.relayLn.Close()
	}
}

// openReach is OpenReach for this session: nothing once its wall has the relay, which keeps
// this machine's loopback and private services out of an open session's reach.
func (s *Session) openReach() string {
	if s.relayed {
		return ""
	}
	return OpenReach(s.Enforcement, s.Network)
}

// openOwnNetwork says whether prov gives an open session a network of its own, which keeps
// this machine's loopback out: the wall check then proves it from inside, as for allowlist.
func openOwnNetwork(prov sandbox.Provider) bool {
	o, ok := prov.(interface{ OpenOwnNetwork() bool })
	return ok && o.OpenOwnNetwork()
}
