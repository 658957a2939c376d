//go:build !linux

package randbytes

import "crypto/rand"

// Read fills b with random bytes, or says why it could not.
func Read(b []byte) error {
	_, err := rand.Read(b)
	return err
}
