package tstest

import (
	"crypto/rand"
	"math/big"
	"testing"
)

// Token is a made-up secret of prefix and n random letters and digits ("gho_" and 36 is a
// GitHub token's shape), made when the test runs: a secret written in a test's source would
// be in its binary, which runs inside a sandbox as the runner, and so in memory a scan there
// reads.
func Token(t testing.TB, prefix string, n int) string {
	t.Helper()
	const alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := []byte(prefix)
	for range n {
		i, err := rand.Int(rand.Reader, big.NewInt(int64(len(alnum))))
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, alnum[i.Int64()])
	}
	return string(b)
}
