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
func sysctl(name string) sbpl.Query   { return sbpl.Query{Op: "sysctl-read", Name: name} }
func ipc(op, name string) sbpl.Query  { return sbpl.Query{Op: op, Name: name} }

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
	{"bind_socket_in_writable", sbpl.Query{Op: "network-bind", Path: "/Users/me/src/app/s"}},
	{"bind_loopback_port", sbpl.Query{Op: "network-bind", Addr: "127.0.0.1:8080"}},
	{"launchservices", mach("com.apple.coreservices.launchservicesd")},
	{"launchservices_mapdb", mach("com.apple.lsd.mapdb")},
	{"pasteboard", mach("com.apple.pasteboard.1")},
	{"keychain", mach("com.apple.SecurityServer")},
	{"cfprefsd", mach("com.apple.cfprefsd.agent")},
	{"trust_evaluation_agent", mach("com.apple.TrustEvaluationAgent")},
	{"mdns_lookup", mach("com.apple.dnssd.service")},
	{"exec_from_home", file("process-exec", "/Users/me/bin/tool")},
	{"interpreter_from_home", file("process-exec-interpreter", "/Users/me/.venv/bin/python")},
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
	// Kept denied while real programs were let in (each with why in the profile).
	{"stat_ssh_folder", file("file-read-metadata", "/Users/me/.ssh")},
	{"xattr_ssh_key", file("file-read-xattr", "/Users/me/.ssh/id_ed25519")},
	{"exists_ssh_key", file("file-test-existence", "/Users/me/.ssh/id_ed25519")},
	{"read_user_preferences", file("file-read-data", "/Users/me/Library/Preferences/.GlobalPreferences.plist")},
	{"read_text_encoding", file("file-read-data", "/Users/me/.CFUserTextEncoding")},
	{"read_var_tmp_other", file("file-read-data", "/private/var/tmp/notes.txt")},
	{"write_var_tmp_other", file("file-write-create", "/private/var/tmp/x")},
	{"chmod_here_document", file("file-write-mode", "/private/var/tmp/sh-thd.1a2b")},
	{"here_document_folder_below", file("file-write-create", "/private/var/tmp/sh-thd.1a2b/x")},
	{"read_var_folders", file("file-read-data", "/private/var/folders/xy/abc/T/secret")},
	{"read_var_db_other", file("file-read-data", "/private/var/db/sudo/ts/me")},
	{"write_select_link", file("file-write-create", "/private/var/select/sh")},
	{"open_ttys", file("file-read-data", "/dev/ttys003")},
	{"allocate_pty", sbpl.Query{Op: "pseudo-tty"}},
	{"user_preference_read", sbpl.Query{Op: "user-preference-read"}},
	{"iokit_open", sbpl.Query{Op: "iokit-open"}},
	{"cfprefsd_daemon", mach("com.apple.cfprefsd.daemon")},
	{"securityd_xpc", mach("com.apple.securityd.xpc")},
	{"fsevents", mach("com.apple.FSEvents")},
	{"distributed_notifications", mach("com.apple.distributed_notifications@Uv3")},
	{"power_management", mach("com.apple.PowerManagement.control")},
	{"shm_cfprefs", ipc("ipc-posix-shm-read-data", "apple.cfprefs.501")},
	{"shm_notifyd_write", ipc("ipc-posix-shm-write-data", "apple.shm.notification_center")},
	{"shm_other_name", ipc("ipc-posix-shm-write-create", "/evil")},
	{"list_all_processes", sysctl("kern.proc.all")},
	{"read_other_processes_args_old", sysctl("kern.procargs")},
	{"boot_arguments_write", sbpl.Query{Op: "sysctl-write", Name: "kern.bootargs"}},
	{"list_other_pids", sbpl.Query{Op: "process-info-listpids"}},
	{"exec_here_document", file("process-exec", "/private/var/tmp/sh-thd.1a2b")},
	// What the person's own programs run or obey outside, and their data.
	{"write_git_config", file("file-write-data", "/Users/me/src/app/.git/config")},
	{"plant_git_hook", file("file-write-create", "/Users/me/src/app/.git/hooks/post-checkout")},
	{"plant_hook_nested_repo", file("file-write-create", "/Users/me/src/app/third_party/x/.git/hooks/pre-commit")},
	{"link_git_config", file("file-link", "/Users/me/src/app/.git/config")},
	{"agent_host_settings", file("file-write-data", "/Users/me/src/app/.claude/settings.json")},
	{"agent_host_local_settings", file("file-write-create", "/Users/me/src/app/.claude/settings.local.json")},
	{"agent_host_settings_folder", file("file-write-create", "/Users/me/src/app/.claude")},
	{"project_mcp_servers", file("file-write-create", "/Users/me/src/app/.mcp.json")},
	{"codex_project_config", file("file-write-create", "/Users/me/src/app/packages/web/.codex/config.toml")},
	{"gemini_project_settings", file("file-write-data", "/Users/me/src/app/.gemini/settings.json")},
	{"cursor_project_hooks", file("file-write-create", "/Users/me/src/app/.cursor/hooks.json")},
	{"rename_writable_folder_away", file("file-write-unlink", "/Users/me/src/app")},
	{"read_homebrew_postgres", file("file-read-data", "/opt/homebrew/var/postgresql@16/base/1/1259")},
	{"read_intel_homebrew_redis", file("file-read-data", "/usr/local/var/db/redis/dump.rdb")},
	{"read_network_configuration", file("file-read-data", "/Library/Preferences/SystemConfiguration/preferences.plist")},
	{"read_login_window_users", file("file-read-data", "/Library/Preferences/com.apple.loginwindow.plist")},
	{"list_system_preferences", file("file-read-data", "/Library/Preferences")},
	{"other_programs_semaphore", ipc("ipc-posix-sem", "/com.example.app.lock")},
	// SysV IPC: its keys are one namespace for all of the person's programs (a PostgreSQL
	// server's shared memory, another program's semaphores), which no filter can split.
	{"sysv_shared_memory", sbpl.Query{Op: "ipc-sysv-shm"}},
	{"sysv_semaphore", sbpl.Query{Op: "ipc-sysv-sem"}},
	{"sysv_message_queue", sbpl.Query{Op: "ipc-sysv-msg"}},
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
	{"script_interpreter", file("process-exec-interpreter", "/bin/sh")}, // a #!/bin/sh script
	{"script_in_writable", file("process-exec", "/Users/me/src/app/build.sh")},
	{"exec_runner", file("process-exec", "/Applications/OpenWorker.app/Contents/MacOS/openworker")},
	{"exec_built_binary", file("process-exec", "/Users/me/src/app/bin/app")},
	{"map_system_library", file("file-map-executable", "/usr/lib/libSystem.B.dylib")},
	{"fork", sbpl.Query{Op: "process-fork"}},
	{"signal_own_child", sbpl.Query{Op: "signal", SameSandbox: true}},
	{"inspect_own_child", sbpl.Query{Op: "process-info-pidinfo", SameSandbox: true}},
	{"cpu_count", sbpl.Query{Op: "sysctl-read", Name: "hw.ncpu"}},
	// What real programs need on a Mac, each with its source (see the profile's comments).
	{"dyld_reads_root", file("file-read-data", "/")},                                        // fence's profile; dyld on every start
	{"list_root", file("file-read-data", "/")},                                              // `ls /`
	{"sh_shim_select", file("file-read-data", "/private/var/select/sh")},                    // /bin/sh reads it (codex)
	{"sh_shim_select_stat", file("file-read-metadata", "/private/var/select/sh")},           // readlink
	{"developer_dir_link", file("file-read-metadata", "/private/var/select/developer_dir")}, // the /usr/bin/git shim
	{"xcode_select_link", file("file-read-data", "/private/var/db/xcode_select_link")},      // the developer-tool shims
	{"dyld_cache_old", file("file-read-data", "/private/var/db/dyld/dyld_shared_cache_arm64e")},
	{"map_dyld_cache", file("file-read-data", "/System/Volumes/Preboot/Cryptexes/OS/System/Library/dyld/dyld_shared_cache_arm64e")},
	{"list_dev_fd", file("file-read-data", "/dev/fd")},             // Python before each subprocess
	{"process_substitution", file("file-read-data", "/dev/fd/63")}, // bash <(...)
	{"write_dev_stderr", file("file-write-data", "/dev/stderr")},   // > /dev/stderr
	{"write_dev_fd", file("file-write-data", "/dev/fd/2")},
	{"stat_dev_stdout", file("file-read-metadata", "/dev/stdout")},
	{"stat_dev", file("file-read-metadata", "/dev")},
	{"dtracehelper_open", file("file-read-data", "/dev/dtracehelper")}, // dyld in every process (fence, sandbox-runtime)
	{"dtracehelper_write", file("file-write-data", "/dev/dtracehelper")},
	{"dtracehelper_ioctl", file("file-ioctl", "/dev/dtracehelper")},
	{"here_document_create", file("file-write-create", "/private/var/tmp/sh-thd.1a2b3c")}, // bash 3.2's P_tmpdir
	{"here_document_write", file("file-write-data", "/private/var/tmp/sh-thd.1a2b3c")},
	{"here_document_read", file("file-read-data", "/private/var/tmp/sh-thd.1a2b3c")},
	{"here_document_unlink", file("file-write-unlink", "/private/var/tmp/sh-thd.1a2b3c")},
	{"here_document_folder", file("file-read-metadata", "/private/var/tmp")},
	{"notification_center", mach("com.apple.system.notification_center")}, // sandbox-runtime, fence
	{"membership", mach("com.apple.system.opendirectoryd.membership")},
	{"trustd", mach("com.apple.trustd")},
	{"dns_configuration", mach("com.apple.SystemConfiguration.DNSConfiguration")},
	{"sysv_limits", sysctl("kern.sysv.semmni")},       // ProcessPoolExecutor (claude-code 81032)
	{"route_table", sysctl("net.routetable.0.0.3.0")}, // Node os.networkInterfaces (codex, fence)
	{"sysctl_name2oid", sysctl("sysctl.name2oid")},    // sysctl -n
	{"sysctl_proc_translated", sysctl("sysctl.proc_translated")},
	{"cpu_features", sysctl("hw.optional.arm.FEAT_SHA3")},
	{"cache_config", sysctl("hw.cacheconfig")},
	{"own_process", sysctl("kern.proc.pid.4242")},
	{"ptrauth", sysctl("machdep.ptrauth_enabled")},
	{"semaphore", ipc("ipc-posix-sem", "/mp-1a2b3c")},                               // multiprocessing locks (codex)
	{"openmp_shm", ipc("ipc-posix-shm-write-create", "/__KMP_REGISTERED_LIB_4242")}, // libomp (codex)
	{"openmp_shm_write", ipc("ipc-posix-shm-write-data", "/__KMP_REGISTERED_LIB_4242_501")},
	{"python_shared_memory", ipc("ipc-posix-shm-read-data", "/psm_1a2b3c4d")},
	{"host_info", sbpl.Query{Op: "mach-host-special-port-set"}}, // the mach-host* family Node's os.cpus() needs (codex)
	{"git_commit_index", file("file-write-data", "/Users/me/src/app/.git/index")},
	{"git_commit_object", file("file-write-create", "/Users/me/src/app/.git/objects/ab/cdef0123")},
	{"git_branch_ref", file("file-write-create", "/Users/me/src/app/.git/refs/heads/feature")},
	{"git_read_config", file("file-read-data", "/Users/me/src/app/.git/config")},
	{"claude_md", file("file-write-data", "/Users/me/src/app/CLAUDE.md")},                       // instructions, not settings
	{"cursor_rules_file", file("file-write-create", "/Users/me/src/app/.cursorrules")},          // a file, not the .cursor folder
	{"mcp_json_backup", file("file-write-create", "/Users/me/src/app/.mcp.json.bak")},           // not what a host reads
	{"claude_lookalike", file("file-write-create", "/Users/me/src/app/.claudex/settings.json")}, // another name
	{"read_agent_settings", file("file-read-data", "/Users/me/src/app/.claude/settings.json")},
	{"homebrew_ca_bundle", file("file-read-data", "/opt/homebrew/etc/ca-certificates/cert.pem")},
	{"homebrew_git", file("process-exec", "/opt/homebrew/bin/git")},
	{"xcode_licence", file("file-read-data", "/Library/Preferences/com.apple.dt.Xcode.plist")},       // tuist PR 7631
	{"loky_semaphore", ipc("ipc-posix-sem", "/loky-4242-k3j_9x2a")},                                  // joblib
	{"bind_socket_in_tmp", sbpl.Query{Op: "network-bind", Path: "/private/tmp/openworker-7f3a91/s"}}, // tsx, vite, jest workers (fence, codex)
	{"session_https_socket", unix("/private/tmp/openworker-7f3a91/https.sock")},                      // gh's stand-in login (http_unix_socket)
	{"session_ssh_agent", unix("/private/tmp/openworker-7f3a91/ssh-agent.sock")},
	{"boot_arguments", sysctl("kern.bootargs")},                                      // every process at start (codex PR 11277)
	{"shm_notifyd", ipc("ipc-posix-shm-read-data", "apple.shm.notification_center")}, // tzset, localtime
}

// decide answers q as Seatbelt would, and fails the test when the plain last-match reading
// would answer otherwise: OpenWorker's profiles are written so that no decision rests on
// which of the two readings is right.
func decide(t *testing.T, ev *sbpl.Profile, q sbpl.Query) sbpl.Decision {
	t.Helper()
	d, err := ev.Eval(q)
	if err != nil {
		t.Fatalf("Eval(%s): %v", q, err)
	}
	last, err := ev.EvalAs(q, sbpl.LastMatch)
	if err != nil {
		t.Fatalf("EvalAs(%s): %v", q, err)
	}
	if last.Allowed != d.Allowed {
		t.Errorf("%s: decided by %s, but the last matching rule, %s, says otherwise; order the rules so that both readings agree",
			q, ev.Rules[d.Rule].Source, ev.Rules[last.Rule].Source)
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
			if d.Message != testMarker && !(d.Quiet && quietEscapes[a.name]) {
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
		{policy.Open, dial("127.0.0.1:22"), false}, // open means the internet, not this Mac's services
		{policy.Open, dial("[::1]:5432"), false},
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
		// A toolchain's login file is hidden inside it.
		{file("file-read-data", "/Users/me/.cargo/credentials.toml"), false},
		{file("file-read-metadata", "/Users/me/.cargo/credentials.toml"), false},
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

// broadAllows are rules a later change might add near the top of the profile, each wider than
// it should be. The home folder, read-only folders, terminals and Unix sockets must stay
// denied after any of them: with denies that named only file* or file-read*, the first two
// (the shape greywall PR 20 found leaking on a real Mac) opened the home folder.
var broadAllows = []string{
	`(allow file-read-data (subpath "/"))`,
	`(allow file-read-metadata (subpath "/"))`,
	`(allow file-read-metadata)`,
	`(allow file-read-data file-read-metadata file-read-xattr file-test-existence (subpath "/"))`,
	`(allow file-read* (subpath "/"))`,
	`(allow file-write-data file-write-create file-write-unlink (subpath "/"))`,
	`(allow file-write* (subpath "/"))`,
	`(allow file-ioctl (subpath "/"))`,
	`(allow process-exec file-map-executable (subpath "/"))`,
	`(allow process-exec* (subpath "/"))`,
	`(allow file* (subpath "/"))`,
	`(allow network-outbound network-bind (subpath "/"))`,
}

func TestDeniesHoldAgainstBroadAllows(t *testing.T) {
	held := []attempt{
		{"read_ssh_key", file("file-read-data", "/Users/me/.ssh/id_ed25519")},
		{"stat_ssh_key", file("file-read-metadata", "/Users/me/.ssh/id_ed25519")},
		{"xattr_ssh_key", file("file-read-xattr", "/Users/me/.ssh/id_ed25519")},
		{"exists_ssh_key", file("file-test-existence", "/Users/me/.ssh/id_ed25519")},
		{"list_home", file("file-read-data", "/Users/me")},
		{"write_zshrc", file("file-write-data", "/Users/me/.zshrc")},
		{"create_launch_agent", file("file-write-create", "/Users/me/Library/LaunchAgents/evil.plist")},
		{"exec_from_home", file("process-exec", "/Users/me/bin/tool")},
		{"map_from_home", file("file-map-executable", "/Users/me/lib/evil.dylib")},
		{"write_read_only", file("file-write-data", "/Users/me/docs/specs/a.md")},
		{"unlink_read_only", file("file-write-unlink", "/Users/me/docs/specs/a.md")},
		{"ioctl_terminal", file("file-ioctl", "/dev/ttys003")},
		{"open_tty", file("file-read-data", "/dev/tty")},
		{"docker_socket", unix("/private/var/run/docker.sock")},
		{"bind_socket", sbpl.Query{Op: "network-bind", Path: "/Users/me/src/app/.sock"}},
		{"link", file("file-link", "/Users/me/src/app/key")},
	}
	pr, _ := render(t, macPolicy())
	head, rest, ok := strings.Cut(pr.Text, "(deny default\n  (with message "+`"`+testMarker+`"`+"))\n")
	if !ok {
		t.Fatal("the profile has no (deny default ...) to add a rule after")
	}
	for _, allow := range broadAllows {
		text := head + "(deny default (with message \"" + testMarker + "\"))\n" + allow + "\n" + rest
		ev, err := sbpl.Parse(text, pr.ParamMap())
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range held {
			t.Run(allow+"/"+a.name, func(t *testing.T) {
				d := decide(t, ev, a.q)
				if d.Allowed {
					t.Errorf("after %s, %s was allowed by %s", allow, a.q, ev.Rules[d.Rule].Source)
				}
			})
		}
	}
}

// TestEveryDenyNamesItsOperations: a deny that names a wildcard names each operation under it
// too, so that no allow of one of them outranks it (see testdata/SEMANTICS.md).
func TestEveryDenyNamesItsOperations(t *testing.T) {
	for name, p := range goldenPolicies() {
		_, ev := render(t, p)
		for _, r := range ev.Rules {
			if r.Action != sbpl.Deny || slices.Equal(r.Ops, []string{"default"}) {
				continue
			}
			for _, op := range r.Ops {
				if !sbpl.IsWildcard(op) {
					continue
				}
				for _, c := range sbpl.Concrete(op) {
					if !slices.Contains(r.Ops, c) {
						t.Errorf("%s: %s names %s but not %s, which an allow of %s would outrank", name, r.Source, op, c, c)
					}
				}
			}
		}
	}
}

func TestNeverOutsideTheSandbox(t *testing.T) {
	for name, p := range goldenPolicies() {
		pr, _ := render(t, p)
		// Folder names are quoted in the repository-metadata expressions; what a string holds
		// is data, not a rule, so the strings' contents are left out of the search.
		code := withoutStrings(pr.Text)
		for _, bad := range []string{"no-sandbox", "(allow default", "(allow file-read*)", "(allow iokit", "(allow pseudo-tty", "(allow user-preference"} {
			if strings.Contains(code, bad) {
				t.Errorf("%s: the profile contains %q", name, bad)
			}
		}
	}
}

// withoutStrings returns the profile text with the contents of each "..." string removed
// (\\ and \" are a backslash and a quote inside one, as for SBPL).
func withoutStrings(text string) string {
	var b strings.Builder
	in := false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
			b.WriteByte(c)
		case !in:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func TestWithoutStrings(t *testing.T) {
	got := withoutStrings(`(allow x (regex "a\") (allow default) (\"b")) ; (allow default`)
	if want := `(allow x (regex "")) ; (allow default`; got != want {
		t.Errorf("withoutStrings = %q, want %q", got, want)
	}
}

func TestTrustdNeedsNetwork(t *testing.T) {
	for _, mode := range []policy.Network{policy.Allowlist, policy.Open, policy.None} {
		p := macPolicy()
		p.Network = mode
		if mode != policy.Allowlist {
			p.ProxyPort = 0
		}
		_, ev := render(t, p)
		for _, svc := range []string{"com.apple.trustd", "com.apple.trustd.agent"} {
			want := mode != policy.None // trustd fetches issuers and revocation lists: an egress path
			if d := decide(t, ev, mach(svc)); d.Allowed != want {
				t.Errorf("%s in %s mode: allowed = %v, want %v", svc, mode, d.Allowed, want)
			}
		}
	}
}

// dataVolume is the data volume's own path (macOS 10.15 and later): every file of a Mac that
// is not on the system volume has a second spelling below it, /Users/me/.ssh as
// /System/Volumes/Data/Users/me/.ssh. Whether Seatbelt matches that spelling as given or the
// firmlinked one is not documented, so no test of the profile may depend on either.
const dataVolume = "/System/Volumes/Data"

// TestDataVolumeSpellingIsDenied: every file a session may not reach, spelled through the
// data volume, is denied too, and reported, in every golden profile: the escapes' targets,
// the hidden login files, the folders narrowed out of the system paths, another account's
// home, the person's per-user temp folder. So are the session's own folders by that
// spelling: a session reaches them by the spelling it was given.
func TestDataVolumeSpellingIsDenied(t *testing.T) {
	var targets []sbpl.Query
	for _, a := range escapes {
		if (strings.HasPrefix(a.q.Op, "file") || strings.HasPrefix(a.q.Op, "process-exec")) && strings.HasPrefix(a.q.Path, "/") &&
			!strings.HasPrefix(a.q.Path, "/dev/") && !strings.HasPrefix(a.q.Path, "/System/") {
			targets = append(targets, a.q)
		}
	}
	targets = append(targets,
		file("file-read-data", "/Users/me/.cargo/credentials.toml"),
		file("file-read-data", "/Users/other/.ssh/id_rsa"),
		file("file-read-data", "/Users"),
		file("file-read-data", "/private/var/folders/xy/abc/T/TemporaryItems/secret"),
		file("file-read-data", "/opt/homebrew/var/redis/dump.rdb"),
		file("file-read-data", "/Library/Preferences/SystemConfiguration/preferences.plist"),
		file("file-read-metadata", "/Users/me/.ssh"),
		file("file-read-data", "/Users/me/src/app/main.go"),
		file("file-write-data", "/Users/me/src/app/main.go"),
		file("file-read-data", "/Users/me/docs/specs/a.md"),
		file("file-read-data", "/private/tmp/openworker-7f3a91/home/.gitconfig"),
		file("file-read-data", ""), // the data volume's root itself
	)
	for name, p := range goldenPolicies() {
		_, ev := render(t, p)
		for _, q := range targets {
			q.Path = dataVolume + q.Path
			t.Run(name+"/"+q.String(), func(t *testing.T) {
				d := decide(t, ev, q)
				if d.Allowed {
					t.Fatalf("%s was allowed by %s", q, ev.Rules[d.Rule].Source)
				}
				if d.Message != testMarker {
					t.Errorf("%s was denied by %s without the run's marker, so it would not be reported", q, ev.Rules[d.Rule].Source)
				}
			})
		}
	}
}

// TestSystemNarrowed: of /System, what programs load stays readable (frameworks, the dyld
// shared cache where each macOS keeps it, the Mac Catalyst frameworks), and the folders on the
// way can be stat'ed; the rest of /System/Volumes (the data volume, the swap files, the
// update and boot volumes' other folders) cannot be read.
func TestSystemNarrowed(t *testing.T) {
	_, ev := render(t, macPolicy())
	tests := []struct {
		q    sbpl.Query
		want bool
	}{
		{file("file-read-data", "/System/Library/Frameworks/Foundation.framework/Foundation"), true},
		{file("file-map-executable", "/System/Library/Frameworks/Security.framework/Security"), true},
		{file("process-exec", "/System/Library/Frameworks/Python.framework/Versions/Current/bin/python3"), true},
		{file("file-read-data", "/System/Library/dyld/dyld_shared_cache_arm64e"), true},
		{file("file-read-data", "/System/Cryptexes/OS/System/Library/dyld/dyld_shared_cache_arm64e"), true},
		{file("file-map-executable", "/System/Volumes/Preboot/Cryptexes/OS/System/Library/dyld/dyld_shared_cache_arm64e"), true},
		{file("file-read-data", "/System/iOSSupport/System/Library/Frameworks/UIKit.framework/UIKit"), true},
		{file("file-read-metadata", "/System"), true},
		{file("file-read-metadata", "/System/Volumes"), true},
		{file("file-read-data", "/System"), false},
		{file("file-read-data", "/System/Volumes"), false},
		{file("file-read-data", "/System/Volumes/Data"), false},
		{file("file-read-metadata", "/System/Volumes/Data"), false},
		{file("file-read-data", "/System/Volumes/VM/swapfile0"), false},
		{file("file-read-data", "/System/Volumes/Update/mnt1"), false},
		{file("file-read-data", "/System/Applications/Calculator.app/Contents/MacOS/Calculator"), false},
		{file("file-write-data", "/System/Library/Frameworks/Foundation.framework/Foundation"), false},
	}
	for _, tt := range tests {
		t.Run(tt.q.String(), func(t *testing.T) {
			if d := decide(t, ev, tt.q); d.Allowed != tt.want {
				t.Errorf("allowed = %v, want %v (rule %s)", d.Allowed, tt.want, ev.Rules[d.Rule].Source)
			}
		})
	}
}

// A hooks folder a repository names in its work tree (core.hooksPath), which the session's
// start found and the policy lists, is refused as .git/hooks is; the project around it is not.
func TestNamedHooksFolderIsReadOnly(t *testing.T) {
	p := macPolicy()
	p.Protected = append(p.Protected, policy.Protected{Path: "/Users/me/src/app/.husky", Dir: true, Explicit: true})
	_, ev := render(t, p)
	for _, q := range []sbpl.Query{
		file("file-write-data", "/Users/me/src/app/.husky/pre-commit"),
		file("file-write-create", "/Users/me/src/app/.husky/_/post-commit"),
		file("file-write-unlink", "/Users/me/src/app/.husky"),
		file("file-link", "/Users/me/src/app/.husky/pre-commit"),
		// In another case, as the volume finds it.
		file("file-write-create", "/Users/me/src/app/.HUSKY/_/pre-commit"),
		file("file-write-data", "/Users/me/src/app/.Husky/pre-commit"),
		file("file-write-unlink", "/Users/me/src/app/.HUSKY"),
	} {
		if d := decide(t, ev, q); d.Allowed || d.Message != testMarker {
			t.Errorf("%s: allowed %v by %s", q, d.Allowed, ev.Rules[d.Rule].Source)
		}
	}
	for _, q := range []sbpl.Query{
		file("file-write-data", "/Users/me/src/app/.huskyrc"),
		file("file-write-create", "/Users/me/src/app/src/husky.js"),
		file("file-read-data", "/Users/me/src/app/.husky/pre-commit"),
	} {
		if d := decide(t, ev, q); !d.Allowed {
			t.Errorf("%s: denied by %s", q, ev.Rules[d.Rule].Source)
		}
	}
}
