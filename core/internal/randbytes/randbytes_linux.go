package randbytes

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Read fills b with random bytes, or says why it could not.
func Read(b []byte) error {
	for len(b) > 0 {
		n, err := unix.Getrandom(b, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
