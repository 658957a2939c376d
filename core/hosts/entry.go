// Package hosts is the network allow list's vocabulary: parsing the site entries a user writes
// in settings or on a card (`github.com:443`, `*.example.com`, `[::1]:8080`), indexing them
// into a List, deciding whether a host and port are on it, and the "Choose sites…" catalog of
// named groups of entries. It is pure: it opens no sockets and resolves no names, so the
// proxy, the settings and the app share one definition of what an entry means. It classifies
// an address (ClassifyAddr) but is not the proxy: looking a name up and refusing the address it
// leads to is the job of the proxy and the web fetch.
package hosts

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// DefaultPort is the port of an entry that names none.
const DefaultPort = 443

// Entry is one parsed site entry.
type Entry struct {
	// Host is lower-case, without a trailing dot, internationalised names in punycode.
	// For a wildcard it is the suffix after "*." ("github.com" for "*.github.com").
	// For an IP literal it is the address's canonical text, without brackets.
	Host string
	// Wildcard entries match strict subdomains of Host, never Host itself.
	Wildcard bool
	// Port is 1..65535.
	Port int
	// IP is set when Host is a literal address.
	IP netip.Addr
}

// String is the entry's canonical form: "github.com:443", "*.github.com:443", "[::1]:8080".
func (e Entry) String() string {
	h := e.Host
	if e.Wildcard {
		h = "*." + h
	}
	if e.IP.Is6() {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(e.Port)
}

// Parse parses one entry. Accepted forms: `host:port`, `host` (port 443), `*.example.com:443`
// (subdomains only), IPv4 literals and bracketed IPv6 literals, each with or without a port.
// The error says what is wrong and how the entry should look.
func Parse(s string) (Entry, error) {
	bad := func(why string) (Entry, error) {
		return Entry{}, fmt.Errorf("site %q: %s", s, why)
	}
	if s == "" {
		return bad("is empty; write a host such as github.com or github.com:443")
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return bad("contains a space; write one host per entry, such as github.com:443")
	}
	if strings.Contains(s, "://") {
		return bad("has a scheme; write only the host and port, such as github.com:443")
	}
	if strings.ContainsAny(s, "/?#@\\") {
		return bad("has a path or user part; write only the host and port, such as github.com:443")
	}
	host, portText := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return bad("has an unclosed '['; write an IPv6 address as [::1]:8080")
		}
		host, portText = s[1:end], s[end+1:]
		if portText != "" {
			if portText[0] != ':' {
				return bad("has text after ']'; write an IPv6 address as [::1]:8080")
			}
			portText = portText[1:]
			if portText == "" {
				return bad("has an empty port")
			}
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return bad("is not an IPv6 address inside [ ]")
		}
	} else if i := strings.LastIndexByte(s, ':'); i >= 0 {
		if strings.Count(s, ":") > 1 {
			return bad("looks like an IPv6 address without brackets; write it as [::1]:8080")
		}
		host, portText = s[:i], s[i+1:]
		if portText == "" {
			return bad("has an empty port")
		}
	}
	port := DefaultPort
	if portText != "" {
		n, err := strconv.Atoi(portText)
		if err != nil || strings.HasPrefix(portText, "+") || strings.HasPrefix(portText, "-") {
			return bad("has a port that is not a number")
		}
		if n < 1 || n > 65535 {
			return bad("has port " + portText + "; a port is 1 to 65535")
		}
		port = n
	}
	if host == "" {
		return bad("has no host")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return bad("has an IPv6 zone, which cannot be allowed")
		}
		// An IPv4-mapped IPv6 address is the IPv4 address on the wire; one spelling keeps
		// "[::ffff:127.0.0.1]" and "127.0.0.1" the same entry.
		ip = ip.Unmap()
		return Entry{Host: ip.String(), Port: port, IP: ip}, nil
	}
	e := Entry{Port: port}
	if strings.HasPrefix(host, "*.") {
		e.Wildcard = true
		host = host[2:]
	}
	if strings.Contains(host, "*") {
		if host == "*" || host == "" {
			return bad("allows every site; name the sites instead, such as *.example.com")
		}
		return bad("has a '*' that is not a leading '*.'; write a wildcard as *.example.com")
	}
	name, err := CanonicalName(host)
	if err != nil {
		return bad(err.Error())
	}
	if e.Wildcard && strings.Count(name, ".") < 1 {
		return bad("is a wildcard over a whole top-level domain; a wildcard must leave at least two labels, such as *.example.com")
	}
	e.Host = name
	return e, nil
}

var lookup = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.Transitional(false))

// CanonicalName returns name as the allow list compares it: lower-case, trailing dot removed,
// internationalised labels in punycode. It fails on names that are not valid host names.
func CanonicalName(name string) (string, error) {
	name = strings.TrimSuffix(name, ".")
	if name == "" {
		return "", fmt.Errorf("has no host")
	}
	ascii, err := lookup.ToASCII(name)
	if err != nil {
		return "", fmt.Errorf("is not a valid host name: %v", err)
	}
	ascii = strings.ToLower(ascii)
	return checkName(ascii)
}

// checkName validates a lower-case ASCII name without allocating, so deciding a request's
// host stays cheap.
func checkName(ascii string) (string, error) {
	if len(ascii) > 253 {
		return "", fmt.Errorf("is longer than a host name may be")
	}
	// A last label that starts with a digit is no top-level domain, but resolvers read names
	// such as "2130706433", "127.1" or "0x7f.1" as addresses; refusing them keeps every
	// address spelled as an address, where the allow list and the proxy can see it.
	last := ascii[strings.LastIndexByte(ascii, '.')+1:]
	if last != "" && !(last[0] >= 'a' && last[0] <= 'z') {
		return "", fmt.Errorf("looks like a numeric address, not a host name; write an address as 127.0.0.1 or [::1]")
	}
	for rest := ascii; ; {
		label := rest
		i := strings.IndexByte(rest, '.')
		if i >= 0 {
			label, rest = rest[:i], rest[i+1:]
		}
		if label == "" {
			return "", fmt.Errorf("has an empty label (two dots in a row)")
		}
		if len(label) > 63 {
			return "", fmt.Errorf("has a label longer than 63 characters")
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("has the character %q, which a host name cannot have", c)
			}
		}
		if i < 0 {
			return ascii, nil
		}
	}
}

// plainName reports whether s is already in the form CanonicalName returns and needs no
// IDNA mapping: lower-case letters, digits and inner hyphens, no trailing dot, and no label
// with "--" in third and fourth place (IDNA reserves those). Names a client sends are almost
// always plain, and skipping the mapping keeps a decision within its time budget.
func plainName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			c := s[i]
			if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
				continue
			}
			if c != '.' {
				return false
			}
		}
		label := s[start:i]
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' ||
			len(label) >= 4 && label[2] == '-' && label[3] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}
