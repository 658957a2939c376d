// Command agentprobe is run inside a sandbox by the SSH agent tests: it talks to the agent
// at $SSH_AUTH_SOCK directly, as a hostile command would, and looks for a private key's
// bytes in every process's memory it can read.
//
//	agentprobe list                  the offered keys' fingerprints, one a line
//	agentprobe attack                every request that must be refused, one result a line
//	agentprobe scan HEX…             looks for the bytes HEX in every other process's memory
//	                                 and environment (/proc/*/mem, /proc/*/environ), its own
//	                                 environment, and every file under $HOME, $TMPDIR and /tmp
//
// The needles are given in hex so that the command that asks holds none of them.
package main

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

func main() {
	c, err := net.Dial("unix", os.Getenv("SSH_AUTH_SOCK"))
	if err != nil && os.Args[1] != "scan" {
		fmt.Println("dial:", err)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "list":
		keys, err := agent.NewClient(c).List()
		if err != nil {
			fmt.Println("list:", err)
			os.Exit(2)
		}
		for _, k := range keys {
			fmt.Println(ssh.FingerprintSHA256(k), k.Comment)
		}
	case "attack":
		attack(agent.NewClient(c))
	case "scan":
		scan(os.Args[2:])
	}
}

func result(name string, err error) {
	if err != nil {
		fmt.Println(name, "refused")
	} else {
		fmt.Println(name, "SIGNED-OR-DONE")
	}
}

func attack(a agent.ExtendedAgent) {
	keys, _ := a.List()
	if len(keys) == 0 {
		fmt.Println("no keys")
		return
	}
	k := keys[0]
	_, err := a.Sign(k, []byte("arbitrary data to sign"))
	result("arbitrary", err)
	id := make([]byte, 32)
	rand.Read(id)
	login := ssh.Marshal(struct {
		ID      []byte
		Type    byte
		User    string
		Service string
		Method  string
		Signed  bool
		Alg     string
		Key     []byte
	}{id, 50, "root", "ssh-connection", "publickey", true, k.Type(), k.Marshal()})
	_, err = a.Sign(k, login)
	result("login-without-bind", err)
	// A bind to a server of its own making, which no known_hosts names.
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	hk, _ := ssh.NewSignerFromKey(priv)
	sig, _ := hk.Sign(rand.Reader, id)
	bind := ssh.Marshal(struct {
		HostKey, ID, Sig []byte
		Fwd              bool
	}{hk.PublicKey().Marshal(), id, ssh.Marshal(sig), false})
	// The bind itself is taken (it checks out); what matters is that no login is signed.
	a.Extension("session-bind@openssh.com", bind)
	_, err = a.Sign(k, login)
	result("login-own-server", err)
	result("remove-all", a.RemoveAll())
	result("lock", a.Lock([]byte("x")))
	_, priv2, _ := ed25519.GenerateKey(rand.Reader)
	result("add", a.Add(agent.AddedKey{PrivateKey: priv2}))
}

// scan looks for the needles in the memory and environment of every process it can read
// but its own, which holds them.
func scan(hexes []string) {
	var needles [][]byte
	for _, h := range hexes {
		n, err := hex.DecodeString(h)
		if err != nil {
			panic(err)
		}
		needles = append(needles, n)
	}
	has := func(b []byte) bool {
		for _, n := range needles {
			if bytes.Contains(b, n) {
				return true
			}
		}
		return false
	}
	files, found := 0, 0
	for _, kv := range os.Environ() {
		if has([]byte(kv)) {
			fmt.Println("FOUND in the environment")
			found++
		}
	}
	for _, root := range []string{os.Getenv("HOME"), os.Getenv("TMPDIR"), "/tmp"} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			files++
			if b, err := os.ReadFile(p); err == nil && has(b) {
				fmt.Println("FOUND in", p)
				found++
			}
			return nil
		})
	}
	fmt.Printf("scanned %d files\n", files)
	procs, _ := filepath.Glob("/proc/[0-9]*")
	read, seen := 0, 0
	for _, p := range procs {
		if filepath.Base(p) == strconv.Itoa(os.Getpid()) {
			continue
		}
		if env, err := os.ReadFile(p + "/environ"); err == nil && has(env) {
			fmt.Println("FOUND in", p+"/environ")
			found++
		}
		maps, err := os.Open(p + "/maps")
		if err != nil {
			fmt.Printf("not readable: %s: %v\n", p, err)
			continue
		}
		mem, err := os.Open(p + "/mem")
		if err != nil {
			cmd, _ := os.ReadFile(p + "/cmdline")
			fmt.Printf("not readable: %s (%s): %v\n", p, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}), err)
			maps.Close()
			continue
		}
		cmd, _ := os.ReadFile(p + "/cmdline")
		fmt.Printf("reading %s (%s)\n", p, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
		seen++
		sc := bufio.NewScanner(maps)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 2 || f[1][0] != 'r' {
				continue
			}
			lo, hi, _ := strings.Cut(f[0], "-")
			a, _ := strconv.ParseUint(lo, 16, 64)
			b, _ := strconv.ParseUint(hi, 16, 64)
			if b-a > 1<<30 {
				continue
			}
			buf := make([]byte, b-a)
			n, _ := mem.ReadAt(buf, int64(a))
			if n > 0 {
				read += n
			}
			if has(buf[:n]) {
				fmt.Println("FOUND in", p, "memory", f[0], f[len(f)-1])
				found++
			}
		}
		mem.Close()
		maps.Close()
	}
	fmt.Printf("scanned %d processes' memory (%d bytes), found %d\n", seen, read, found)
}
