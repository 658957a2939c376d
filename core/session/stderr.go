package session

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bounds on what one runner's error output puts in the daemon's: a line, and all of it.
const (
	maxErrLine  = 1 << 10
	maxErrTotal = 32 << 10
)

// errStream is one runner's error output: a pipe of its own, copied into the daemon's error
// output a line at a time, each marked with the session, with control characters escaped
// and the whole bounded. The runner is inside the wall, and what it writes there (or what
// reaches it) is the sandbox's: given the daemon's own stderr, shared by every session, it
// could write lines that pass for the daemon's or another session's, or fill the log.
type errStream struct {
	w    *os.File // the runner's end, handed to the provider
	done chan struct{}
}

// newErrStream starts copying a new pipe into out; nil when out is nil.
func newErrStream(id string, out *os.File) (*errStream, error) {
	if out == nil {
		return nil, nil
	}
	// Both ends close-on-exec from the start, as the runner connection's: the provider
	// hands the write end to the runner explicitly, and no other child may inherit either.
	syscall.ForkLock.RLock()
	r, w, err := os.Pipe()
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("creating the runner's error output: %w", err)
	}
	e := &errStream{w: w, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		defer r.Close()
		copyErrLines(out, r, "openworker session "+id+" runner: ")
	}()
	return e, nil
}

// copyErrLines copies in to out as above, until in ends.
func copyErrLines(out io.Writer, in io.Reader, prefix string) {
	br := bufio.NewReaderSize(in, maxErrLine)
	total := 0
	for {
		line, err := br.ReadSlice('\n')
		dropped := 0
		for err == bufio.ErrBufferFull {
			// The rest of an overlong line is counted, not kept.
			var more []byte
			more, err = br.ReadSlice('\n')
			dropped += len(more)
		}
		if (len(line) > 0 || dropped > 0) && total < maxErrTotal {
			msg := printable(bytes.TrimRight(line, "\r\n"))
			if dropped > 0 {
				msg += fmt.Sprintf(" …(%d more bytes of this line left out)", dropped)
			}
			fmt.Fprintf(out, "%s%s\n", prefix, msg)
			if total += len(msg); total >= maxErrTotal {
				fmt.Fprintf(out, "%sits further error output is left out (more than %d KiB)\n", prefix, maxErrTotal>>10)
			}
		}
		if err != nil {
			return
		}
	}
}

// printable is b with every byte that is not a printable character (escape sequences, a
// carriage return, invalid UTF-8) written as a Go escape.
func printable(b []byte) string {
	var s []byte
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && n <= 1:
			s = fmt.Appendf(s, `\x%02x`, b[0])
		case !unicode.IsPrint(r):
			q := strconv.QuoteRune(r)
			s = append(s, q[1:len(q)-1]...)
		default:
			s = append(s, b[:n]...)
		}
		b = b[n:]
	}
	return string(s)
}

// wait waits a little for the copy to end once the runner is gone: a process that still
// holds the runner's end (none should) does not hold up the session's end.
func (e *errStream) wait() {
	if e == nil {
		return
	}
	select {
	case <-e.done:
	case <-time.After(2 * time.Second):
	}
}

// handed closes the daemon's copy of the runner's end, once the provider has given it on.
func (e *errStream) handed() {
	if e != nil {
		e.w.Close()
	}
}

// file is the runner's end, or nil.
func (e *errStream) file() *os.File {
	if e == nil {
		return nil
	}
	return e.w
}
