package linux

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/policy"
)

// Legitimate work keeps working behind the wall.
func TestLegitimateWork(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	tests := []struct {
		name, script string
		want         []string
		needs        string
	}{
		{name: "sh", script: `echo hello from $0`, want: []string{"hello from /bin/sh"}},
		{name: "ls_usr_bin", script: `ls /usr/bin`, want: []string{"\nsh\n"}},
		{name: "git_commit", needs: "git", script: `cd "$P" && git init -q repo && cd repo && echo hi > a.txt &&
git add a.txt && git -c user.name=t -c user.email=t@example.invalid commit -qm first && git log --format=%s`,
			want: []string{"first"}},
		{name: "python3", needs: "python3", script: `python3 -c 'print(6*7)'`, want: []string{"42"}},
		{name: "temp_files", script: `f=$(mktemp) && echo tmpdata > "$f" && cat "$f" && echo "$f" && echo h > "$HOME/h.txt" && cat "$HOME/h.txt"`,
			want: []string{"tmpdata\n/tmp/tmp.", "h\n"}},
		{name: "getent_passwd", script: `getent passwd "$(id -u)"`, want: []string{":" + uidString() + ":"}},
		{name: "read_readonly", script: `cat "$RO/lib.txt"`, want: []string{"vendored"}},
		{name: "dev_null_and_urandom", script: `echo x > /dev/null && head -c 8 /dev/urandom | wc -c`, want: []string{"8"}},
		{name: "proc_is_own", script: `ls /proc | grep -c '^[0-9]'`, want: []string{"\n"}},
		// The read-only /proc is still read, and what goes through /proc/self/fd reaches its
		// descriptor.
		{name: "proc_read_and_dev_stdout", script: `cat /proc/sys/kernel/ostype && echo to-stdout > /dev/stdout && echo to-stderr > /dev/stderr`,
			want: []string{"Linux\n", "to-stdout\n", "to-stderr\n"}},
		// Modes without set-user-ID or set-group-ID are set, kept and restored as before.
		{name: "modes_kept", script: `cd "$P" && touch m && chmod 0750 m && chmod +t m && stat -c %a m &&
mkdir -m 0700 d && stat -c %a d && cp -p m m2 && stat -c %a m2 && install -m 0755 m m3 && stat -c %a m3 &&
mkdir t && echo a > t/x && chmod 0741 t/x && tar -cf t.tar t && rm -r t && tar -xpf t.tar && stat -c %a t/x`,
			want: []string{"1750\n700\n1750\n755\n741\n"}},
		// A folder moved to another folder of the writable tree is renamed, not copied (a
		// copy is what mv falls back to when the kernel says EXDEV).
		{name: "rename_between_folders", script: `cd "$P" && mkdir -p ma/b mc && echo x > ma/b/f && i=$(stat -c %i ma/b) &&
mv ma/b mc/ && test "$(stat -c %i mc/b)" = "$i" && cat mc/b/f && echo same-inode`, want: []string{"x\nsame-inode"}},
		{name: "python_sockets_and_threads", needs: "python3", script: `python3 -c '
import socket, threading
a, b = socket.socketpair(); a.send(b"pair"); print(b.recv(4).decode())
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.close()
t = threading.Thread(target=lambda: print("thread")); t.start(); t.join()'`,
			want: []string{"pair\n", "thread\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needs != "" {
				if _, err := exec.LookPath(tt.needs); err != nil {
					t.Skipf("%s is absent", tt.needs)
				}
			}
			out, code := run(t, w, p, tt.script)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("want %q in:\n%s", want, out)
				}
			}
		})
	}
}

// The root and the folders on the way to a session folder can be listed, as every shell
// prompt and file picker does, and show only what is inside the wall; the person's home on
// that way stays unlistable, so its own entries are never named.
func TestListingOnTheWayShowsOnlyTheWall(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	base := filepath.Dir(w.home)
	out, code := run(t, w, p, `set -e
echo "root: $(ls -A / | tr '\n' ' ')"
echo "var: $(ls -A /var | tr '\n' ' ')"
echo "vartmp: $(ls -A /var/tmp | tr '\n' ' ')"
echo "base: $(ls -A `+base+` | tr '\n' ' ')"
echo "project: $(ls -A "$P" | tr '\n' ' ')"
if ls -A "$H" 2>/dev/null; then echo "home: listed"; else echo "home: refused"; fi
chmod 0755 "$H" 2>/dev/null || chmod 0755 "$H"/. 2>/dev/null || true
if ls -A "$H" 2>/dev/null; then echo "home after chmod: listed"; else echo "home after chmod: refused"; fi
`)
	if code != 0 {
		t.Fatalf("listing on the way failed, exit %d:\n%s", code, out)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok {
			lines[k] = strings.TrimSpace(v)
		}
	}
	// What / may hold: the system paths' first parts, and the wall's own.
	inWall := map[string]bool{"tmp": true, "proc": true, "dev": true, "var": true}
	for _, d := range p.System {
		inWall[strings.Split(strings.TrimPrefix(d, "/"), "/")[0]] = true
	}
	for _, e := range strings.Fields(lines["root"]) {
		if !inWall[e] {
			t.Errorf("ls / shows %q, which is not inside the wall: %s", e, lines["root"])
		}
	}
	if !strings.Contains(" "+lines["root"]+" ", " usr ") {
		t.Errorf("ls / = %q; want the system folders listed", lines["root"])
	}
	if lines["var"] != "tmp" || lines["vartmp"] != filepath.Base(base) || lines["base"] != "home" {
		t.Errorf("the folders on the way show %q, %q, %q; want only the way itself", lines["var"], lines["vartmp"], lines["base"])
	}
	if !strings.Contains(lines["project"], "vendor") {
		t.Errorf("the session folder lists %q", lines["project"])
	}
	if lines["home"] != "refused" || lines["home after chmod"] != "refused" || strings.Contains(out, "notshared") || strings.Contains(out, ".ssh") {
		t.Errorf("the person's home on the way could be listed:\n%s", out)
	}
}
