package runner

import (
	"bufio"
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/internal/wire"
)

// Every field of every call and answer survives the trip.
func TestWireRoundTrip(t *testing.T) {
	reqs := []*Request{
		{ID: 1, Tool: ToolExec, Exec: &ExecArgs{Command: "echo ü", Argv: []string{"a", "", "b c"}, Dir: "/w",
			Timeout: 3 * time.Second, MaxOutput: -1, Stream: true, Stdin: []byte{0, 1, 0xff}, StdinStream: true}},
		{ID: 6, Tool: ToolSignal, Sig: &SignalArgs{Call: 1, Signal: 2}},
		{ID: 7, Tool: ToolStdin, In: &StdinArgs{Call: 1, Data: []byte("in\n"), EOF: true}},
		{ID: 2, Tool: ToolRead, Read: &ReadArgs{Path: "/f", Offset: -5, Limit: 1 << 40}},
		{ID: 3, Tool: ToolWrite, Write: &WriteArgs{Path: "/g", Content: bytes.Repeat([]byte("x"), 70000)}},
		{ID: 4, Tool: ToolList, List: &ListArgs{Path: "/"}},
		{ID: 5, Tool: ToolProbe, Probe: &ProbeArgs{Writable: []string{"/a", "/b"}, ReadOnly: []string{"/c"}, Home: "/h",
			Unreachable: []string{"127.0.0.1:1"}, Reachable: []string{"127.0.0.1:2"}, Unwritable: []string{"/proc/sysrq-trigger"}}},
		{ID: 1<<64 - 1, Tool: "unknown"},
	}
	for _, r := range reqs {
		got, err := decodeRequest(r.encode())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("request read back\n%+v\nwant\n%+v", got, r)
		}
	}
	resps := []*Response{
		{ID: 7, Stream: "stdout", Data: []byte("chunk\n")},
		{ID: 8, Error: "no such file"},
		{ID: 11, Stream: "ack", Ack: 65536},
		{ID: 9, Result: &Result{ExitCode: -1, Duration: time.Millisecond, Stdout: []byte("o"), Stderr: []byte("e"),
			StdoutTruncated: 5, StderrTruncated: 6, TimedOut: true, Dir: "/d", Idle: true, Content: []byte("c"), Size: 9,
			Entries: []Entry{{Name: "n", Dir: true, Size: 1, Mode: "drwx", Link: "l", MTime: -3}, {Name: "m"}},
			Checks:  []Check{{Name: "writable", Target: "/a", OK: true}, {Name: "home hidden", Detail: "d"}}}},
		{ID: 10, Result: &Result{}},
	}
	for _, r := range resps {
		got, err := decodeResponse(r.encode())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("answer read back\n%+v\nwant\n%+v", got, r)
		}
	}
}

// The core reads what a runner behind the wall sends: an answer cut short, padded, from
// another build, or promising more items than it holds is refused, never half read.
func TestWireRefusesDamagedAnswers(t *testing.T) {
	b := (&Response{ID: 9, Result: &Result{Stdout: []byte("out"), Entries: []Entry{{Name: "n"}}, Checks: []Check{{Name: "c", OK: true}}}}).encode()
	for n := 0; n < len(b); n++ {
		if _, err := decodeResponse(b[:n]); err == nil {
			t.Fatalf("an answer cut to %d of %d bytes was accepted", n, len(b))
		}
	}
	if _, err := decodeResponse(append(b[:len(b):len(b)], 1)); err == nil {
		t.Error("an answer with a byte after its end was accepted")
	}
	if _, err := decodeResponse(append([]byte{wireVersion + 1}, b[1:]...)); err == nil || !strings.Contains(err.Error(), "different builds") {
		t.Errorf("another build's answer: %v", err)
	}
	// version, ID 1, no stream, no data, no error, a result of zeros, then 2^35 entries.
	lying := []byte{wireVersion, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}
	if _, err := decodeResponse(lying); err == nil {
		t.Error("an answer promising 2^35 entries in a few bytes was accepted")
	}
}

// A frame longer than the bound is refused before it is read.
func TestFrameBound(t *testing.T) {
	var buf bytes.Buffer
	if err := wire.WriteFrame(&buf, bytes.Repeat([]byte("x"), 100)); err != nil {
		t.Fatal(err)
	}
	if _, err := wire.ReadFrame(bufio.NewReader(bytes.NewReader(buf.Bytes())), 99); err == nil {
		t.Error("a 100-byte frame was read under a bound of 99")
	}
	msg, err := wire.ReadFrame(bufio.NewReader(bytes.NewReader(buf.Bytes())), 100)
	if err != nil || len(msg) != 100 {
		t.Errorf("read %d bytes, %v", len(msg), err)
	}
	if _, err := wire.ReadFrame(bufio.NewReader(bytes.NewReader(buf.Bytes()[:50])), 100); err == nil {
		t.Error("a frame cut short was read")
	}
}

// A call too large for one message is refused by the core before it is sent, and the
// runner stays usable.
func TestOversizeCallRefusedWhole(t *testing.T) {
	dir := t.TempDir()
	c := startServer(t, dir)
	big := make([]byte, maxMessage)
	_, err := c.Call(&Request{Tool: ToolWrite, Write: &WriteArgs{Path: filepath.Join(dir, "big"), Content: big}}, nil)
	if err == nil || !strings.Contains(err.Error(), "write the file in parts") {
		t.Fatalf("an oversize write: %v", err)
	}
	if r := exec1(t, c, "echo still here"); string(r.Stdout) != "still here\n" {
		t.Fatalf("after the refused call: %q", r.Stdout)
	}
}

// However much output a caller asks to keep, an answer fits one message.
func TestOutputBoundFitsAnAnswer(t *testing.T) {
	c := startServer(t, t.TempDir())
	r, err := c.Call(&Request{Tool: ToolExec, Exec: &ExecArgs{Command: "head -c 20000000 /dev/zero; head -c 20000000 /dev/zero >&2", MaxOutput: 1 << 30}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stdout) != maxMessage/4 || len(r.Stderr) != maxMessage/4 || r.StdoutTruncated != 20000000-maxMessage/4 {
		t.Errorf("kept %d and %d bytes, %d left out; want %d each", len(r.Stdout), len(r.Stderr), r.StdoutTruncated, maxMessage/4)
	}
	if r := exec1(t, c, "echo still here"); string(r.Stdout) != "still here\n" {
		t.Fatalf("after the large answer: %q", r.Stdout)
	}
}

// An answer too large for one message is sent as an error that says so.
func TestOversizeAnswerBecomesAnError(t *testing.T) {
	r := &Response{ID: 4, Result: &Result{Content: make([]byte, maxMessage)}}
	got, err := decodeResponse(r.encodeFitting())
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != 4 || got.Result != nil || !strings.Contains(got.Error, "more than one message holds") {
		t.Errorf("got %+v", got)
	}
	small := &Response{ID: 5, Result: &Result{ExitCode: 1}}
	if got, _ := decodeResponse(small.encodeFitting()); !reflect.DeepEqual(got, small) {
		t.Errorf("a small answer changed: %+v", got)
	}
}
