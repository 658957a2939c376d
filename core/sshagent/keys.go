package sshagent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/openworker/openworker/core/internal/regularfile"
)

// Key is one of the shared login's keys.
type Key struct {
	// Name is the key's file name in ~/.ssh ("id_ed25519").
	Name   string
	Public ssh.PublicKey
	// signer signs with the key file; nil: the person's agent holds the key.
	signer ssh.Signer
}

// FP is the key's SHA256 fingerprint, as ssh-keygen -l prints it.
func (k Key) FP() string { return ssh.FingerprintSHA256(k.Public) }

// IsPrivateKey says whether a file's first bytes are a private key's, in any format ssh or
// PuTTY writes: such a file never enters a sandbox that uses the keys through the agent.
func IsPrivateKey(head []byte) bool {
	return bytes.Contains(head, []byte("PRIVATE KEY")) || bytes.Contains(head, []byte("PuTTY-User-Key-File"))
}

// LoadKeys finds the shared login's keys in dir (the person's ~/.ssh): every private key
// file there. A key the person's agent at upstream holds is used through it (a key with a
// passphrase only so); otherwise a key file without a passphrase is read and used here.
// notes say which keys cannot be used and why.
func LoadKeys(dir, upstream string) (keys []Key, notes []string) {
	var held []*agent.Key
	if c, err := dialUpstream(upstream); err == nil {
		held, _ = agent.NewClient(c).List()
		c.Close()
	}
	isHeld := func(pub ssh.PublicKey) bool {
		for _, h := range held {
			if bytes.Equal(h.Blob, pub.Marshal()) {
				return true
			}
		}
		return false
	}
	des, _ := os.ReadDir(dir)
	sort.Slice(des, func(i, j int) bool { return des[i].Name() < des[j].Name() })
	for _, de := range des {
		if !de.Type().IsRegular() || strings.HasSuffix(de.Name(), ".pub") {
			continue
		}
		p := filepath.Join(dir, de.Name())
		data, err := regularfile.Read(p, 1<<20)
		if err != nil || !IsPrivateKey(data[:min(len(data), 4096)]) {
			continue
		}
		k := Key{Name: de.Name()}
		raw, err := ssh.ParseRawPrivateKey(data)
		var missing *ssh.PassphraseMissingError
		switch {
		case err == nil:
			s, serr := ssh.NewSignerFromKey(raw)
			if serr != nil {
				notes = append(notes, fmt.Sprintf("~/.ssh/%s cannot be used: %v", de.Name(), serr))
				continue
			}
			k.Public, k.signer = s.PublicKey(), s
		case errors.As(err, &missing):
			k.Public = missing.PublicKey
		default:
			k.Public = publicBeside(p)
			if k.Public == nil {
				notes = append(notes, fmt.Sprintf("~/.ssh/%s cannot be used: %v", de.Name(), err))
				continue
			}
		}
		if k.Public == nil {
			k.Public = publicBeside(p)
		}
		if k.Public == nil {
			notes = append(notes, fmt.Sprintf("~/.ssh/%s has a passphrase and no %s.pub beside it; add it to your SSH agent (ssh-add) to use it", de.Name(), de.Name()))
			continue
		}
		if isHeld(k.Public) {
			// The person's agent has it: it signs (a hardware key, a confirm constraint of
			// theirs still apply), and the file's copy in memory is not needed.
			k.signer = nil
		} else if k.signer == nil {
			notes = append(notes, fmt.Sprintf("~/.ssh/%s has a passphrase; add it to your SSH agent (ssh-add) to use it in the sandbox", de.Name()))
			continue
		}
		keys = append(keys, k)
	}
	return keys, notes
}

func publicBeside(p string) ssh.PublicKey {
	data, err := regularfile.Read(p+".pub", 64<<10)
	if err != nil {
		return nil
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		return nil
	}
	return pub
}

// normalize is host:port as known_hosts writes it: "github.com", "[host]:2222".
func normalize(hostport string) string { return knownhosts.Normalize(hostport) }

// matchesKnownHosts says whether the known_hosts files give key to hostport, hashed entries
// included.
func matchesKnownHosts(files []string, hostport string, key ssh.PublicKey) bool {
	var existing []string
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			existing = append(existing, f)
		}
	}
	if len(existing) == 0 {
		return false
	}
	cb, err := knownhosts.New(existing...)
	if err != nil {
		return false
	}
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		hostport = net.JoinHostPort(hostport, "22")
	}
	return cb(hostport, &net.TCPAddr{IP: net.IPv4zero, Port: 22}, key) == nil
}

// userAuth is an SSH_MSG_USERAUTH_REQUEST a client asks to have signed (RFC 4252 §7, and
// OpenSSH's publickey-hostbound-v00, which adds the server's host key).
type userAuth struct {
	sessionID, key, hostKey []byte
}

const msgUserAuthRequest = 50

// parseUserAuth reads data as a user-authentication request to sign, or fails.
func parseUserAuth(data []byte) (userAuth, error) {
	r := reader{b: data}
	var ua userAuth
	ua.sessionID = r.str()
	if r.byte() != msgUserAuthRequest {
		return ua, errors.New("not a user-authentication request")
	}
	r.str() // user
	r.str() // service
	method := string(r.str())
	if method != "publickey" && method != "publickey-hostbound-v00@openssh.com" {
		return ua, errors.New("not a public key authentication")
	}
	if r.byte() != 1 {
		return ua, errors.New("not a signed request")
	}
	r.str() // algorithm
	ua.key = r.str()
	if method == "publickey-hostbound-v00@openssh.com" {
		ua.hostKey = r.str()
	}
	if r.err != nil || len(r.b) != 0 || len(ua.sessionID) == 0 {
		return ua, errors.New("not a well-formed user-authentication request")
	}
	return ua, nil
}

// parseSSHSig reads data as what ssh-keygen -Y sign (and git) has signed: the SSHSIG blob of
// PROTOCOL.sshsig §3, and returns its namespace.
func parseSSHSig(data []byte) (string, error) {
	if !bytes.HasPrefix(data, []byte("SSHSIG")) {
		return "", errors.New("not an SSHSIG blob")
	}
	r := reader{b: data[6:]}
	ns := r.str()
	r.str() // reserved
	alg := string(r.str())
	r.str() // the message's hash
	if r.err != nil || len(r.b) != 0 || len(ns) == 0 || (alg != "sha256" && alg != "sha512") {
		return "", errors.New("not a well-formed SSHSIG blob")
	}
	return string(ns), nil
}

type sessionBind struct {
	hostKey    ssh.PublicKey
	sessionID  []byte
	forwarding bool
}

// parseSessionBind reads OpenSSH's session-bind@openssh.com (PROTOCOL.agent §4.7.2) and
// checks that the server's host key signed the session's identifier, as ssh-agent does: a
// client cannot bind a connection to a server it did not exchange keys with.
func parseSessionBind(contents []byte) (sessionBind, error) {
	r := reader{b: contents}
	hk, id, sigBlob := r.str(), r.str(), r.str()
	fwd := r.byte()
	if r.err != nil || len(r.b) != 0 || fwd > 1 || len(id) == 0 {
		return sessionBind{}, errors.New("malformed")
	}
	key, err := ssh.ParsePublicKey(hk)
	if err != nil {
		return sessionBind{}, fmt.Errorf("its host key: %w", err)
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(sigBlob, &sig); err != nil {
		return sessionBind{}, fmt.Errorf("its signature: %w", err)
	}
	if err := key.Verify(id, &sig); err != nil {
		return sessionBind{}, fmt.Errorf("the host key did not sign the session: %w", err)
	}
	return sessionBind{hostKey: key, sessionID: id, forwarding: fwd == 1}, nil
}

// reader reads SSH wire strings and bytes; the first short read sets err.
type reader struct {
	b   []byte
	err error
}

func (r *reader) str() []byte {
	if r.err != nil || len(r.b) < 4 {
		r.err = io.ErrUnexpectedEOF
		return nil
	}
	n := uint32(r.b[0])<<24 | uint32(r.b[1])<<16 | uint32(r.b[2])<<8 | uint32(r.b[3])
	if uint64(n) > uint64(len(r.b)-4) {
		r.err = io.ErrUnexpectedEOF
		return nil
	}
	s := r.b[4 : 4+n]
	r.b = r.b[4+n:]
	return s
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) < 1 {
		r.err = io.ErrUnexpectedEOF
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}
