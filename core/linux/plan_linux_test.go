package linux

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// The mount order decides which rule wins where folders nest; it is checked as text.
func TestPlanGolden(t *testing.T) {
	nested := &policy.Policy{
		Writable:    []string{"/home/u/work", "/tmp/shared"},
		ReadOnly:    []string{"/home/u/work/vendor", "/srv/data"},
		PrivateTmp:  "/tmp/openworker-1",
		Home:        "/tmp/openworker-1/home",
		UserHome:    "/home/u",
		System:      []string{"/usr", "/bin", "/etc/passwd", "/usr/share/zoneinfo"},
		Toolchains:  []string{"/home/u/.cargo"},
		Hidden:      []string{"/home/u/.cargo/credentials.toml"},
		RunnerFiles: []string{"/opt/openworker/bin/openworker"},
		Network:     policy.Allowlist,
		ProxyPort:   41000,
		Protected: []policy.Protected{
			{Path: "/home/u/work/.git/hooks", Dir: true}, {Path: "/home/u/work/.git/config"},
			{Path: "/tmp/shared/wt/.git"},
		},
	}
	conn, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, tt := range []struct {
		name string
		p    *policy.Policy
		// served: the builder serves the runner itself, so the runner's binary is not
		// mounted.
		served bool
	}{
		{"nested_session_folders", nested, false},
		{"served_runner", nested, true},
		{"kept_caches", &policy.Policy{
			Writable:   []string{"/srv/project"},
			PrivateTmp: "/tmp/openworker-3",
			Home:       "/tmp/openworker-3/home",
			UserHome:   "/home/u",
			System:     []string{"/usr"},
			Toolchains: []string{"/home/u/.cargo"},
			Caches:     []policy.Placed{{Src: "/home/u/.local/state/openworker/caches/0123/tools", Dst: "/home/u/.local/state/openworker/caches/0123/tools"}},
			HostCaches: []policy.Placed{{Src: "/home/u/go/pkg/mod/cache/download", Dst: "/tmp/openworker-3/go-downloads"}},
			Network:    policy.None,
		}, false},
		{"stand_in_trust", &policy.Policy{
			Writable:   []string{"/srv/project"},
			PrivateTmp: "/tmp/openworker-4",
			Home:       "/tmp/openworker-4/home",
			UserHome:   "/home/u",
			System:     []string{"/usr", "/etc/ssl", "/etc/pki"},
			Trust: []policy.Setting{
				{Src: "/tmp/openworker-4/trust/ca-bundle.pem", Dst: "/etc/ssl/certs/ca-certificates.crt"},
				{Src: "/tmp/openworker-4/trust/ca-bundle.pem", Dst: "/etc/pki/tls/certs/ca-bundle.crt"},
			},
			Network:   policy.Allowlist,
			ProxyPort: 41000,
		}, false},
		{"private_tmp_outside_tmp", &policy.Policy{
			Writable:   []string{"/srv/project"},
			PrivateTmp: "/run/user/1000/openworker-2",
			Home:       "/run/user/1000/openworker-2/home",
			UserHome:   "/home/u",
			System:     []string{"/usr"},
			Network:    policy.None,
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := sandbox.RunnerSpec{Path: "/opt/openworker/bin/openworker", Args: []string{"runner"}}
			if tt.served {
				spec.Conn, spec.Serve = conn, true
			}
			s, err := planWall(tt.p, spec)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, m := range s.Mounts {
				mode := "ro"
				if m.Writable {
					mode = "rw"
				}
				if m.System {
					mode += " system"
				}
				if m.Empty {
					mode += " empty"
				}
				b.WriteString(m.Dst + " <- " + m.Src + " (" + mode + ")\n")
			}
			j, _ := json.Marshal(s.Runner)
			b.WriteString("runner " + string(j) + "\n")
			golden := filepath.Join("testdata", tt.name+".golden")
			if *update {
				must(t, os.WriteFile(golden, []byte(b.String()), 0o644))
			}
			want, err := os.ReadFile(golden)
			must(t, err)
			if b.String() != string(want) {
				t.Errorf("plan differs from %s (run with -update after checking):\n%s", golden, b.String())
			}
		})
	}
}

func TestPlanRefuses(t *testing.T) {
	ok := func() *policy.Policy {
		return &policy.Policy{System: []string{"/usr"}, Network: policy.None}
	}
	for _, tt := range []struct {
		name string
		mod  func(*policy.Policy)
		want string
	}{
		{"nil_policy", nil, "no policy"},
		{"bad_network", func(p *policy.Policy) { p.Network = "wide" }, `network mode "wide"`},
		{"allowlist_without_port", func(p *policy.Policy) { p.Network = policy.Allowlist }, "proxy's port"},
		{"relative_folder", func(p *policy.Policy) { p.Writable = []string{"work"} }, `writable path "work"`},
		{"unclean_folder", func(p *policy.Policy) { p.ReadOnly = []string{"/srv/../etc"} }, `read-only path "/srv/../etc"`},
		{"ca_bundle_outside_the_private_tmp", func(p *policy.Policy) {
			p.PrivateTmp = "/tmp/ow"
			p.Trust = []policy.Setting{{Src: "/srv/bundle.pem", Dst: "/usr/lib/ssl/cert.pem"}}
		}, "the CA bundle /srv/bundle.pem is not in the private tmp"},
		{"ca_bundle_outside_system_paths", func(p *policy.Policy) {
			p.PrivateTmp = "/tmp/ow"
			p.Trust = []policy.Setting{{Src: "/tmp/ow/b.pem", Dst: "/srv/cert.pem"}}
		}, "/srv/cert.pem is not in a system path the sandbox reads"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var p *policy.Policy
			if tt.mod != nil {
				p = ok()
				tt.mod(p)
			}
			_, err := planWall(p, sandbox.RunnerSpec{Path: "/bin/true"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}
