// Package sshagent is the SSH agent a session's commands use when the person shares their
// SSH login "through OpenWorker" (keys = "agent"): it runs in the core, outside the wall, on
// a Unix socket in the session's private tmp, and signs with the person's keys only for the
// hosts the person allowed on a card. The private keys never enter the sandbox.
//
// It offers only the shared login's keys (read from the person's own agent, or from key files
// without a passphrase), answers only listing and signing, and signs for SSH user
// authentication only on a connection that told it, with OpenSSH's session-bind extension,
// which server it is logged in to: the host key is mapped to the host's names through the
// person's known_hosts, and the person is asked per host and key. Signatures over any other
// data (git's commit signing, SSHSIG) need a card of their own; anything else is refused.
//
// It decides nothing about where a connection may go (the allow list and the proxy do) and
// shows no card itself: Options.Ask is the backend's card.
package sshagent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/openworker/openworker/core/internal/regularfile"
)

// Kinds of question an agent asks the person.
const (
	// Login is a signature that logs in to a server over SSH.
	Login = "login"
	// Signing is a signature over other data: git's commit signing, ssh-keygen -Y sign.
	Signing = "signing"
)

// Question is what the agent asks a person before it signs.
type Question struct {
	Kind string
	// Host is the server's name as the person's known_hosts gives it ("github.com",
	// "[git.example.com]:2222"); Names are all of them. HostKey is the server's key's
	// fingerprint. Empty for Signing.
	Host    string
	Names   []string
	HostKey string
	// Key names the person's key (its file name in ~/.ssh, or the comment their agent gives
	// it); KeyFP is its SHA256 fingerprint.
	Key, KeyFP string
	// Namespace is what a Signing signature is for ("git" for commits and tags).
	Namespace string
	// Command is the command that was running in the sandbox when it asked.
	Command string
}

// Text is the question in the person's words, as a card shows it.
func (q Question) Text() string {
	if q.Kind == Signing {
		what := "sign data for " + fmt.Sprintf("%q", q.Namespace)
		if q.Namespace == "git" {
			what = "sign a git commit or tag"
		}
		return fmt.Sprintf("The coworker wants to %s as you, with SSH key %s (%s)", what, q.Key, q.KeyFP)
	}
	return fmt.Sprintf("The coworker wants to sign in to %s over SSH as you, with key %s (%s)", q.Host, q.Key, q.KeyFP)
}

// Decision is a person's answer, or what stood in for one.
type Decision struct {
	Allowed bool
	// Why says why it was refused, for the audit trail and the command's output: denied on
	// the card, no answer in time, the session ended.
	Why string
}

// Record is one signature or refusal, for the audit trail.
type Record struct {
	Signed bool
	Kind   string // Login, Signing, or "" for a request that is neither
	// Host is the server's name for a Login, the namespace for a Signing.
	Host    string
	KeyFP   string
	Command string
	Reason  string
}

// Options configure an Agent.
type Options struct {
	// Keys are the shared login's keys: nothing else is listed or used.
	Keys []Key
	// Upstream is the person's own agent's socket (their SSH_AUTH_SOCK), for keys it holds;
	// "" when they run none.
	Upstream string
	// KnownHosts are the person's known_hosts files, which name the servers.
	KnownHosts []string
	// Candidates are host:port names a hashed known_hosts entry is tried against (the
	// session's allow list): a hashed name cannot be read back otherwise.
	Candidates func() []string
	// AllowedAlways says whether the settings allow key fp for one of a host's names
	// (Always allow) or, with Signing, for namespace.
	AllowedAlways func(kind string, names []string, fp, namespace string) bool
	// Ask puts the question to the person on a card and waits for the answer (or ctx).
	Ask func(ctx context.Context, q Question) Decision
	// Record is told of every signature and refusal.
	Record func(Record)
	// Command is the command running in the sandbox now.
	Command func() string
	// Said is told a line for the command's output when the agent refused it, so that the
	// person or the agent reading it knows why ssh failed.
	Said func(line string)
}

// Agent serves one session's agent socket.
type Agent struct {
	o Options

	mu sync.Mutex
	// allowed are the answers "Allow for this session": login: host key fp + " " + key fp;
	// signing: "sign " + key fp + " " + namespace.
	allowed map[string]bool
	ls      []net.Listener
	conns   map[net.Conn]bool
	ups     map[net.Conn]bool // connections to the person's agent, signing now
	closed  bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// New returns an agent for o.
func New(o Options) *Agent {
	ctx, cancel := context.WithCancel(context.Background())
	return &Agent{o: o, allowed: map[string]bool{}, conns: map[net.Conn]bool{}, ups: map[net.Conn]bool{}, ctx: ctx, cancel: cancel}
}

// Listen makes the agent's socket at path, reachable by its owner only, and serves it until
// Close.
func (a *Agent) Listen(path string) error {
	// The folder is the session's private tmp (owner-only); the socket's own mode keeps it
	// so even where a platform checks the socket file alone.
	_ = os.Remove(path)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return fmt.Errorf("starting the SSH agent at %s: %w", path, err)
	}
	l.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return fmt.Errorf("starting the SSH agent at %s: %w", path, err)
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		l.Close()
		return errors.New("the SSH agent was closed")
	}
	a.ls = append(a.ls, l)
	a.wg.Add(1)
	a.mu.Unlock()
	go a.serve(l)
	return nil
}

func (a *Agent) serve(l net.Listener) {
	defer a.wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		a.mu.Lock()
		if a.closed {
			a.mu.Unlock()
			c.Close()
			return
		}
		if len(a.conns) >= MaxConns {
			// A command that opens connections without end gets no more of the core's.
			a.mu.Unlock()
			c.Close()
			continue
		}
		a.conns[c] = true
		a.wg.Add(1)
		a.mu.Unlock()
		go func() {
			defer a.wg.Done()
			_ = agent.ServeAgent(&conn{a: a}, &frames{c: c})
			c.Close()
			a.mu.Lock()
			delete(a.conns, c)
			a.mu.Unlock()
		}()
	}
}

// What a command can make the core hold through the agent's socket: MaxConns connections at
// once, each reading one request of at most MaxRequest bytes at a time. ssh holds one
// connection, and its largest request (a signature over a login) is a few KiB.
const (
	MaxConns   = 16
	MaxRequest = 64 << 10
)

// frames is a client connection read one whole request at a time, each checked against
// MaxRequest before anything is held for it: the library's server would make room for up to
// 16 MiB a request as the client's length says.
type frames struct {
	c   net.Conn
	buf []byte
}

func (f *frames) Read(p []byte) (int, error) {
	if len(f.buf) == 0 {
		var hdr [4]byte
		if _, err := io.ReadFull(f.c, hdr[:]); err != nil {
			return 0, err
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n == 0 || n > MaxRequest {
			return 0, fmt.Errorf("an agent request of %d bytes; at most %d are read", n, MaxRequest)
		}
		f.buf = make([]byte, 4+n)
		copy(f.buf, hdr[:])
		if _, err := io.ReadFull(f.c, f.buf[4:]); err != nil {
			return 0, err
		}
	}
	k := copy(p, f.buf)
	f.buf = f.buf[k:]
	return k, nil
}

func (f *frames) Write(p []byte) (int, error) { return f.c.Write(p) }

// Close stops the agent: its socket goes, its connections end, and a card it waits on is
// given up.
func (a *Agent) Close() error {
	a.mu.Lock()
	a.closed = true
	for _, l := range a.ls {
		l.Close()
	}
	for c := range a.conns {
		c.Close()
	}
	for c := range a.ups {
		c.Close()
	}
	a.mu.Unlock()
	a.cancel()
	a.wg.Wait()
	return nil
}

// ErrRefused is what a refused request answers (the protocol carries no text); the reason
// goes to the audit trail and the command's output.
var ErrRefused = errors.New("refused by OpenWorker's SSH agent")

// refuse records a refusal and says it.
func (a *Agent) refuse(kind, host, fp, why string) error {
	cmd := a.command()
	if a.o.Record != nil {
		a.o.Record(Record{Kind: kind, Host: host, KeyFP: fp, Command: cmd, Reason: why})
	}
	if a.o.Said != nil {
		a.o.Said("openworker: the SSH agent refused to sign: " + why + "\n")
	}
	return fmt.Errorf("%w: %s", ErrRefused, why)
}

func (a *Agent) command() string {
	if a.o.Command == nil {
		return ""
	}
	return a.o.Command()
}

// key finds an offered key by its public key.
func (a *Agent) key(pub ssh.PublicKey) (*Key, bool) {
	blob := pub.Marshal()
	for i := range a.o.Keys {
		if string(a.o.Keys[i].Public.Marshal()) == string(blob) {
			return &a.o.Keys[i], true
		}
	}
	return nil, false
}

// decide says whether the person allows q: a session's answer, the settings, or a card.
func (a *Agent) decide(q Question, sessionKey string) Decision {
	a.mu.Lock()
	ok := a.allowed[sessionKey]
	a.mu.Unlock()
	if ok {
		return Decision{Allowed: true}
	}
	if a.o.AllowedAlways != nil && a.o.AllowedAlways(q.Kind, q.Names, q.KeyFP, q.Namespace) {
		return Decision{Allowed: true}
	}
	if a.o.Ask == nil {
		return Decision{Why: "nobody can answer a card here"}
	}
	d := a.o.Ask(a.ctx, q)
	if d.Allowed {
		a.mu.Lock()
		a.allowed[sessionKey] = true
		a.mu.Unlock()
	}
	return d
}

// sign makes the signature with the key's file or through the person's agent.
func (a *Agent) sign(k *Key, data []byte, flags agent.SignatureFlags) (*ssh.Signature, error) {
	if k.signer != nil {
		if as, ok := k.signer.(ssh.AlgorithmSigner); ok && k.Public.Type() == ssh.KeyAlgoRSA {
			switch {
			case flags&agent.SignatureFlagRsaSha512 != 0:
				return as.SignWithAlgorithm(nil, data, ssh.KeyAlgoRSASHA512)
			case flags&agent.SignatureFlagRsaSha256 != 0:
				return as.SignWithAlgorithm(nil, data, ssh.KeyAlgoRSASHA256)
			}
		}
		return k.signer.Sign(nil, data)
	}
	up, err := dialUpstream(a.o.Upstream)
	if err != nil {
		return nil, err
	}
	defer up.Close()
	// Closing the agent closes this too: the person's agent may wait on them (a confirm
	// constraint), and a session's end must not.
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, errors.New("the session ended")
	}
	a.ups[up] = true
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.ups, up)
		a.mu.Unlock()
	}()
	return agent.NewClient(up).SignWithFlags(k.Public, data, flags)
}

func dialUpstream(path string) (net.Conn, error) {
	if path == "" {
		return nil, errors.New("no agent of yours runs (SSH_AUTH_SOCK is not set)")
	}
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("your SSH agent at %s does not answer: %w", path, err)
	}
	return c, nil
}

// conn is one client connection: its session bind, and whether it was used.
type conn struct {
	a *Agent
	// bound is the host key and session the client bound this connection to; used says
	// that a user-authentication signature was made for it.
	boundKey  ssh.PublicKey
	boundID   []byte
	boundUsed bool
}

var _ agent.ExtendedAgent = (*conn)(nil)

// List offers the shared login's keys, and no other.
func (c *conn) List() ([]*agent.Key, error) {
	out := make([]*agent.Key, 0, len(c.a.o.Keys))
	for _, k := range c.a.o.Keys {
		out = append(out, &agent.Key{Format: k.Public.Type(), Blob: k.Public.Marshal(), Comment: k.Name})
	}
	return out, nil
}

func (c *conn) Sign(key ssh.PublicKey, data []byte) (*ssh.Signature, error) {
	return c.SignWithFlags(key, data, 0)
}

func (c *conn) SignWithFlags(pub ssh.PublicKey, data []byte, flags agent.SignatureFlags) (*ssh.Signature, error) {
	a := c.a
	fp := ssh.FingerprintSHA256(pub)
	k, ok := a.key(pub)
	if !ok {
		return nil, a.refuse("", "", fp, "the key "+fp+" is not one of the shared SSH login's keys")
	}
	if ua, err := parseUserAuth(data); err == nil {
		return c.signLogin(k, ua, data, flags)
	}
	if ns, err := parseSSHSig(data); err == nil {
		q := Question{Kind: Signing, Key: k.Name, KeyFP: k.FP(), Namespace: ns, Command: a.command()}
		d := a.decide(q, "sign "+k.FP()+" "+ns)
		if !d.Allowed {
			return nil, a.refuse(Signing, ns, k.FP(), "signing data for "+fmt.Sprintf("%q", ns)+" with "+k.Name+" was not allowed ("+d.Why+")")
		}
		return a.signed(k, data, flags, Signing, ns)
	}
	return nil, a.refuse("", "", k.FP(), "the data to sign is neither an SSH login nor an SSH signature (SSHSIG); OpenWorker's agent signs nothing else")
}

func (a *Agent) signed(k *Key, data []byte, flags agent.SignatureFlags, kind, host string) (*ssh.Signature, error) {
	sig, err := a.sign(k, data, flags)
	if err != nil {
		return nil, a.refuse(kind, host, k.FP(), "signing with "+k.Name+" failed: "+err.Error())
	}
	if a.o.Record != nil {
		a.o.Record(Record{Signed: true, Kind: kind, Host: host, KeyFP: k.FP(), Command: a.command()})
	}
	return sig, nil
}

func (c *conn) signLogin(k *Key, ua userAuth, data []byte, flags agent.SignatureFlags) (*ssh.Signature, error) {
	a := c.a
	switch {
	case c.boundKey == nil:
		return nil, a.refuse(Login, "", k.FP(), "ssh did not say which server it logs in to (session-bind@openssh.com); OpenWorker's agent needs OpenSSH 8.9 or newer inside the sandbox")
	case c.boundUsed:
		return nil, a.refuse(Login, "", k.FP(), "this connection to the agent already signed its one login; each ssh connection signs once")
	case string(ua.sessionID) != string(c.boundID):
		return nil, a.refuse(Login, "", k.FP(), "the login's session is not the one ssh bound the agent to")
	case string(ua.key) != string(k.Public.Marshal()):
		return nil, a.refuse(Login, "", k.FP(), "the login names another key than the one to sign with")
	case ua.hostKey != nil && string(ua.hostKey) != string(c.boundKey.Marshal()):
		return nil, a.refuse(Login, "", k.FP(), "the login names another server than the one ssh bound the agent to")
	}
	names, hashed, revoked := a.hostNames(c.boundKey)
	hostFP := ssh.FingerprintSHA256(c.boundKey)
	var host string
	switch {
	case revoked:
		return nil, a.refuse(Login, hostFP, k.FP(), "the server's host key "+hostFP+" is marked @revoked in your known_hosts")
	case len(names) > 0:
		host = names[0]
	case hashed:
		host = "a server whose name your known_hosts keeps hashed (host key " + hostFP + ")"
	default:
		return nil, a.refuse(Login, hostFP, k.FP(), "the server's host key "+hostFP+" is not in your known_hosts; connect to it once outside the sandbox to check and record it")
	}
	c.boundUsed = true
	q := Question{Kind: Login, Host: host, Names: names, HostKey: hostFP, Key: k.Name, KeyFP: k.FP(), Command: a.command()}
	d := a.decide(q, hostFP+" "+k.FP())
	if !d.Allowed {
		return nil, a.refuse(Login, host, k.FP(), "signing in to "+host+" with "+k.Name+" was not allowed ("+d.Why+")")
	}
	return a.signed(k, data, flags, Login, host)
}

// Extension takes OpenSSH's session-bind; no other extension is answered.
func (c *conn) Extension(typ string, contents []byte) ([]byte, error) {
	if typ != "session-bind@openssh.com" {
		return nil, agent.ErrExtensionUnsupported
	}
	b, err := parseSessionBind(contents)
	if err != nil {
		return nil, c.a.refuse(Login, "", "", "a session-bind that does not check out: "+err.Error())
	}
	if b.forwarding {
		return nil, c.a.refuse(Login, "", "", "agent forwarding is not offered by OpenWorker's agent")
	}
	if c.boundKey != nil {
		return nil, c.a.refuse(Login, "", "", "this connection to the agent is bound to a server already")
	}
	c.boundKey, c.boundID = b.hostKey, b.sessionID
	return nil, nil
}

var errOnlyListSign = errors.New("OpenWorker's SSH agent only lists and signs with the shared login's keys")

func (c *conn) Add(agent.AddedKey) error       { return errOnlyListSign }
func (c *conn) Remove(ssh.PublicKey) error     { return errOnlyListSign }
func (c *conn) RemoveAll() error               { return errOnlyListSign }
func (c *conn) Lock([]byte) error              { return errOnlyListSign }
func (c *conn) Unlock([]byte) error            { return errOnlyListSign }
func (c *conn) Signers() ([]ssh.Signer, error) { return nil, errOnlyListSign }

// hostNames maps a server's host key to its names in the person's known_hosts. hashed says
// a hashed entry holds the key (its name found only among the candidates); revoked that a
// @revoked line names it.
func (a *Agent) hostNames(key ssh.PublicKey) (names []string, hashed, revoked bool) {
	blob := string(key.Marshal())
	for _, f := range a.o.KnownHosts {
		data, err := readKnownHosts(f)
		if err != nil {
			continue
		}
		for len(data) > 0 {
			marker, hs, pub, _, rest, err := ssh.ParseKnownHosts(data)
			if err != nil {
				break
			}
			data = rest
			if string(pub.Marshal()) != blob {
				continue
			}
			switch marker {
			case "revoked":
				return nil, false, true
			case "cert-authority":
				continue
			}
			for _, h := range hs {
				switch {
				case strings.HasPrefix(h, "|"):
					hashed = true
				case strings.ContainsAny(h, "*?!"):
				default:
					if !slices.Contains(names, h) {
						names = append(names, h)
					}
				}
			}
		}
	}
	if hashed && a.o.Candidates != nil {
		for _, c := range a.o.Candidates() {
			if slices.Contains(names, normalize(c)) {
				continue
			}
			if matchesKnownHosts(a.o.KnownHosts, c, key) {
				names = append(names, normalize(c))
			}
		}
	}
	return names, hashed, false
}

// readKnownHosts reads a known_hosts file of at most 4 MiB, never through a symlink swapped
// in at its last component.
func readKnownHosts(path string) ([]byte, error) {
	return regularfile.Read(filepath.Clean(path), 4<<20)
}
