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
	"slices"
	"strings"
	"sync"

	"golang.org/x/net/dns/dnsmessage"
)

// Range is where the addresses that stand for names come from: 198.18.0.0/15, set aside for
// benchmarking networks (RFC 2544), never an address on the internet, and one the proxy
// itself never connects to.
var Range = netip.MustParsePrefix("198.18.0.0/15")

// MaxNames bounds a session's names, and so the memory its map holds: past it, the name no
// connection uses that was asked for or connected to longest ago is given back. Only when
// every one of them is held by an open connection is a new name refused (SERVFAIL), and the
// map keeps which (TakeRefused) for the session to say.
const MaxNames = 16384

// TTL is how long a client may keep an answer. A name given back after MaxNames newer ones
// loses its address; the address is given to another name only once the rest of Range has
// been handed out since (more than 100,000 names later), so a client that kept an old
// answer reaches nothing rather than another name.
const TTL = 3600

// maxRefusedKept bounds the refused names kept for the session to say.
const maxRefusedKept = 8

// Map is one session's names and the addresses that stand for them.
type Map struct {
	mu     sync.Mutex
	byName map[string]*entry
	byAddr map[netip.Addr]*entry
	// free is the list of names no connection holds, most recently used first; held ones
	// are off it until their last connection ends.
	free list
	next netip.Addr
	// refused are names that could not be given an address since the last TakeRefused,
	// the first maxRefusedKept of them, and refusedTotal how many in all.
	refused      []string
	refusedTotal int
}

// entry is one name and its address.
type entry struct {
	name       string
	addr       netip.Addr
	held       int
	prev, next *entry // on Map.free while held is 0
}

// list is a doubly linked list of entries, most recently used at the front.
type list struct{ front, back *entry }

func (l *list) pushFront(e *entry) {
	e.prev, e.next = nil, l.front
	if l.front != nil {
		l.front.prev = e
	} else {
		l.back = e
	}
	l.front = e
}

func (l *list) remove(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.front = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.back = e.prev
	}
	e.prev, e.next = nil, nil
}

// NewMap returns an empty map.
func NewMap() *Map {
	return &Map{byName: map[string]*entry{}, byAddr: map[netip.Addr]*entry{}, next: Range.Addr().Next()}
}

// used marks e as just used; m.mu is held.
func (m *Map) used(e *entry) {
	if e.held == 0 {
		m.free.remove(e)
		m.free.pushFront(e)
	}
}

// AddrFor is the address that stands for name, given out now if it had none; false when the
// session has MaxNames names and every one is held by an open connection.
func (m *Map) AddrFor(name string) (netip.Addr, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.byName[name]; ok {
		m.used(e)
		return e.addr, true
	}
	if len(m.byName) >= MaxNames {
		old := m.free.back
		if old == nil {
			m.refusedTotal++
			if len(m.refused) < maxRefusedKept && !slices.Contains(m.refused, name) {
				m.refused = append(m.refused, name)
			}
			return netip.Addr{}, false
		}
		m.free.remove(old)
		delete(m.byName, old.name)
		delete(m.byAddr, old.addr)
	}
	a := m.nextFree()
	e := &entry{name: name, addr: a}
	m.byName[name] = e
	m.byAddr[a] = e
	m.free.pushFront(e)
	return a, true
}

// nextFree is the next address of Range that stands for no name, in turn through the whole
// range; m.mu is held, and fewer than MaxNames addresses are taken, so one is found.
func (m *Map) nextFree() netip.Addr {
	for {
		a := m.next
		m.next = a.Next()
		if !Range.Contains(m.next) || m.next == lastAddr {
			m.next = Range.Addr().Next()
		}
		if _, taken := m.byAddr[a]; !taken {
			return a
		}
	}
}

// lastAddr is Range's broadcast-like last address, never given out.
var lastAddr = func() netip.Addr {
	b := Range.Addr().As4()
	n := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	n |= 1<<(32-Range.Bits()) - 1
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}()

// Name is the name a stands for; false for an address the map did not give out. It counts
// as a use of the name.
func (m *Map) Name(a netip.Addr) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.byAddr[a.Unmap()]
	if !ok {
		return "", false
	}
	m.used(e)
	return e.name, true
}

// Hold is Name for a connection to a: the name is not given back until release is called
// (once; later calls do nothing), when the connection has ended.
func (m *Map) Hold(a netip.Addr) (name string, release func(), ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.byAddr[a.Unmap()]
	if !ok {
		return "", nil, false
	}
	if e.held == 0 {
		m.free.remove(e)
	}
	e.held++
	var once sync.Once
	return e.name, func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if e.held--; e.held == 0 {
				m.free.pushFront(e)
			}
		})
	}, true
}

// TakeRefused returns the names that could not be given an address since it was last
// called (the first few of them) and how many there were in all, and forgets them.
func (m *Map) TakeRefused() (names []string, total int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	names, total = m.refused, m.refusedTotal
	m.refused, m.refusedTotal = nil, 0
	return names, total
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
