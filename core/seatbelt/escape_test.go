package seatbelt

import (
	"slices"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/seatbelt/internal/sbpl"
)

type attempt struct {
	name string
	q    sbpl.Query
}

func file(op, path string) sbpl.Query { return sbpl.Query{Op: op, Path: path} }
func dial(addr string) sbpl.Query     { return sbpl.Query{Op: "network-outbound", Addr: addr} }
func unix(path string) sbpl.Query     { return sbpl.Query{Op: "network-outbound", Path: path} }
func mach(name string) sbpl.Query     { return sbpl.Query{Op: "mach-lookup", Name: name} }

// escapes are what a hostile command in a session of macPolicy tries; each must be denied,
// and denied with the run's marker so that it is reported.
var escapes = []attempt{
	{"read_ssh_key", file("file-read-data", "/Users/me/.ssh/id_ed25519")},
	{"stat_ssh_key", file("file-read-metadata", "/Users/me/.ssh/id_ed25519")},
	{"read_aws_credentials", file("file-read-data", "/Users/me/.aws/credentials")},
	{"list_home", file("file-read-data", "/Users/me")},
	{"list_users", file("file-read-data", "/Users")},
	{"read_sibling_of_shared", file("file-read-data", "/Users/me/src/other/.env")},
	{"read_app_state", file("file-read-data", "/Users/me/Library/Application Support/OpenWorker/token")},
	{"read_prefix_sibling", file("file-read-data", "/Users/me/src/app-secrets/key")},
	{"write_home", file("file-write-create", "/Users/me/notes.txt")},
	{"write_zshrc", file("file-write-data", "/Users/me/.zshrc")},
	{"write_launch_agent", file("file-write-create", "/Users/me/Library/LaunchAgents/evil.plist")},
	{"write_system", file("file-write-create", "/usr/local/bin/git")},
	{"write_etc", file("file-write-data", "/private/etc/hosts")},
	{"write_shared_tmp", file("file-write-create", "/private/tmp/x")},
	{"write_var_folders", file("file-write-create", "/private/var/folders/xy/abc/T/x")},
	{"write_read_only", file("file-write-data", "/Users/me/docs/specs/a.md")},
	{"create_in_read_only", file("file-write-create", "/Users/me/docs/specs/new.md")},
	{"unlink_in_read_only", file("file-write-unlink", "/Users/me/docs/specs/a.md")},
	{"link_secret_into_writable", file("file-link", "/Users/me/src/app/key")},
	{"link_secret_source", file("file-link", "/Users/me/.ssh/id_ed25519")},
	{"link_inside_writable", file("file-link", "/Users/me/src/app/b")},
	{"clone_secret_into_writable", file("file-clone", "/Users/me/src/app/key")},
	{"clone_inside_tmp", file("file-clone", "/private/tmp/openworker-7f3a91/x")},
	{"dial_ssh_loopback", dial("127.0.0.1:22")},
	{"dial_internet", dial("93.184.216.34:443")},
	{"dial_internet_v6", dial("[2606:2800:220:1:248:1893:25c8:1946]:443")},
	{"dial_dns", dial("1.1.1.1:53")},
	{"dial_other_loopback_port", dial("[::1]:5432")},
	{"dial_other_loopback_address", dial("127.0.0.2:53127")},
	{"docker_socket", unix("/private/var/run/docker.sock")},
	{"docker_desktop_socket", unix("/Users/me/.docker/run/docker.sock")},
	{"ssh_agent_socket", unix("/private/tmp/com.apple.launchd.AbCdEf/Listeners")},
	{"mdns_socket", unix("/private/var/run/mDNSResponder")},
	{"socket_in_writable", unix("/Users/me/src/app/.sock")},
	{"bind_socket_in_tmp", sbpl.Query{Op: "network-bind", Path: "/private/tmp/openworker-7f3a91/s"}},
	{"bind_loopback_port", sbpl.Query{Op: "network-bind", Addr: "127.0.0.1:8080"}},
	{"launchservices", mach("com.apple.coreservices.launchservicesd")},
	{"launchservices_mapdb", mach("com.apple.lsd.mapdb")},
	{"pasteboard", mach("com.apple.pasteboard.1")},
	{"keychain", mach("com.apple.SecurityServer")},
	{"cfprefsd", mach("com.apple.cfprefsd.agent")},
	{"trust_evaluation_agent", mach("com.apple.TrustEvaluationAgent")},
	{"mdns_lookup", mach("com.apple.dnssd.service")},
	{"exec_from_home", file("process-exec", "/Users/me/bin/tool")},
	{"exec_from_downloads", file("process-exec", "/Users/me/Downloads/payload")},
	{"map_from_home", file("file-map-executable", "/Users/me/lib/evil.dylib")},
	{"exec_from_shared_tmp", file("process-exec", "/private/tmp/x")},
	{"open_tty", file("file-read-data", "/dev/tty")},
	{"write_tty", file("file-write-data", "/dev/ttys003")},
	{"ioctl_tty", file("file-ioctl", "/dev/tty")},
	{"ioctl_inherited_terminal", file("file-ioctl", "/dev/ttys003")},
	{"open_ptmx", file("file-read-data", "/dev/ptmx")},
	{"write_disk", file("file-write-data", "/dev/disk0")},
	{"read_disk", file("file-read-data", "/dev/rdisk0")},
	{"write_zero", file("file-write-data", "/dev/zero")},
	{"signal_outside", sbpl.Query{Op: "signal"}},
	{"inspect_outside", sbpl.Query{Op: "process-info-pidinfo"}},
	{"read_other_processes_args", sbpl.Query{Op: "sysctl-read", Name: "kern.procargs2"}},
}

// uses are what a legitimate command in a session of macPolicy needs.
var uses = []attempt{
	{"read_libsystem", file("file-read-data", "/usr/lib/libSystem.B.dylib")},
	{"read_framework", file("file-read-data", "/System/Library/Frameworks/Security.framework/Security")},
	{"read_hosts", file("file-read-data", "/private/etc/hosts")},
	{"stat_etc_symlink", file("file-read-metadata", "/etc")},
	{"read_timezone", file("file-read-data", "/private/var/db/timezone/zoneinfo/UTC")},
	{"read_homebrew", file("file-read-data", "/opt/homebrew/bin/python3")},
	{"read_read_only", file("file-read-data", "/Users/me/docs/specs/a.md")},
	{"list_read_only", file("file-read-data", "/Users/me/docs/specs")},
	{"read_writable", file("file-read-data", "/Users/me/src/app/main.go")},
	{"write_writable", file("file-write-data", "/Users/me/src/app/main.go")},
	{"create_writable", file("file-write-create", "/Users/me/src/app/new.go")},
	{"unlink_writable", file("file-write-unlink", "/Users/me/src/app/old.go")},
	{"write_private_tmp", file("file-write-create", "/private/tmp/openworker-7f3a91/build/x.o")},
	{"write_sandbox_home", file("file-write-data", "/private/tmp/openworker-7f3a91/home/.gitconfig")},
	{"stat_home_on_the_way", file("file-read-metadata", "/Users/me")},
	{"stat_parent", file("file-read-metadata", "/Users/me/src")},
	{"stat_root", file("file-read-metadata", "/")},
	{"write_dev_null", file("file-write-data", "/dev/null")},
	{"read_urandom", file("file-read-data", "/dev/urandom")},
	{"ioctl_dev_null", file("file-ioctl", "/dev/null")},
	{"dial_proxy", dial("127.0.0.1:53127")},
	{"dial_proxy_v6", dial("[::1]:53127")},
	{"user_lookup", mach("com.apple.system.opendirectoryd.libinfo")},
	{"logging", mach("com.apple.logd")},
	{"certificates", mach("com.apple.trustd.agent")},
	{"system_configuration", mach("com.apple.SystemConfiguration.configd")},
	{"exec_shell", file("process-exec", "/bin/sh")},
	{"exec_git", file("process-exec", "/usr/bin/git")},
	{"exec_runner", file("process-exec", "/Applications/OpenWorker.app/Contents/MacOS/openworker")},
	{"exec_built_binary", file("process-exec", "/Users/me/src/app/bin/app")},
	{"map_system_library", file("file-map-executable", "/usr/lib/libSystem.B.dylib")},
	{"fork", sbpl.Query{Op: "process-fork"}},
	{"signal_own_child", sbpl.Query{Op: "signal", SameSandbox: true}},
	{"inspect_own_child", sbpl.Query{Op: "process-info-pidinfo", SameSandbox: true}},
	{"cpu_count", sbpl.Query{Op: "sysctl-read", Name: "hw.ncpu"}},
}

func decide(t *testing.T, ev *sbpl.Profile, q sbpl.Query) sbpl.Decision {
	t.Helper()
	d, err := ev.Eval(q)
	if err != nil {
		t.Fatalf("Eval(%s): %v", q, err)
	}
	return d
}

func TestEscapeMatrix(t *testing.T) {
	_, ev := render(t, macPolicy())
	for _, a := range escapes {
		t.Run("denied/"+a.name, func(t *testing.T) {
			d := decide(t, ev, a.q)
			if d.Allowed {
				t.Fatalf("%s was allowed by %s", a.q, ev.Rules[d.Rule].Source)
			}
			if d.Message != testMarker {
				t.Errorf("%s was denied by %s without the run's marker, so it would not be reported", a.q, ev.Rules[d.Rule].Source)
			}
		})
	}
	for _, a := range uses {
		t.Run("allowed/"+a.name, func(t *testing.T) {
			if d := decide(t, ev, a.q); !d.Allowed {
				t.Errorf("%s was denied by %s", a.q, ev.Rules[d.Rule].Source)
			}
		})
	}
}

// TestEscapeMatrixEveryProfile runs the escapes that no session may ever do against every
// golden policy, whatever its folders and network.
func TestEscapeMatrixEveryProfile(t *testing.T) {
	always := []attempt{
		{"read_ssh_key", file("file-read-data", "/Users/me/.ssh/id_ed25519")},
		{"list_home", file("file-read-data", "/Users/me")},
		{"link", file("file-link", "/Users/me/src/app/key")},
		{"clone", file("file-clone", "/Users/me/src/app/key")},
		{"docker_socket", unix("/private/var/run/docker.sock")},
		{"socket_in_writable", unix("/Users/me/src/app/.sock")},
		{"launchservices", mach("com.apple.coreservices.launchservicesd")},
		{"pasteboard", mach("com.apple.pasteboard.1")},
		{"ioctl_terminal", file("file-ioctl", "/dev/ttys003")},
		{"exec_from_home", file("process-exec", "/Users/me/bin/tool")},
		{"write_etc", file("file-write-data", "/private/etc/hosts")},
		{"signal_outside", sbpl.Query{Op: "signal"}},
	}
	for name, p := range goldenPolicies() {
		_, ev := render(t, p)
		for _, a := range always {
			t.Run(name+"/"+a.name, func(t *testing.T) {
				if d := decide(t, ev, a.q); d.Allowed {
					t.Errorf("%s was allowed by %s", a.q, ev.Rules[d.Rule].Source)
				}
			})
		}
	}
}

func TestNetworkModes(t *testing.T) {
	tests := []struct {
		mode policy.Network
		q    sbpl.Query
		want bool
	}{
		{policy.Allowlist, dial("127.0.0.1:53127"), true},
		{policy.Allowlist, dial("[::ffff:127.0.0.1]:53127"), false}, // Seatbelt's localhost is not the mapped form
		{policy.Allowlist, dial("93.184.216.34:443"), false},
		{policy.Open, dial("93.184.216.34:443"), true},
		{policy.Open, dial("[2606:2800:220:1:248:1893:25c8:1946]:80"), true},
		{policy.Open, dial("127.0.0.1:22"), true}, // open means open; the product page says so
		{policy.Open, unix("/private/var/run/mDNSResponder"), true},
		{policy.Open, unix("/private/var/run/docker.sock"), false},
		{policy.Open, unix("/Users/me/src/app/.sock"), false},
		{policy.Open, sbpl.Query{Op: "network-bind", Addr: "0.0.0.0:8080"}, false},
		{policy.None, dial("127.0.0.1:53127"), false},
		{policy.None, dial("93.184.216.34:443"), false},
		{policy.None, unix("/private/var/run/mDNSResponder"), false},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode)+"/"+tt.q.String(), func(t *testing.T) {
			p := macPolicy()
			p.Network = tt.mode
			_, ev := render(t, p)
			if d := decide(t, ev, tt.q); d.Allowed != tt.want {
				t.Errorf("%s in %s mode: allowed = %v, want %v (rule %s)", tt.q, tt.mode, d.Allowed, tt.want, ev.Rules[d.Rule].Source)
			}
		})
	}
}

// TestLocalFilterWouldOpenEverything shows why the renderer never writes a (local ip ...)
// filter on an outbound rule: the evaluator, like Seatbelt, lets it match any destination.
func TestLocalFilterWouldOpenEverything(t *testing.T) {
	pr, _ := render(t, macPolicy())
	bad := strings.Replace(pr.Text, `(remote ip "localhost:53127")`, `(local ip "localhost:*")`, 1)
	ev, err := sbpl.Parse(bad, pr.ParamMap())
	if err != nil {
		t.Fatal(err)
	}
	if d := decide(t, ev, dial("93.184.216.34:443")); !d.Allowed {
		t.Fatal("a (local ip) outbound rule did not open the internet: the evaluator misses the peers' bug")
	}
}

func TestReadOnlyInsideWritable(t *testing.T) {
	_, ev := render(t, goldenPolicies()["home_toolchains"])
	tests := []struct {
		q    sbpl.Query
		want bool
	}{
		{file("file-write-data", "/Users/me/src/app/main.go"), true},
		{file("file-write-data", "/Users/me/src/app/vendor/lib.go"), false},
		{file("file-write-create", "/Users/me/src/app/vendor/new.go"), false},
		{file("file-read-data", "/Users/me/src/app/vendor/lib.go"), true},
		{file("file-read-data", "/Users/me/.cargo/bin/cargo"), true},
		{file("process-exec", "/Users/me/.cargo/bin/cargo"), true},
		{file("file-write-data", "/Users/me/.cargo/config.toml"), false},
		{file("file-read-data", "/Users/me/.cargo-secrets/x"), false},
		{file("file-write-data", "/Volumes/Work/data/out.csv"), true},
		{file("file-read-data", "/Volumes/Work/other"), false},
		{file("file-read-metadata", "/Volumes/Work"), true},
		{file("file-read-data", "/Volumes/Work"), false},
	}
	for _, tt := range tests {
		t.Run(tt.q.String(), func(t *testing.T) {
			if d := decide(t, ev, tt.q); d.Allowed != tt.want {
				t.Errorf("allowed = %v, want %v (rule %s)", d.Allowed, tt.want, ev.Rules[d.Rule].Source)
			}
		})
	}
}

// TestDeniedByName checks that links, clones, Unix sockets and terminals are refused by rules
// that name them, not only by the default: a later allow added to the profile by mistake (a
// file* or network* rule) would otherwise open them.
func TestDeniedByName(t *testing.T) {
	tests := []struct {
		q  sbpl.Query
		op string
	}{
		{file("file-link", "/Users/me/src/app/key"), "file-link"},
		{file("file-clone", "/Users/me/src/app/key"), "file-clone"},
		{unix("/Users/me/src/app/.sock"), "network-outbound"},
		{sbpl.Query{Op: "network-bind", Path: "/Users/me/src/app/.sock"}, "network-bind"},
		{file("file-ioctl", "/dev/ttys003"), "file-ioctl"},
		{file("file-read-data", "/dev/tty"), "file-read*"},
	}
	_, ev := render(t, macPolicy())
	for _, tt := range tests {
		t.Run(tt.q.String(), func(t *testing.T) {
			d := decide(t, ev, tt.q)
			r := ev.Rules[d.Rule]
			if d.Allowed || !slices.Contains(r.Ops, tt.op) {
				t.Errorf("%s decided by %s, want a deny naming %s", tt.q, r.Source, tt.op)
			}
		})
	}
}
