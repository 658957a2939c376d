package agentshell

import (
	"bytes"
	"path/filepath"
	"strings"
)

// What a host reads back from a file its shell script writes, outside, comes back instead as
// the last thing on the command's error output, between two record separators, where the
// shell takes it off again (trailer) and writes the file itself: the folder a command ended
// in (Claude Code's cwd file), the command's own background jobs (gemini-cli's bgpids file).
// A command can print such a marker itself; then what it names is what the command chose,
// which is all the real marker says too: a folder inside the wall, or process numbers of the
// session's.
const (
	cwdMarkerStart  = "\x1eopenworker-cwd:"
	pidsMarkerStart = "\x1eopenworker-bgpids:"
	markerEnd       = "\x1e"
)

// cwdMarkerCommand prints the folder's marker, in any of the shells' dialects.
const cwdMarkerCommand = `printf '\036openworker-cwd:%s\036' "$(pwd -P)" >&2`

// pidsMarkerCommand prints the background jobs' marker, in bash, inside single quotes (a
// trap's command).
const pidsMarkerCommand = `printf "\036openworker-bgpids:%s\036" "$(jobs -p)" >&2`

// trailer passes a stream on, holding back what may be the start of its marker until the
// stream ends, and then takes the marker off its very end.
type trailer struct {
	start string
	// valid says what the marker may carry.
	valid func(string) bool
	held  []byte
	// value is what the marker carried, once end found it.
	value string
	found bool
}

// newCwdTrailer takes off the folder's marker: an absolute path.
func newCwdTrailer() *trailer {
	return &trailer{start: cwdMarkerStart, valid: func(s string) bool {
		return filepath.IsAbs(s) && !strings.ContainsAny(s, "\x00\n\x1e")
	}}
}

// newPidsTrailer takes off the background jobs' marker: process numbers, one a line.
func newPidsTrailer() *trailer {
	return &trailer{start: pidsMarkerStart, valid: func(s string) bool {
		return strings.Trim(s, "0123456789\n") == ""
	}}
}

// write returns what can be passed on now.
func (t *trailer) write(p []byte) []byte {
	t.held = append(t.held, p...)
	i := bytes.LastIndexByte(t.held, t.start[0])
	if i < 0 {
		out := t.held
		t.held = nil
		return out
	}
	// The last separator may start the marker or end it: hold from the one before it that
	// starts a marker, if any, else from it.
	if j := bytes.LastIndex(t.held, []byte(t.start)); j >= 0 {
		i = j
	}
	out := bytes.Clone(t.held[:i])
	t.held = t.held[i:]
	return out
}

// end returns the rest of the stream with the marker taken off its end, and keeps what the
// marker carried.
func (t *trailer) end() []byte {
	h := t.held
	t.held = nil
	if bytes.HasPrefix(h, []byte(t.start)) && bytes.HasSuffix(h, []byte(markerEnd)) && len(h) > len(t.start) {
		v := string(h[len(t.start) : len(h)-len(markerEnd)])
		if t.valid(v) {
			t.value, t.found = v, true
			return nil
		}
	}
	return h
}
