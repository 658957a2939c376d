// Package wire is the encoding of the messages between two processes of the same binary:
// the Linux wall's setup and reports, and the tool runner's calls and answers. A message
// is its fields in a fixed order, numbers as varints, strings and lists after their
// length; a stream of them is frames, each after its length. Neither end outlives a build,
// so there is no schema: each message starts with a version its two ends must share.
//
// It replaces encoding/json there because a fresh process spent up to half a millisecond
// learning each message type before it could read the first one, and a sandbox starts two
// fresh processes. The decoder is written for a sender that may lie (the runner runs
// behind the wall): every length is checked against what is left before anything is
// allocated for it, and the first error sticks.
package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Encoder appends fields to a message.
type Encoder struct{ b []byte }

// NewEncoder starts a message with its version.
func NewEncoder(version byte) *Encoder { return &Encoder{b: []byte{version}} }

// Message is the message so far.
func (e *Encoder) Message() []byte { return e.b }

// Byte, Uint, Int, String and Bytes append one field; Strings a list of strings.
func (e *Encoder) Byte(c byte)   { e.b = append(e.b, c) }
func (e *Encoder) Uint(n uint64) { e.b = binary.AppendUvarint(e.b, n) }
func (e *Encoder) Int(n int64)   { e.b = binary.AppendVarint(e.b, n) }

// Flags packs up to eight booleans into a byte, the first in the lowest bit.
func (e *Encoder) Flags(bits ...bool) {
	var f byte
	for i, b := range bits {
		if b {
			f |= 1 << i
		}
	}
	e.Byte(f)
}

func (e *Encoder) String(s string) { e.Uint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *Encoder) Bytes(p []byte)  { e.Uint(uint64(len(p))); e.b = append(e.b, p...) }

func (e *Encoder) Strings(ss []string) {
	e.Uint(uint64(len(ss)))
	for _, s := range ss {
		e.String(s)
	}
}

// Decoder reads the fields an Encoder wrote, in the same order. After the first error
// every read returns a zero value, and End reports the error.
type Decoder struct {
	b   []byte
	err error
}

// ErrShort says a message ends before its last field.
var ErrShort = errors.New("the message ends early")

// NewDecoder starts reading a message, whose version must be version.
func NewDecoder(b []byte, version byte) *Decoder {
	d := &Decoder{b: b}
	if v := d.Byte(); d.err == nil && v != version {
		d.err = fmt.Errorf("encoding version %d, not %d: the two ends come from different builds", v, version)
	}
	return d
}

func (d *Decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// Byte, Uint, Int, String, Bytes and Strings read one field each.
func (d *Decoder) Byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail(ErrShort)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// Flag reports bit i of a flags byte.
func Flag(f byte, i int) bool { return f&(1<<i) != 0 }

func (d *Decoder) Uint() uint64 { return number(d, binary.Uvarint) }
func (d *Decoder) Int() int64   { return number(d, binary.Varint) }

func number[T uint64 | int64](d *Decoder, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	n, k := read(d.b)
	if k <= 0 {
		d.fail(errors.New("a number is malformed"))
		return 0
	}
	d.b = d.b[k:]
	return n
}

// Count reads a list's length, each of its items taking at least least bytes.
func (d *Decoder) Count(least int) int {
	n := d.Uint()
	if d.err == nil && n > uint64(len(d.b)/least) {
		d.fail(ErrShort)
	}
	if d.err != nil {
		return 0
	}
	return int(n)
}

func (d *Decoder) raw() []byte {
	n := d.Count(1)
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *Decoder) String() string { return string(d.raw()) }

// Bytes reads a byte string; an empty one reads as nil.
func (d *Decoder) Bytes() []byte {
	p := d.raw()
	if len(p) == 0 {
		return nil
	}
	return append([]byte(nil), p...)
}

// Strings reads a list of strings; an empty list reads as nil.
func (d *Decoder) Strings() []string {
	n := d.Count(1)
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.String()
	}
	return ss
}

// End reports the first error, or bytes left after the last field.
func (d *Decoder) End() error {
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes follow the message's end", len(d.b))
	}
	return d.err
}

// WriteFrame writes msg after its length, in one write.
func WriteFrame(w io.Writer, msg []byte) error {
	frame := binary.AppendUvarint(make([]byte, 0, len(msg)+binary.MaxVarintLen64), uint64(len(msg)))
	_, err := w.Write(append(frame, msg...))
	return err
}

// ReadFrame reads one frame; one longer than max is refused before it is read. A stream
// that ends between frames gives io.EOF; inside one, io.ErrUnexpectedEOF.
func ReadFrame(r *bufio.Reader, max int) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > uint64(max) {
		return nil, fmt.Errorf("a message of %d bytes, more than %d", n, max)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return msg, nil
}
