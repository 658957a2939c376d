// Package dnsstub is a sandbox's DNS server: it answers every name it is asked with an
// address that stands for that name (one of a reserved range, given out per session), and
// remembers which name each address stands for, so that a connection to such an address is a
// connection to the name. It resolves nothing: the real addresses are looked up by the
// proxy's relay, after the allow list admitted the name, exactly as for a request through the
// proxy. It is not for deciding anything; a name it answers may well be refused.
package dnsstub

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"

	"golang.org/x/net/dns/dnsmessage"
)

// Range is where the addresses that stand for names come from: 198.18.0.0/15, set aside for
// benchmarking networks (RFC 2544), never an address on the internet, and one the proxy
// itself never connects to.
var Range = netip.MustParsePrefix("198.18.0.0/15")

// MaxNames bounds a session's names, and so the memory its map holds (a program trying
// endless names gets SERVFAIL past it, not more memory).
const MaxNames = 16384

// TTL is how long a client may keep an answer: the address stands for the name for the
// whole session.
const TTL = 3600

// Map is one session's names and the addresses that stand for them.
type Map struct {
	mu     sync.Mutex
	byName map[string]netip.Addr
	byAddr map[netip.Addr]string
	next   netip.Addr
}

// NewMap returns an empty map.
func NewMap() *Map {
	return &Map{byName: map[string]netip.Addr{}, byAddr: map[netip.Addr]string{}, next: Range.Addr().Next()}
}

// AddrFor is the address that stands for name, given out now if it had none; false once the
// session has MaxNames names.
func (m *Map) AddrFor(name string) (netip.Addr, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.byName[name]; ok {
		return a, true
	}
	if len(m.byName) >= MaxNames || !Range.Contains(m.next) {
		return netip.Addr{}, false
	}
	a := m.next
	m.next = a.Next()
	m.byName[name] = a
	m.byAddr[a] = name
	return a, true
}

// Name is the name a stands for; false for an address the map did not give out.
func (m *Map) Name(a netip.Addr) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.byAddr[a.Unmap()]
	return n, ok
}

// Serve answers queries on pc until it is closed.
func Serve(pc net.PacketConn, m *Map) error {
	buf := make([]byte, 1500)
	out := make([]byte, 0, 512)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if ans, ok := m.answer(buf[:n], out[:0]); ok {
			pc.WriteTo(ans, from)
		}
	}
}

// answer builds the answer to one query: an A record for a name of the A kind, no record for
// any other kind (the stub gives out IPv4 addresses only, so clients connect over IPv4),
// SERVFAIL when the map is full, and nothing at all for what is not a query.
func (m *Map) answer(q, out []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil || h.Response || h.OpCode != 0 {
		return nil, false
	}
	question, err := p.Question()
	if err != nil {
		return nil, false
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	b := dnsmessage.NewBuilder(out, rh)
	b.EnableCompression()
	var addr netip.Addr
	if question.Class == dnsmessage.ClassINET && question.Type == dnsmessage.TypeA {
		name := strings.ToLower(strings.TrimSuffix(question.Name.String(), "."))
		switch {
		case name == "localhost" || strings.HasSuffix(name, ".localhost"):
			addr = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		case name == "":
			rh.RCode = dnsmessage.RCodeNameError
		default:
			var ok bool
			if addr, ok = m.AddrFor(name); !ok {
				rh.RCode = dnsmessage.RCodeServerFailure
			}
		}
		if rh.RCode != 0 {
			b = dnsmessage.NewBuilder(out, rh)
		}
	}
	if b.StartQuestions() != nil || b.Question(question) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	if addr.IsValid() {
		rr := dnsmessage.ResourceHeader{Name: question.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: TTL}
		if b.AResource(rr, dnsmessage.AResource{A: addr.As4()}) != nil {
			return nil, false
		}
	}
	msg, err := b.Finish()
	return msg, err == nil
}
