package hosts

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// HowToAllow ends every refusal: where a person allows a site.
const HowToAllow = "allow it for this session or in Settings ▸ Sandbox ▸ Choose sites…"

// Decision is the verdict on one host and port. It is a value so that callers can log it,
// show it and test it without a network.
type Decision struct {
	// Allowed is true when an entry admits the host and no denial covers it.
	Allowed bool
	// Host is the canonical host that was decided ("" when the host was not valid), and
	// Port its port.
	Host string
	Port int
	// Entry is the entry that admitted the host, or the denial that refused it.
	Entry Entry
	// Literal is true when Entry names the destination's own address (an IP literal or
	// localhost). Only then may the destination be a loopback or private address.
	Literal bool
	// Why is the kind of verdict; Reason puts it in words.
	Why Why
	// err says what is wrong with a host that is not valid.
	err error
}

// Why is the kind of a Decision.
type Why uint8

const (
	// OnList: an entry admits the host.
	OnList Why = iota
	// NotOnList: no entry admits the host.
	NotOnList
	// Denied: a person denied the host for this session.
	Denied
	// NotValid: the host or port is not one an entry could name.
	NotValid
)

// Reason says why, in words a person reads. It is built on demand so that a refusal, which
// the proxy may decide many times a second for a misbehaving program, costs no allocation.
func (d Decision) Reason() string { return d.Explain(nil) }

// Explain is Reason with how, which says how to allow the site where the command ran (the
// `run` flag, the settings file, the app), in place of HowToAllow; nil means HowToAllow.
func (d Decision) Explain(how func(target string) string) string {
	hint := HowToAllow
	if how != nil && d.Why != OnList && d.Why != NotValid {
		hint = how(d.Target())
	}
	switch d.Why {
	case OnList:
		return d.Target() + " is on this session's allow list as " + d.Entry.String()
	case Denied:
		return d.Target() + " was denied for this session; " + hint
	case NotValid:
		return d.err.Error() + "; write a host and port such as github.com:443"
	}
	return d.Target() + " is not on this session's allow list; " + hint
}

// Target is "host:port" as a person writes it, with brackets around an IPv6 address.
func (d Decision) Target() string {
	return net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
}

// Decide says whether host at port may be reached under the allow list and the session's
// denials (hosts a person denied on a card, which win over the list). host is what a client
// sent: any case, a trailing dot, an internationalised name or an address are all accepted
// and compared in canonical form. Decide is pure and allocates only on refusal.
func Decide(list, denied *List, host string, port int) Decision {
	name, err := canonicalHost(host)
	if err == nil && (port < 1 || port > 65535) {
		err = hostError("has port " + strconv.Itoa(port) + "; a port is 1 to 65535")
	}
	if err != nil {
		return Decision{Port: port, Why: NotValid, err: fmt.Errorf("%q %v", host, err)}
	}
	d := Decision{Host: name, Port: port, Why: NotOnList}
	if denied.Len() > 0 {
		if e, ok := denied.Match(name, port); ok {
			d.Entry = e
			d.Why = Denied
			return d
		}
	}
	e, ok := list.Match(name, port)
	if !ok {
		return d
	}
	d.Allowed = true
	d.Why = OnList
	d.Entry = e
	d.Literal = !e.Wildcard && (e.IP.IsValid() || e.Host == "localhost")
	return d
}

// canonicalHost is CanonicalName for a request's host, which may also be an address.
func canonicalHost(host string) (string, error) {
	// Clients send ASCII names; lower-casing them and dropping one trailing dot is all the
	// IDNA mapping would do to them, so only other names pay for it.
	if n := len(host); n > 1 && host[n-1] == '.' && host[n-2] != '.' {
		host = host[:n-1]
	}
	if hasUpperASCII(host) {
		host = strings.ToLower(host)
	}
	if plainName(host) {
		if isAddr(host) {
			return canonicalAddr(host)
		}
		return plainLast(host)
	}
	if len(host) > 0 && (host[0] >= '0' && host[0] <= '9' || host[0] == '[' || strings.IndexByte(host, ':') >= 0) {
		return canonicalAddr(host)
	}
	return CanonicalName(host)
}

// plainLast is checkName for a name plainName accepted: only the rule on the last label is
// left to check.
func plainLast(host string) (string, error) {
	if last := host[strings.LastIndexByte(host, '.')+1:]; last[0] < 'a' || last[0] > 'z' {
		return checkName(host) // for its error
	}
	return host, nil
}

// hasUpperASCII reports whether s is all ASCII with some upper case: a string that
// strings.ToLower maps exactly as IDNA would. Other case mappings are left to IDNA.
func hasUpperASCII(s string) bool {
	upper := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return false
		}
		upper = upper || c >= 'A' && c <= 'Z'
	}
	return upper
}

func canonicalAddr(host string) (string, error) {
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		// Not an address after all: a name that begins with a digit.
		return CanonicalName(host)
	}
	if ip.Zone() != "" {
		return "", errZone
	}
	return ip.Unmap().String(), nil
}

type hostError string

func (e hostError) Error() string { return string(e) }

const errZone = hostError("has an IPv6 zone, which cannot be allowed")
