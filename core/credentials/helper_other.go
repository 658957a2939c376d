//go:build !linux

package credentials

// helper returns the ProxyCommand's program as the sandbox sees it: Seatbelt starts the
// runner from the openworker binary in place, so the binary is readable and runs inside.
func (c *copier) helper(dir string) (string, error) {
	return c.o.Helper, nil
}
