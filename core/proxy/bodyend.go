package proxy

import (
	"errors"
	"fmt"
	"strings"
)

// bodyEnd follows an answer's body as it passes, to say where it ends.
type bodyEnd interface {
	// take is how much of b, which follows what it was given before, belongs to the body:
	// all of it, or, once the body ends within b, less.
	take(b []byte) (int, error)
	ended() bool
}

// lengthEnd ends a body after the length its head gives.
type lengthEnd struct{ left int64 }

func (l *lengthEnd) take(b []byte) (int, error) {
	k := int(min(int64(len(b)), l.left))
	l.left -= int64(k)
	return k, nil
}

func (l *lengthEnd) ended() bool { return l.left == 0 }

// chunkedEnd follows a chunked body's framing (RFC 9112 §7.1) to where its trailer section
// ends. The body passes as the host framed it, so the proxy must end it exactly where the
// program reading the same bytes will: only plain framing is taken — hexadecimal sizes,
// extensions after ';', CRLF line ends, trailer fields — and anything else ends the
// connection, rather than be read one way here and another there.
type chunkedEnd struct {
	state  chunkState
	size   uint64 // the size being read, then the data left of the chunk
	digits int
	line   int // bytes of the line being read
	tail   int // bytes of the trailer section so far
}

type chunkState int

const (
	chunkSize      chunkState = iota // the size's hexadecimal digits
	chunkExt                         // an extension, after ';', to the line's end
	chunkSizeLF                      // the size line's CR was read
	chunkData                        // the chunk's data
	chunkDataCR                      // the CRLF after the data
	chunkDataLF                      //
	trailerStart                     // a trailer field, or the empty line that ends the body
	trailerName                      // a trailer field's name, to its colon
	trailerValue                     // a trailer field's value, to its line's end
	trailerFieldLF                   // a trailer field's CR was read
	trailerEndLF                     // the empty line's CR was read
	chunkedDone
)

const maxChunkLine = 4096 // a size line with its extensions, or a trailer field, at most

var errChunked = errors.New("the host's chunked body is framed in a way the proxy does not pass")

func (c *chunkedEnd) ended() bool { return c.state == chunkedDone }

func (c *chunkedEnd) take(b []byte) (int, error) {
	i := 0
	for i < len(b) && c.state != chunkedDone {
		if c.state == chunkData {
			k := int(min(uint64(len(b)-i), c.size))
			i += k
			if c.size -= uint64(k); c.size == 0 {
				c.state = chunkDataCR
			}
			continue
		}
		ch := b[i]
		i++
		if c.line++; c.line > maxChunkLine {
			return i, fmt.Errorf("%w: a line longer than %d bytes", errChunked, maxChunkLine)
		}
		if c.state >= trailerStart {
			if c.tail++; c.tail > MaxResponseHeadBytes {
				return i, fmt.Errorf("%w: trailer fields over %d KiB", errChunked, MaxResponseHeadBytes>>10)
			}
		}
		next, ok := c.step(ch)
		if !ok {
			return i, fmt.Errorf("%w: byte %q where %s was due", errChunked, ch, c.state.due())
		}
		c.state = next
	}
	return i, nil
}

// step is the state after ch, or false where ch has no place.
func (c *chunkedEnd) step(ch byte) (chunkState, bool) {
	switch c.state {
	case chunkSize:
		v, hex := hexValue(ch)
		switch {
		case hex && c.digits < 15: // sizes under 2^60
			c.size = c.size<<4 | uint64(v)
			c.digits++
			return chunkSize, true
		case ch == ';' && c.digits > 0:
			return chunkExt, true
		case ch == '\r' && c.digits > 0:
			return chunkSizeLF, true
		}
	case chunkExt:
		switch {
		case ch == '\r':
			return chunkSizeLF, true
		case ch >= 0x20 && ch != 0x7f || ch == '\t':
			return chunkExt, true
		}
	case chunkSizeLF:
		if ch == '\n' {
			c.line = 0
			if c.size == 0 {
				return trailerStart, true
			}
			return chunkData, true
		}
	case chunkDataCR:
		if ch == '\r' {
			return chunkDataLF, true
		}
	case chunkDataLF:
		if ch == '\n' {
			c.size, c.digits, c.line = 0, 0, 0
			return chunkSize, true
		}
	case trailerStart:
		switch {
		case ch == '\r':
			return trailerEndLF, true
		case isTokenByte(ch): // a field's name begins (a folded line begins with a space)
			return trailerName, true
		}
	case trailerName:
		switch {
		case ch == ':':
			return trailerValue, true
		case isTokenByte(ch):
			return trailerName, true
		}
	case trailerValue:
		switch {
		case ch == '\r':
			return trailerFieldLF, true
		case ch >= 0x20 && ch != 0x7f || ch == '\t':
			return trailerValue, true
		}
	case trailerFieldLF:
		if ch == '\n' {
			c.line = 0
			return trailerStart, true
		}
	case trailerEndLF:
		if ch == '\n' {
			return chunkedDone, true
		}
	}
	return 0, false
}

// due names what a state waits for, for an error.
func (s chunkState) due() string {
	switch s {
	case chunkSize:
		return "a chunk size"
	case chunkExt:
		return "a chunk extension"
	case chunkSizeLF, chunkDataLF, trailerFieldLF, trailerEndLF:
		return "LF"
	case chunkDataCR:
		return "CR after a chunk's data"
	}
	return "a trailer field"
}

// isTokenByte says whether ch may be in a field's name (RFC 9110 §5.6.2).
func isTokenByte(ch byte) bool {
	return 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", ch) >= 0
}

func hexValue(ch byte) (byte, bool) {
	switch {
	case '0' <= ch && ch <= '9':
		return ch - '0', true
	case 'a' <= ch && ch <= 'f':
		return ch - 'a' + 10, true
	case 'A' <= ch && ch <= 'F':
		return ch - 'A' + 10, true
	}
	return 0, false
}
