//go:build !linux

package proxy

import "net"

// buffers is empty where tunnels copy with io.Copy alone.
type buffers struct{}

// relayIdleFree reports false: only on Linux do tunnels wait for data without a buffer, and
// elsewhere relay uses io.Copy.
func (t *tunnel) relayIdleFree(dst, src net.Conn) (bool, error) { return false, nil }
