// Package randbytes fills a buffer with random bytes from the kernel. On Linux it asks
// getrandom directly, so that the small helper that runs inside the wall links none of the
// standard library's crypto packages (their start-up is a share of every sandboxed start);
// elsewhere it is crypto/rand.
package randbytes
