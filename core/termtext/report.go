package termtext

import (
	"bytes"
	"io"
)

// Reset ends whatever a command's output left open on a terminal, so that what follows is
// shown as written: CAN abandons an escape sequence being read, ST ends an OSC, DCS, APC,
// PM or SOS string (in which a terminal would swallow the text), SGR 0 ends conceal, colours
// and the like, ESC ( B and SI return to the ASCII character set, and the cursor is shown.
const Reset = "\x18\x1b\\\x1b[0m\x1b(B\x0f\x1b[?25h"

// Mark starts each of OpenWorker's own lines that follow a command's output on a terminal.
// Its character, the broken bar, never reaches the terminal from the command's output
// (MarkFilter writes it as '|'), so a line that starts with it is OpenWorker's.
const Mark = "¦ "

// markUTF8 is the broken bar, U+00A6, as a terminal reads it.
var markUTF8 = []byte("¦")

// MarkFilter passes a command's output through to a terminal unchanged but for Mark's
// character, which it writes as '|'. A character split between two writes is held until the
// next one (or Flush), so that splitting it does not get it through.
type MarkFilter struct {
	w    io.Writer
	held []byte
}

// NewMarkFilter filters what is written to w.
func NewMarkFilter(w io.Writer) *MarkFilter { return &MarkFilter{w: w} }

func (f *MarkFilter) Write(p []byte) (int, error) {
	b := append(f.held, p...)
	f.held = nil
	if n := len(b); n > 0 && bytes.HasPrefix(markUTF8, b[n-1:]) {
		f.held = []byte{b[n-1]}
		b = b[:n-1]
	}
	b = bytes.ReplaceAll(b, markUTF8, []byte("|"))
	if _, err := f.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a byte held back.
func (f *MarkFilter) Flush() error {
	if len(f.held) == 0 {
		return nil
	}
	_, err := f.w.Write(f.held)
	f.held = nil
	return err
}

// Report writes OpenWorker's own lines after a command's output on a terminal: the first
// write is preceded by Reset and, when the output did not end a line, a newline; every line
// starts with Mark.
type Report struct {
	w         io.Writer
	midLine   bool // the command's output ended inside a line
	begun     bool
	lineStart bool
}

// NewReport is a report to w, a terminal, after output whose last line was not ended when
// midLine is true.
func NewReport(w io.Writer, midLine bool) *Report { return &Report{w: w, midLine: midLine} }

func (r *Report) Write(p []byte) (int, error) {
	n := len(p)
	var b []byte
	if !r.begun {
		r.begun, r.lineStart = true, true
		b = append(b, Reset...)
		if r.midLine {
			b = append(b, '\n')
		}
	}
	for len(p) > 0 {
		if r.lineStart {
			b = append(b, Mark...)
			r.lineStart = false
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b = append(b, p...)
			break
		}
		b = append(b, p[:i+1]...)
		p = p[i+1:]
		r.lineStart = true
	}
	if _, err := r.w.Write(b); err != nil {
		return 0, err
	}
	return n, nil
}
