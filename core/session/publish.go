package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/openworker/openworker/core/apitype"
	"github.com/openworker/openworker/core/sandbox"
)

// Publishing: a server a command starts in a sandbox with a network of its own (Linux)
// listens on the sandbox's own loopback, which nothing outside reaches. With the session's
// local servers on, every port a command listens on there is published on this machine's
// 127.0.0.1, never another address, while it listens: at the same port, or the next free
// one, which the line after the command names. A port the person asked for (--publish, the
// Access list) is published the same way without the switch. A connection to a published
// port is carried to the server inside with a socket made inside (sandbox.Publisher): only
// this machine's loopback can connect in, and the host's end only accepts, so nothing inside
// can use it to reach anything out here.

// Published is apitype's, the local API's wire type.
type Published = apitype.Published

const (
	// publishEvery is how often the sandbox's listeners are looked at while something is
	// to be published: a dev server is published within this of its listening.
	publishEvery = 250 * time.Millisecond
	// publishTries is how many ports from a server's own one up are tried on this machine
	// before the kernel picks one.
	publishTries = 100
	// publishedConns bounds the connections carried into one sandbox at once.
	publishedConns = 256
	// publishedPorts bounds the ports one sandbox publishes at once: each holds a port and
	// a descriptor of this machine's, which a command listening everywhere could exhaust.
	publishedPorts = 64
)

// publisher publishes one running wall's listening ports.
type publisher struct {
	pub sandbox.Publisher
	// own are the ports of the core's own listeners inside (the proxy's, the relay's, the
	// forwarded host ports'), which are never published.
	own func() []int
	// onNote, when set, is told each line at once (openworker run).
	onNote func(string)

	mu    sync.Mutex
	all   bool  // local servers: every port
	asked []int // ports the person asked for
	ports map[uint16]*publication
	notes []string // said with the next result
	conns int
	full  bool          // publishedPorts was reached, and said
	loop  chan struct{} // closed to stop the loop; nil when none runs
	done  chan struct{}
	ended bool
}

// publication is one published port.
type publication struct {
	inside netip.AddrPort // where a connection is carried, inside
	host   int            // the port on this machine's 127.0.0.1
	ln     net.Listener
	open   map[net.Conn]bool // both ends of every connection carried
}

func newPublisher(pub sandbox.Publisher, own func() []int, all bool, asked []int, onNote func(string)) *publisher {
	p := &publisher{pub: pub, own: own, all: all, asked: slices.Clone(asked), ports: map[uint16]*publication{}, onNote: onNote}
	p.mu.Lock()
	p.runLocked()
	p.mu.Unlock()
	return p
}

// want changes what is published: every port (all), or the ports asked for.
func (p *publisher) want(all bool, asked []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all, p.asked = all, slices.Clone(asked)
	p.runLocked()
	p.scanLocked()
}

// runLocked starts the loop that looks at the listeners when something is to be published,
// and stops it when nothing is.
func (p *publisher) runLocked() {
	wanted := p.all || len(p.asked) > 0
	switch {
	case p.ended:
	case wanted && p.loop == nil:
		p.loop, p.done = make(chan struct{}), make(chan struct{})
		go p.run(p.loop, p.done)
	case !wanted && p.loop != nil:
		close(p.loop)
		p.loop = nil
	}
}

func (p *publisher) run(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(publishEvery)
	defer t.Stop()
	for {
		p.scan()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// scan publishes what listens now and is wanted, and takes back what no longer listens.
func (p *publisher) scan() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.scanLocked()
}

func (p *publisher) scanLocked() {
	if p.ended {
		return
	}
	ls, err := p.pub.Listening()
	if err != nil {
		return // the sandbox is ending
	}
	own := p.own()
	now := map[uint16]netip.AddrPort{}
	for _, a := range ls {
		port := a.Port()
		if slices.Contains(own, int(port)) || !p.all && !slices.Contains(p.asked, int(port)) {
			continue
		}
		to := insideAddr(a)
		if have, ok := now[port]; ok && have.Addr().Is4() {
			continue // one address is enough; IPv4's first
		}
		now[port] = to
	}
	for port, pb := range p.ports {
		if _, ok := now[port]; !ok {
			p.unpublishLocked(port, pb)
			p.say(fmt.Sprintf("openworker: port %d in the sandbox is no longer published on this machine: nothing listens there now\n", port))
		}
	}
	for _, port := range sortedPorts(now) {
		if _, ok := p.ports[port]; ok {
			continue
		}
		if len(p.ports) >= publishedPorts {
			if !p.full {
				p.full = true
				p.say(fmt.Sprintf("openworker: servers in the sandbox listen on more than %d ports; port %d and those after it are not published\n", publishedPorts, port))
			}
			break
		}
		ln, host, err := listenHost(int(port))
		if err != nil {
			p.say(fmt.Sprintf("openworker: a server in the sandbox listens on port %d, which could not be published on this machine: %v\n", port, err))
			// Said once: it stays in the list without a listener until it stops listening.
			p.ports[port] = &publication{inside: now[port]}
			continue
		}
		pb := &publication{inside: now[port], host: host, ln: ln, open: map[net.Conn]bool{}}
		p.ports[port] = pb
		go p.accept(pb)
		line := fmt.Sprintf("openworker: a server in the sandbox listens on port %d: published on this machine at 127.0.0.1:%d while it listens\n", port, host)
		if host != int(port) {
			line = fmt.Sprintf("openworker: a server in the sandbox listens on port %d: published on this machine at 127.0.0.1:%d (127.0.0.1:%d is taken here) while it listens\n", port, host, port)
		}
		p.say(line)
	}
}

// insideAddr is where a connection to a server listening at a is carried: a server on every
// address of the sandbox's network is on its loopback.
func insideAddr(a netip.AddrPort) netip.AddrPort {
	switch ip := a.Addr(); {
	case ip == netip.IPv4Unspecified():
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), a.Port())
	case ip == netip.IPv6Unspecified():
		return netip.AddrPortFrom(netip.IPv6Loopback(), a.Port())
	}
	return a
}

func sortedPorts(m map[uint16]netip.AddrPort) []uint16 {
	out := make([]uint16, 0, len(m))
	for port := range m {
		out = append(out, port)
	}
	slices.Sort(out)
	return out
}

// listenHost listens on this machine's 127.0.0.1 at port, or the next free port after it,
// or one the kernel picks.
func listenHost(port int) (net.Listener, int, error) {
	for hp := port; hp < port+publishTries && hp <= 65535; hp++ {
		if ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(hp)); err == nil {
			return ln, hp, nil
		}
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	return ln, ln.Addr().(*net.TCPAddr).Port, nil
}

func (p *publisher) say(line string) {
	if p.onNote != nil {
		p.onNote(line)
		return
	}
	p.notes = append(p.notes, line)
}

// unpublishLocked closes a published port and every connection carried through it.
func (p *publisher) unpublishLocked(port uint16, pb *publication) {
	delete(p.ports, port)
	if pb.ln != nil {
		pb.ln.Close()
	}
	for c := range pb.open {
		c.Close()
	}
	pb.open = nil
}

// accept carries each connection to a published port to the server inside.
func (p *publisher) accept(pb *publication) {
	for {
		c, err := pb.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return
		}
		p.mu.Lock()
		if p.ended || pb.open == nil || p.ports[pb.inside.Port()] != pb || p.conns >= publishedConns {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns++
		pb.open[c] = true
		p.mu.Unlock()
		go p.carry(pb, c)
	}
}

// carry connects c to the server inside and copies both ways until both have ended; the
// end of one way is passed on as a half-close.
func (p *publisher) carry(pb *publication, c net.Conn) {
	defer func() {
		c.Close()
		p.mu.Lock()
		delete(pb.open, c)
		p.conns--
		p.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	in, err := p.pub.DialInside(ctx, pb.inside)
	cancel()
	if err != nil {
		return
	}
	p.mu.Lock()
	if pb.open == nil || !pb.open[c] {
		p.mu.Unlock()
		in.Close()
		return
	}
	pb.open[in] = true
	p.mu.Unlock()
	defer func() {
		in.Close()
		p.mu.Lock()
		delete(pb.open, in)
		p.mu.Unlock()
	}()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); copyHalf(in, c) }()
	copyHalf(c, in)
	wg.Done()
	wg.Wait()
}

// copyHalf copies from src to dst until src ends, then ends dst's writing side.
func copyHalf(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		dst.Close()
	}
}

// close ends every publication and the loop, for good: the wall is ending.
func (p *publisher) close() {
	p.mu.Lock()
	p.ended = true
	loop, done := p.loop, p.done
	p.loop = nil
	for port, pb := range p.ports {
		p.unpublishLocked(port, pb)
	}
	p.mu.Unlock()
	if loop != nil {
		close(loop)
		<-done
	}
}

// takeNotes are the lines to say with the next result, after a look at the listeners now:
// a server the command started is named in the line after it.
func (p *publisher) takeNotes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loop != nil {
		p.scanLocked()
	}
	n := p.notes
	p.notes = nil
	return n
}

// list is what is published now, and every port asked for, published or not.
func (p *publisher) list() []Published {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Published
	for port, pb := range p.ports {
		out = append(out, Published{Port: int(port), HostPort: pb.host, Asked: slices.Contains(p.asked, int(port))})
	}
	for _, port := range p.asked {
		if _, ok := p.ports[uint16(port)]; !ok {
			out = append(out, Published{Port: port, Asked: true})
		}
	}
	slices.SortFunc(out, func(a, b Published) int { return a.Port - b.Port })
	return out
}

// startPublishing publishes the servers of the wall proc, which has just started, as the
// session asks; a wall whose servers are on this machine's loopback already (direct, or a
// network shared with this machine) publishes nothing, and says so once when asked to.
func (s *Session) startPublishing(proc sandbox.Process) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	pub, ok := proc.(sandbox.Publisher)
	if !ok || !pub.OwnNetwork() {
		if len(s.pubAsked) > 0 || s.pubAll && s.Enforcement != sandbox.Seatbelt {
			s.hints.sayOnce("openworker: this session's servers listen on this machine's loopback already (" + sharedLoopback(s.Enforcement) + "): nothing needs publishing\n")
		}
		return
	}
	// The core's own listeners inside: the proxy's (allowlist), the relay's, and the
	// forwarded host ports', which are this machine's services and never published back.
	var fixed []int
	if s.proxy != nil && s.port != 0 {
		fixed = append(fixed, s.port)
	}
	if s.relayLn != nil {
		if a, ok := s.relayLn.Addr().(*net.TCPAddr); ok {
			fixed = append(fixed, a.Port)
		}
	}
	own := func() []int { return append(slices.Clone(fixed), s.Forwards()...) }
	s.pub = newPublisher(pub, own, s.pubAll, s.pubAsked, s.spec.OnPublished)
}

// sharedLoopback says why a wall's servers are on this machine's loopback.
func sharedLoopback(e sandbox.Enforcement) string {
	if e == sandbox.Direct {
		return "it has no sandbox"
	}
	return "its network is this machine's"
}

// stopPublishing takes back every port the ending wall published.
func (s *Session) stopPublishing() {
	s.pubMu.Lock()
	p := s.pub
	s.pub = nil
	s.pubMu.Unlock()
	if p != nil {
		p.close()
	}
}

// publishes says the running wall's servers are on a loopback of its own, which the
// session publishes from.
func (s *Session) publishes() bool {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	return s.pub != nil
}

// setPublishing changes what the session publishes: every port (all, when given), and the
// ports asked for (asked, when given); the running wall's publisher follows at once.
func (s *Session) setPublishing(all *bool, asked []int) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	if all != nil {
		s.pubAll = *all
		s.localServers.Store(*all)
	}
	if asked != nil {
		s.pubAsked = slices.Clone(asked)
	}
	if s.pub != nil {
		s.pub.want(s.pubAll, s.pubAsked)
	}
}

// SetPublish publishes port of the sandbox's loopback on this machine's 127.0.0.1 while a
// server listens there (on), or takes the ask back (a port published because local servers
// are on stays published). Only a session whose sandbox has a network of its own publishes.
func (s *Session) SetPublish(port int, on bool) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("port %d is not a port; give one from 1 to 65535", port)
	}
	if !s.publishes() {
		switch {
		case s.Enforcement == sandbox.Seatbelt:
			return errors.New("on a Mac a session's servers bind this Mac's loopback itself, with the session's local servers on; there is nothing to publish")
		default:
			return errors.New("this session's servers listen on this machine's loopback already (" + sharedLoopback(s.Enforcement) + "): there is nothing to publish")
		}
	}
	s.pubMu.Lock()
	asked := slices.Clone(s.pubAsked)
	s.pubMu.Unlock()
	i := slices.Index(asked, port)
	switch {
	case on && i < 0:
		asked = append(asked, port)
	case !on && i >= 0:
		asked = slices.Delete(asked, i, i+1)
	case !on:
		return fmt.Errorf("port %d was not asked for (openworker access %s lists what is published)", port, s.ID)
	}
	if asked == nil {
		asked = []int{}
	}
	s.setPublishing(nil, asked)
	return nil
}

// Published is what the session publishes on this machine's loopback now, and every port
// asked for, published or not.
func (s *Session) Published() []Published {
	s.pubMu.Lock()
	p := s.pub
	s.pubMu.Unlock()
	if p == nil {
		return nil
	}
	return p.list()
}

// publishNotes are the lines about ports published or taken back since the last result.
func (s *Session) publishNotes() []string {
	s.pubMu.Lock()
	p := s.pub
	s.pubMu.Unlock()
	if p == nil {
		return nil
	}
	return p.takeNotes()
}
