// Package egresstest holds the end-to-end tests of a Linux session's network: programs that
// ignore the proxy variables (curl --noproxy, Python's sockets, Node's fetch) behind a real
// wall, their connections carried by the relay and their names answered by the DNS stub, in
// every network mode. It has no code of its own; the internet is stood in for by names that
// resolve to documentation addresses which the tests' dialer leads to servers on loopback.
package egresstest
