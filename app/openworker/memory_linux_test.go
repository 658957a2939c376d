package main

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The daemon's memory under two attacks a session can make on its proxy, measured from
// outside: 200 tunnels to a fast source that the session never reads, and one response
// head of 300 MiB. It prints the daemon's peak resident set (VmHWM) and the machine's TCP
// socket memory for each. Set OPENWORKER_MEASURE=1 to run it (it moves hundreds of MiB over
// loopback); OPENWORKER_MEASURE_BINARY runs another build of the daemon, for a comparison.

const neverReads = `
import base64, os, socket, sys, time, urllib.parse
p = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
auth = base64.b64encode(("%s:%s" % (p.username, p.password)).encode()).decode()
target, n = sys.argv[1], int(sys.argv[2])
socks = []
for i in range(n):
    s = socket.create_connection((p.hostname, p.port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n" % (target, target, auth)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            break
        head += b
    if head.startswith(b"HTTP/1.1 200"):
        socks.append(s)
print("open", len(socks), flush=True)
sys.stdin.read()
`

const hugeHead = `
import base64, os, socket, sys, urllib.parse
p = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
auth = base64.b64encode(("%s:%s" % (p.username, p.password)).encode()).decode()
target = sys.argv[1]
s = socket.create_connection((p.hostname, p.port))
s.sendall(("GET http://%s/ HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n" % (target, target, auth)).encode())
print(s.makefile("rb").readline().decode().strip(), flush=True)
`

func procStatus(t *testing.T, pid int, key string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, key+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kb >> 10
		}
	}
	return -1
}

// socketMiB is what the kernel holds in the TCP sockets of process pid, received and queued
// to send (ss's skmem r and w), in MiB.
func socketMiB(t *testing.T, pid int) int {
	out, err := exec.Command("ss", "-tmnp").Output()
	if err != nil {
		t.Skipf("ss: %v", err)
	}
	mark, total, mine := "pid="+strconv.Itoa(pid)+",", 0, false
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "skmem:("); ok {
			if mine {
				for _, f := range strings.Split(strings.TrimSuffix(strings.TrimSpace(rest), ")"), ",") {
					if len(f) > 1 && (f[0] == 'r' || f[0] == 'w') && f[1] >= '0' && f[1] <= '9' {
						n, _ := strconv.Atoi(f[1:])
						total += n
					}
				}
			}
			continue
		}
		mine = strings.Contains(l, mark)
	}
	return total >> 20
}

// tcpMemMiB is the kernel's TCP socket memory on this machine, in MiB.
func tcpMemMiB(t *testing.T) int {
	b, _ := os.ReadFile("/proc/net/sockstat")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "TCP:") {
			f := strings.Fields(l)
			for i := range f {
				if f[i] == "mem" && i+1 < len(f) {
					pages, _ := strconv.Atoi(f[i+1])
					return pages * os.Getpagesize() >> 20
				}
			}
		}
	}
	return -1
}

func TestMeasureDaemonMemoryUnderAttack(t *testing.T) {
	if os.Getenv("OPENWORKER_MEASURE") == "" {
		t.Skip("a measurement: set OPENWORKER_MEASURE=1")
	}
	if b := os.Getenv("OPENWORKER_MEASURE_BINARY"); b != "" {
		old := binary
		binary = b
		t.Cleanup(func() { binary = old })
	}
	w := newWorld(t)
	d, stop := w.daemon() // direct sessions: the proxy is the daemon's either way
	t.Cleanup(stop)
	pid := d.Process.Pid
	id, errs, code := w.run("session", "start")
	if code != 0 {
		t.Fatalf("session start: %s", errs)
	}
	id = strings.TrimSpace(id)
	t.Cleanup(func() { w.run("session", "end", id) })

	// A fast source: each connection gets up to 64 MiB, as fast as it is taken.
	fast := tcpServerFor(t, func(c net.Conn) {
		chunk := make([]byte, 1<<20)
		for sent := 0; sent < 64<<20; sent += len(chunk) {
			c.SetWriteDeadline(time.Now().Add(3 * time.Second))
			if _, err := c.Write(chunk); err != nil {
				break
			}
		}
		io.Copy(io.Discard, c)
	})
	// A source whose answer's head is one header of 300 MiB.
	huge := tcpServerFor(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if l, err := br.ReadString('\n'); err != nil || l == "\r\n" {
				break
			}
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Big: ")
		chunk := []byte(strings.Repeat("a", 1<<20))
		for sent := 0; sent < 300<<20; sent += len(chunk) {
			c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
		io.WriteString(c, "\r\nContent-Length: 0\r\n\r\n")
	})
	for _, a := range []string{fast, huge} {
		if _, errs, code := w.run("access", id, "--allow", a); code != 0 {
			t.Fatalf("access --allow %s: %s", a, errs)
		}
	}
	base, baseTCP := procStatus(t, pid, "VmRSS"), tcpMemMiB(t)

	c := w.cmd("session", "exec", id, "--", "python3", "-c", neverReads, fast, "200")
	stdin, _ := c.StdinPipe()
	stdout, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	time.Sleep(5 * time.Second) // the sources fill what the daemon lets them
	hwm, rss, tcp, own := procStatus(t, pid, "VmHWM"), procStatus(t, pid, "VmRSS"), tcpMemMiB(t), socketMiB(t, pid)
	stdin.Close()
	c.Wait()
	t.Logf("200 tunnels never read (%s): daemon RSS %d MiB before, %d MiB during, peak %d MiB; the daemon's sockets hold %d MiB; the machine's TCP memory %d MiB before, %d MiB during",
		strings.TrimSpace(line), base, rss, hwm, own, baseTCP, tcp)

	time.Sleep(2 * time.Second)
	os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0) // resets VmHWM
	base = procStatus(t, pid, "VmRSS")
	out, errs, _ := w.run("session", "exec", id, "--", "python3", "-c", hugeHead, huge)
	t.Logf("a 300 MiB response head (answer %q%s): daemon RSS %d MiB before, peak %d MiB",
		strings.TrimSpace(out), strings.TrimSpace(errs), base, procStatus(t, pid, "VmHWM"))
}

// tcpServerFor serves each connection on loopback with handle; it returns the address.
func tcpServerFor(t *testing.T, handle func(net.Conn)) string {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); handle(c) }()
		}
	}()
	return l.Addr().String()
}
