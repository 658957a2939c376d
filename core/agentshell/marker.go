package agentshell

import (
	"bytes"
	"path/filepath"
)

// The folder a command ended in comes back as the last thing on its error output, between
// two record separators, where the shell takes it off again (cwdTrailer). A command can print
// such a marker itself; then the folder it names is one the command chose, which is all the
// real marker says too: where the next command starts, inside the wall.
const (
	markerStart = "\x1eopenworker-cwd:"
	markerEnd   = "\x1e"
)

// cwdMarkerCommand prints the marker, in any of the shells' dialects.
const cwdMarkerCommand = `printf '\036openworker-cwd:%s\036' "$(pwd -P)" >&2`

// cwdTrailer passes a stream on, holding back what may be the start of the marker until the
// stream ends, and then takes the marker off its very end.
type cwdTrailer struct {
	held []byte
	dir  string
}

// write returns what can be passed on now.
func (t *cwdTrailer) write(p []byte) []byte {
	t.held = append(t.held, p...)
	i := bytes.LastIndexByte(t.held, markerStart[0])
	if i < 0 {
		out := t.held
		t.held = nil
		return out
	}
	// The last separator may start the marker or end it: hold from the one before it that
	// starts a marker, if any, else from it.
	if j := bytes.LastIndex(t.held, []byte(markerStart)); j >= 0 {
		i = j
	}
	out := bytes.Clone(t.held[:i])
	t.held = t.held[i:]
	return out
}

// end returns the rest of the stream with the marker taken off its end, and keeps the
// folder the marker named.
func (t *cwdTrailer) end() []byte {
	h := t.held
	t.held = nil
	if bytes.HasPrefix(h, []byte(markerStart)) && bytes.HasSuffix(h, []byte(markerEnd)) && len(h) > len(markerStart) {
		dir := string(h[len(markerStart) : len(h)-len(markerEnd)])
		if filepath.IsAbs(dir) && !bytes.ContainsAny([]byte(dir), "\x00\n\x1e") {
			t.dir = dir
			return nil
		}
	}
	return h
}
