package linux

import (
	"reflect"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/policy"
)

func sampleSetup() *wallSetup {
	return &wallSetup{
		Mounts: []mountStep{
			{Src: "/usr", Dst: "/usr", System: true},
			{Src: "/home/ü/project with space", Dst: "/home/ü/project with space", Writable: true, Dev: 2049, Ino: 1 << 40},
			{Dst: "/home/ü/.cargo/credentials.toml", Empty: true},
			{Src: "/tmp/openworker-1", Dst: "/tmp", Writable: true},
			{Src: "", Dst: "/x"},
		},
		Network:    policy.Allowlist,
		ProxyPort:  41000,
		TimerSlack: 50000,
		UserHome:   "/home/ü",
		Runner: runnerSetup{
			Path: "/opt/openworker/bin/openworker",
			Args: []string{"runner", "", "a\x00b"},
			Env:  []string{"HOME=/tmp/openworker-1/home", "PATH=/usr/bin", strings.Repeat("L", 70000)},
			Dir:  "/home/ü/project with space",
			Conn: true, Serve: true,
		},
		Stderr: true, NetNS: true, Relay: true, NetReady: true, RelayErr: "add the rules: operation not supported",
	}
}

// What the provider encodes, the builder reads back field for field.
func TestSetupRoundTrip(t *testing.T) {
	for _, s := range []*wallSetup{sampleSetup(), {Network: policy.None}, {UserNS: true, Runner: runnerSetup{Args: []string{}}}} {
		got, err := decodeSetup(s.encode())
		if err != nil {
			t.Fatal(err)
		}
		want := *s
		if len(want.Runner.Args) == 0 {
			want.Runner.Args = nil // an empty list and no list read back alike
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("read back\n%+v\nwant\n%+v", *got, want)
		}
	}
	for _, r := range []wallReport{{Step: "bind /usr", Error: "no such file"}, {Listener: true}, {Started: true, Active: []string{"mnt", "pid"}}} {
		got, err := decodeReport(r.encode())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*got, r) {
			t.Errorf("report read back %+v, want %+v", *got, r)
		}
	}
}

// A setup cut short anywhere, with bytes after its end, or from another build is refused,
// never read as a smaller one.
func TestSetupRefusesDamage(t *testing.T) {
	b := sampleSetup().encode()
	for n := 0; n < len(b); n++ {
		if _, err := decodeSetup(b[:n]); err == nil {
			t.Fatalf("a setup cut to %d of %d bytes was accepted", n, len(b))
		}
	}
	if _, err := decodeSetup(append(b[:len(b):len(b)], 0)); err == nil || !strings.Contains(err.Error(), "follow the message") {
		t.Errorf("trailing byte: %v", err)
	}
	other := append([]byte{wireVersion + 1}, b[1:]...)
	if _, err := decodeSetup(other); err == nil || !strings.Contains(err.Error(), "different builds") {
		t.Errorf("other version: %v", err)
	}
	// A count far beyond what follows is refused before anything is allocated for it.
	huge := []byte{wireVersion, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}
	if _, err := decodeSetup(huge); err == nil {
		t.Error("a list of 2^32 mounts in 9 bytes was accepted")
	}
}
