package proxy

import (
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Refusal is one request the proxy refused because of where it was going.
type Refusal struct {
	Host string
	Port int
	// Allow is the host:port an entry must name to open the site, where that is not Host
	// and Port: the address an allowed name led to ("127.0.0.1:5432"). "" otherwise.
	Allow string
	Time  time.Time
	// Reason is the line the client was sent; Header is its X-Proxy-Error value.
	Reason string
	Header string
	// Denied says the session's denials refused it (the person's Deny), not the list.
	Denied bool
}

// Target is "host:port".
func (r Refusal) Target() string { return net.JoinHostPort(r.Host, strconv.Itoa(r.Port)) }

// Counts summarise every refusal of the session, including those no longer kept.
type Counts struct {
	// Total is every refusal; Kept how many Blocked can still return.
	Total, Kept int
	// ByTarget counts refusals per "host:port", for up to maxCountedTargets targets; the
	// rest are counted under "".
	ByTarget map[string]int
}

// maxCountedTargets bounds ByTarget, so that a program trying endless names cannot grow it.
const maxCountedTargets = 10 * RecordSize

// record keeps the most recent RecordSize refusals in a ring, oldest overwritten first.
type record struct {
	mu       sync.Mutex
	ring     []Refusal
	next     int
	total    int
	byTarget map[string]int
}

func (r *record) add(ref Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ring) < RecordSize {
		r.ring = append(r.ring, ref)
	} else {
		r.ring[r.next] = ref
		r.next = (r.next + 1) % RecordSize
	}
	r.total++
	if r.byTarget == nil {
		r.byTarget = make(map[string]int)
	}
	key := ref.Target()
	if _, ok := r.byTarget[key]; !ok && len(r.byTarget) >= maxCountedTargets {
		key = ""
	}
	r.byTarget[key]++
}

// Settle waits, at most max, for the handshakes of the sandbox's programs with the proxy to
// be decided: a program that refused OpenWorker's certificate exits at once, before the
// proxy has read why, and a command's end is reported only after its refusals are noted.
func (p *Proxy) Settle(max time.Duration) {
	deadline := time.Now().Add(max)
	for p.handshaking.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// Blocked returns the kept refusals from from to to, both included, oldest first: what was
// blocked while a command ran.
func (p *Proxy) Blocked(from, to time.Time) []Refusal {
	r := &p.record
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Refusal
	for i := range r.ring {
		ref := r.ring[(r.next+i)%len(r.ring)]
		if !ref.Time.Before(from) && !ref.Time.After(to) {
			out = append(out, ref)
		}
	}
	// Clocks may step; present what was found in time order all the same.
	slices.SortStableFunc(out, func(a, b Refusal) int { return a.Time.Compare(b.Time) })
	return out
}

// BlockedCounts summarises every refusal of the session.
func (p *Proxy) BlockedCounts() Counts {
	r := &p.record
	r.mu.Lock()
	defer r.mu.Unlock()
	c := Counts{Total: r.total, Kept: len(r.ring), ByTarget: make(map[string]int, len(r.byTarget))}
	for k, v := range r.byTarget {
		c.ByTarget[k] = v
	}
	return c
}
