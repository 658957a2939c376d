package linux

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/tstest"
)

// Every escape test runs a real script behind a real wall and checks three things: the
// attempt failed, it failed for the reason the wall gives (not a typo in the script), and
// nothing of it is left on the host.

type escape struct {
	name   string
	script string
	// reasons: the output must contain one of them.
	reasons []string
	// allowedToExit0: the command itself may succeed (it wrote its own private copy); the
	// check that matters is on the host.
	allowedToExit0 bool
	// host checks that nothing reached the host.
	host func(t *testing.T)
}

func runEscapes(t *testing.T, w *world, p *policy.Policy, escapes []escape) {
	t.Helper()
	for _, e := range escapes {
		t.Run(e.name, func(t *testing.T) {
			out, code := run(t, w, p, e.script)
			t.Logf("exit %d: %s", code, strings.TrimSpace(out))
			if code == 0 && !e.allowedToExit0 {
				t.Errorf("the attempt succeeded:\n%s", out)
			}
			if !containsAny(out, e.reasons...) {
				t.Errorf("the attempt did not fail for the wall's reason (want one of %q):\n%s", e.reasons, out)
			}
			if e.host != nil {
				e.host(t)
			}
		})
	}
}

func absent(path string) func(t *testing.T) {
	return func(t *testing.T) {
		t.Helper()
		if exists(path) {
			t.Errorf("%s exists on the host", path)
			os.Remove(path)
		}
	}
}

func TestEscapeFiles(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	hostTmp := fmt.Sprintf("/tmp/openworker-escape-%d", time.Now().UnixNano())
	t.Cleanup(func() { os.Remove(hostTmp) })
	const noEntry = "No such file or directory"
	const readOnly = "Read-only file system"
	runEscapes(t, w, p, []escape{
		{name: "read_ssh_key", script: `cat "$H/.ssh/id_ed25519"`, reasons: []string{noEntry}},
		{name: "list_home", script: `ls -a "$H"; ls -a "$H/.ssh"`, reasons: []string{noEntry},
			host: func(t *testing.T) {}},
		{name: "stat_home_file", script: `stat "$H/notshared.txt"`, reasons: []string{noEntry}},
		{name: "write_etc", script: `echo x > /etc/openworker-escape`, reasons: []string{readOnly},
			host: absent("/etc/openworker-escape")},
		{name: "write_usr", script: `echo x > /usr/openworker-escape`, reasons: []string{readOnly},
			host: absent("/usr/openworker-escape")},
		{name: "write_home", script: `echo x > "$H/escape"`, reasons: []string{readOnly},
			host: absent(filepath.Join(w.home, "escape"))},
		{name: "write_host_tmp", allowedToExit0: true,
			script:  `echo x > ` + hostTmp + ` && echo wrote-private-copy`,
			reasons: []string{"wrote-private-copy"},
			host: func(t *testing.T) {
				absent(hostTmp)(t)
				if !exists(filepath.Join(w.privateTmp, filepath.Base(hostTmp))) {
					t.Errorf("the write to /tmp did not land in the private tmp")
				}
			}},
		{name: "write_readonly", script: `echo x > "$RO/new.txt"`, reasons: []string{readOnly},
			host: absent(filepath.Join(w.readonly, "new.txt"))},
		{name: "chmod_readonly", script: `chmod 777 "$RO/lib.txt"`, reasons: []string{readOnly},
			host: func(t *testing.T) {
				fi, err := os.Stat(filepath.Join(w.readonly, "lib.txt"))
				if err != nil || fi.Mode().Perm() != 0o644 {
					t.Errorf("lib.txt changed: %v %v", fi.Mode(), err)
				}
			}},
		{name: "rename_readonly", script: `mv "$RO/lib.txt" "$RO/moved.txt"`, reasons: []string{readOnly},
			host: func(t *testing.T) {
				absent(filepath.Join(w.readonly, "moved.txt"))(t)
				if !exists(filepath.Join(w.readonly, "lib.txt")) {
					t.Error("lib.txt was moved")
				}
			}},
		{name: "symlink_to_secret", script: `ln -sf "$H/.ssh/id_ed25519" "$P/key-link" && cat "$P/key-link"`,
			reasons: []string{noEntry},
			host: func(t *testing.T) {
				// The link itself is a legitimate file in a writable folder; that it points
				// at the key outside gives nothing: inside, the key does not exist.
				os.Remove(filepath.Join(w.project, "key-link"))
			}},
		{name: "hard_link_secret", script: `ln "$H/.ssh/id_ed25519" "$P/key-hard"`, reasons: []string{noEntry},
			host: absent(filepath.Join(w.project, "key-hard"))},
	})
}

func TestEscapeProcesses(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	host := exec.Command("sleep", "300")
	must(t, host.Start())
	t.Cleanup(func() { host.Process.Kill(); host.Wait() })
	hostPID := fmt.Sprint(host.Process.Pid)
	alive := func(t *testing.T) {
		t.Helper()
		if !pidAlive(host.Process.Pid) {
			t.Error("the host process was ended from inside the sandbox")
		}
	}
	runEscapes(t, w, p, []escape{
		{name: "kill_host_process", script: `kill -9 ` + hostPID, reasons: []string{"No such process"}, host: alive},
		{name: "ptrace_host_process", script: `strace -p ` + hostPID + ` -e trace=none`,
			reasons: []string{"No such process"}, host: alive},
		{name: "read_host_process_memory", script: `head -c 16 /proc/` + hostPID + `/mem`,
			reasons: []string{"No such file or directory"}, host: alive},
		// PID 1 is the wall builder; it holds the setup socket, so it must be out of reach
		// too.
		{name: "ptrace_init", script: `strace -p 1 -e trace=none`, reasons: []string{"Operation not permitted"}},
		{name: "read_init_memory", script: `head -c 16 /proc/1/mem`, reasons: []string{"Permission denied"}},
		{name: "mount", script: `mount -t tmpfs none "$P"`,
			reasons: []string{"permission denied", "must be superuser", "Operation not permitted"}},
		{name: "remount_readonly_writable", script: `mount -o remount,bind,rw "$RO"`,
			reasons: []string{"permission denied", "must be superuser", "Operation not permitted"}},
		// Refused at the unshare itself, by the seccomp filter; a user namespace made and
		// then limited by Landlock would not do.
		{name: "nested_user_namespace", script: `unshare -Urm sh -c 'mount -t tmpfs none "$RO" && echo mounted'`,
			reasons: []string{"unshare failed: Operation not permitted"}},
		// clone3's flags are out of a filter's sight, so it must not exist at all (libc then
		// uses clone, whose flags are checked); the kernel itself would say EINVAL here.
		{name: "clone3", script: `perl -e 'syscall(` + itoa(unix.SYS_CLONE3) + `, 0, 0) == -1 and die "clone3: $!\n"'`,
			reasons: []string{"clone3: Function not implemented"}},
		// Keyrings are not namespaced: the session keyring is inherited, and a root
		// sandbox without a user namespace would share root's user keyring.
		{name: "kernel_keyring", script: `perl -e 'syscall(` + itoa(unix.SYS_KEYCTL) + `, 0, -3, 0) == -1 and die "keyctl: $!\n"; print "read the session keyring\n"'`,
			reasons: []string{"keyctl: Operation not permitted"}},
		{name: "mknod", script: `mknod "$P/null" c 1 3`, reasons: []string{"Operation not permitted"},
			host: absent(filepath.Join(w.project, "null"))},
	})
}

// pidAlive: pid exists and is not a zombie (a killed child stays one until waited for).
func pidAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// listener records whether anything ever connected to it.
type listener struct {
	addr  string
	hits  atomic.Int32
	close func()
}

func tcpListener(t *testing.T, network, addr string) *listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	must(t, err)
	l := &listener{addr: ln.Addr().String(), close: func() { ln.Close() }}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.hits.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(l.close)
	return l
}

func udpListener(t *testing.T) *listener {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	must(t, err)
	l := &listener{addr: pc.LocalAddr().String(), close: func() { pc.Close() }}
	go func() {
		buf := make([]byte, 1500)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			l.hits.Add(1)
		}
	}()
	t.Cleanup(l.close)
	return l
}

// untouched checks that nothing reached the listener. The sandbox has ended, so the only
// hit still to come is one in flight (a datagram on loopback, an accept not yet counted).
// That is a check that something does not happen, which no poll can end early: nothing
// marks that a hit will never come. A fixed window, far longer than loopback takes, is the
// only way to give it the time to arrive.
func (l *listener) untouched(t *testing.T) {
	t.Helper()
	time.Sleep(50 * time.Millisecond)
	if n := l.hits.Load(); n != 0 {
		t.Errorf("the host's %s was reached %d times from inside", l.addr, n)
	}
}

// pyConnect tries one connection and prints the errno's text on failure.
const pyConnect = `
import socket, sys
kind, addr = sys.argv[1], sys.argv[2]
try:
    if kind == "tcp":
        h, p = addr.rsplit(":", 1)
        socket.create_connection((h, int(p)), timeout=2).close()
    elif kind == "udp":
        h, p = addr.rsplit(":", 1)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for _ in range(3):
            s.sendto(b"escape", (h, int(p)))
        print("sent into the sandbox loopback")
    else:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(addr.replace("@", "\0", 1))
    print("CONNECTED")
except OSError as e:
    print("ERR", e.strerror)
    sys.exit(1)
`

func TestEscapeNetwork(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.Allowlist, 18080)
	tcp := tcpListener(t, "tcp4", "127.0.0.1:0")
	udp := udpListener(t)
	web := tcpListener(t, "tcp4", "127.0.0.1:0")
	sockDir, err := os.MkdirTemp("/tmp", "openworker-escape-sock-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	unixSock := tcpListener(t, "unix", filepath.Join(sockDir, "host.sock"))
	abstract := tcpListener(t, "unix", fmt.Sprintf("@openworker-escape-%d", time.Now().UnixNano()))
	_, tcpPort, _ := net.SplitHostPort(tcp.addr)
	_, webPort, _ := net.SplitHostPort(web.addr)
	netReasons := []string{"Permission denied", "Connection refused", "Network is unreachable"}
	py := `python3 -c "$PY" `
	escapes := []escape{
		{name: "tcp_host_loopback", script: py + "tcp " + tcp.addr, reasons: netReasons, host: tcp.untouched},
		{name: "udp_host_loopback", script: py + "udp " + udp.addr, allowedToExit0: true,
			reasons: append(netReasons, "sent into the sandbox loopback"), host: udp.untouched},
		{name: "bash_dev_tcp", script: `bash -c 'exec 3<>/dev/tcp/127.0.0.1/` + tcpPort + `'`,
			reasons: netReasons, host: tcp.untouched},
		{name: "host_unix_socket", script: py + "unix " + unixSock.addr,
			reasons: []string{"No such file or directory"}, host: unixSock.untouched},
		{name: "host_abstract_socket", script: py + "unix " + abstract.addr,
			reasons: []string{"Connection refused", "Operation not permitted"}, host: abstract.untouched},
	}
	if _, err := exec.LookPath("curl"); err == nil {
		escapes = append(escapes, escape{name: "curl_noproxy",
			script:  `curl -sS --noproxy '*' --max-time 3 http://127.0.0.1:` + webPort + `/`,
			reasons: []string{"Failed to connect", "Couldn't connect"}, host: web.untouched})
	} else {
		t.Log("curl is absent: curl_noproxy not run")
	}
	for i := range escapes {
		escapes[i].script = "export PY='" + pyConnect + "'\n" + escapes[i].script
	}
	runEscapes(t, w, p, escapes)
}

// Where open mode shares the host's network (no relay), its abstract sockets are in reach
// of connect(2): only Landlock's scope (ABI 6) keeps them out. With the relay, open mode has
// a network of its own, whose abstract sockets are its own: the host's is not there at all.
func TestEscapeAbstractSocketOpenNetwork(t *testing.T) {
	if abi, _ := ll.LandlockGetABIVersion(); abi < 6 {
		t.Skipf("landlock ABI %d has no scopes; in open mode abstract sockets are reachable (documented)", abi)
	}
	w := newWorld(t)
	p := w.policy(t, policy.Open, 0)
	abstract := tcpListener(t, "unix", fmt.Sprintf("@openworker-escape-open-%d", time.Now().UnixNano()))
	runEscapes(t, w, p, []escape{{
		name:    "host_abstract_socket_open_network",
		script:  "export PY='" + pyConnect + "'\n" + `python3 -c "$PY" unix ` + abstract.addr,
		reasons: openAbstractReasons(), host: abstract.untouched,
	}})
}

func openAbstractReasons() []string {
	if relayWanted(policy.Open) {
		return []string{"Connection refused"}
	}
	return []string{"Operation not permitted"}
}

func TestNothingSurvives(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	waitFor := func(t *testing.T, argv ...string) {
		t.Helper()
		tstest.WaitFor(t, 5*time.Second, func() error {
			if len(pidsRunning(argv...)) > 0 {
				return nil
			}
			return fmt.Errorf("%q never started", argv)
		})
	}
	gone := func(t *testing.T, argv ...string) {
		t.Helper()
		if pids := pidsRunning(argv...); len(pids) > 0 {
			t.Errorf("%q survived the session: host PIDs %v", argv, pids)
		}
	}
	t.Run("setsid_and_double_fork_after_kill", func(t *testing.T) {
		s := start(t, w, p, `setsid nohup sleep 987651 >/dev/null 2>&1 &
(setsid sh -c 'nohup sleep 987652 >/dev/null 2>&1 &' &)
sleep 1000`)
		waitFor(t, "sleep", "987651")
		waitFor(t, "sleep", "987652")
		must(t, s.proc.Kill())
		s.wait(t)
		gone(t, "sleep", "987651")
		gone(t, "sleep", "987652")
		gone(t, "sleep", "1000")
	})
	t.Run("orphan_after_runner_exits", func(t *testing.T) {
		out, code := run(t, w, p, `setsid nohup sleep 987653 >/dev/null 2>&1 & echo left-a-sleep`)
		if code != 0 || !strings.Contains(out, "left-a-sleep") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		gone(t, "sleep", "987653")
	})
}

func TestPrivateTmpIsolation(t *testing.T) {
	a, b := newWorld(t), newWorld(t)
	pa, pb := a.policy(t, policy.None, 0), b.policy(t, policy.None, 0)
	sa := start(t, a, pa, `echo a-private > /tmp/a.txt && sleep 1000`)
	tstest.WaitFor(t, 5*time.Second, func() error {
		if !exists(filepath.Join(a.privateTmp, "a.txt")) {
			return errors.New("sandbox a never wrote its tmp file")
		}
		return nil
	})
	out, _ := run(t, b, pb, `cat "$OTHER/a.txt"; echo "read=$?"; ls "$OTHER"; echo "list=$?"
echo b > "$OTHER/b.txt"; echo "write=$?"; cat /tmp/a.txt; echo "own-tmp=$?"`, "OTHER="+a.privateTmp)
	for _, want := range []string{"read=1", "list=2", "write=", "own-tmp=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "write=0") || strings.Contains(out, "a-private") {
		t.Errorf("sandbox b reached a's private tmp:\n%s", out)
	}
	if strings.Count(out, "No such file or directory") < 3 {
		t.Errorf("a's private tmp should not exist inside b:\n%s", out)
	}
	absent(filepath.Join(a.privateTmp, "b.txt"))(t)
	sa.proc.Kill()
	sa.wait(t)
}

// connectProxy is a small stand-in for the core's proxy: it admits CONNECT to one literal
// host:port and refuses everything else the way the product's proxy does.
func connectProxy(t *testing.T, ln net.Listener, allowed string) (refused *atomic.Int32) {
	refused = new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				if req.Method != http.MethodConnect || req.Host != allowed {
					refused.Add(1)
					fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nX-Proxy-Error: blocked-by-allowlist\r\nContent-Length: 0\r\n\r\n")
					return
				}
				up, err := net.Dial("tcp", allowed)
				if err != nil {
					fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
					return
				}
				defer up.Close()
				fmt.Fprintf(c, "HTTP/1.1 200 Connection established\r\n\r\n")
				go io.Copy(up, c)
				io.Copy(c, up)
			}()
		}
	}()
	return refused
}

func TestProxyListenerInside(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is absent")
	}
	origin := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello-from-origin")
	})}
	oln, err := net.Listen("tcp4", "127.0.0.1:0")
	must(t, err)
	go origin.Serve(oln)
	t.Cleanup(func() { origin.Close() })

	w := newWorld(t)
	const port = 18080
	p := w.policy(t, policy.Allowlist, port)
	s := start(t, w, p, fmt.Sprintf(`proxy=http://127.0.0.1:%d
curl -sS -p -x "$proxy" http://%s/; echo " allowed=$?"
curl -sS -p -x "$proxy" http://blocked.invalid/; echo " blocked=$?"
curl -sS --noproxy '*' --max-time 3 http://%s/; echo " direct=$?"`, port, oln.Addr(), oln.Addr()))
	ln := s.proc.ProxyListener()
	if ln == nil {
		t.Fatal("no proxy listener in allowlist mode")
	}
	refused := connectProxy(t, ln, oln.Addr().String())
	out, _ := s.wait(t)
	for _, want := range []string{"hello-from-origin allowed=0", "403", "blocked=56", "direct=7"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	if refused.Load() != 1 {
		t.Errorf("the proxy refused %d requests, want 1 (blocked.invalid)", refused.Load())
	}
	if _, err := ln.Accept(); err == nil {
		t.Error("the listener still accepts after the sandbox ended")
	}
}

// Commands in allowlist and none mode run in a network of their own (made by the builder's
// clone, or joined by it when a root caller made it while the builder started); in open mode,
// in the host's.
func TestNetworkNamespace(t *testing.T) {
	w := newWorld(t)
	host, err := os.Readlink("/proc/self/ns/net")
	must(t, err)
	for _, n := range []policy.Network{policy.Allowlist, policy.None, policy.Open} {
		out, code := run(t, w, w.policy(t, n, 18081), `readlink /proc/self/ns/net`)
		inside := strings.TrimSpace(out)
		if code != 0 || !strings.HasPrefix(inside, "net:[") {
			t.Fatalf("%s: exit %d: %s", n, code, out)
		}
		// Open mode has a network of its own where the relay keeps this machine out.
		if (inside == host) != (n == policy.Open && !relayWanted(n)) {
			t.Errorf("%s mode: the command's network namespace is %s, the host's %s", n, inside, host)
		}
	}
}

func TestNoListenerOutsideAllowlist(t *testing.T) {
	w := newWorld(t)
	for _, n := range []policy.Network{policy.None, policy.Open} {
		s := start(t, w, w.policy(t, n, 0), `true`)
		if s.proc.ProxyListener() != nil {
			t.Errorf("%s mode handed out a proxy listener", n)
		}
		s.wait(t)
	}
}

func TestStartRefusesBadInput(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		mod  func(p *policy.Policy)
		path string
		want string
	}{
		{"no_proxy_port", func(p *policy.Policy) { p.ProxyPort = 0 }, "/bin/sh", "proxy's port"},
		{"relative_runner", func(p *policy.Policy) {}, "sh", "not absolute"},
		{"missing_writable", func(p *policy.Policy) { p.Writable = append(p.Writable, "/nonexistent/openworker") }, "/bin/sh", "find /nonexistent/openworker"},
		{"missing_runner", func(p *policy.Policy) {}, "/nonexistent/runner", "start the runner /nonexistent/runner"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := w.policy(t, policy.Allowlist, 18080)
			tt.mod(p)
			proc, err := (&Provider{}).Start(ctx, p, sandboxSpec(tt.path))
			if err == nil {
				proc.Kill()
				proc.Wait()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
			if pids := childrenRunning(wallArg0); len(pids) > 0 {
				t.Errorf("a refused wall left its builder running: %v", pids)
			}
		})
	}
}

// A writable folder inside a read-only one is bound after the read-only binds are made
// read-only all at once: it stays writable, and its read-only parent and the root do not.
func TestWritableInsideReadOnly(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	data := filepath.Join(filepath.Dir(w.home), "data")
	out := filepath.Join(data, "out")
	must(t, os.MkdirAll(out, 0o755))
	t.Cleanup(func() { os.RemoveAll(data) })
	p.ReadOnly = append(p.ReadOnly, data)
	p.Writable = append(p.Writable, out)
	got, code := run(t, w, p, `echo kept > "`+out+`/new.txt" && cat "`+out+`/new.txt" &&
{ echo x > "`+data+`/escape.txt" || echo parent-refused; } &&
{ mkdir /openworker-escape || echo root-refused; } &&
{ mkdir /dev/openworker-escape || echo dev-refused; }`)
	if code != 0 || !strings.Contains(got, "kept\n") {
		t.Fatalf("the writable folder inside a read-only one could not be written (exit %d):\n%s", code, got)
	}
	for _, want := range []string{"parent-refused", "root-refused", "dev-refused"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %s in:\n%s", want, got)
		}
	}
	if strings.Count(got, "Read-only file system") != 3 {
		t.Errorf("every refusal must be the read-only mount's:\n%s", got)
	}
	absent(filepath.Join(data, "escape.txt"))(t)
	if !exists(filepath.Join(out, "new.txt")) {
		t.Error("the write to the writable folder did not reach the host")
	}
}
