package runner

import (
	"bufio"
	"io"
	"os"
)

// EnvArg is the hidden argument that makes a binary (the helper, or the openworker binary)
// print its environment and exit: a person's login shell runs it, so that the capture of the
// login environment rests on no program of the system's (macOS's env learned -0 late).
const EnvArg = "__print-env"

// PrintEnv writes this process's environment to w, each NAME=VALUE ended by a NUL: a value
// may hold newlines, never a NUL.
func PrintEnv(w io.Writer) error {
	b := bufio.NewWriter(w)
	for _, kv := range os.Environ() {
		b.WriteString(kv)
		b.WriteByte(0)
	}
	return b.Flush()
}
