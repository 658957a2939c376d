package credentials

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/internal/regularfile"
	"github.com/openworker/openworker/core/sshagent"
)

// Limits of one session's copies, all entries together. A folder such as ~/.config/gcloud
// can hold logs and caches far larger than any login; what does not fit is left out and
// said so, never silently cut.
const (
	DefaultMaxBytes = 64 << 20
	DefaultMaxFiles = 4096
)

// Entry is one enabled shared login as a session copies it.
type Entry struct {
	Key   string // what the settings call it: "ssh", "~/.config/tool"
	Name  string // the catalog name, or "" for a file or folder of the person's own
	Path  string // relative to the home folder
	Label string
	// Var is pointed at the copy (its folder with VarFolder).
	Var       string
	VarFolder bool
	Hosts     []hosts.Entry
	// SSHAgent: the ssh login's keys stay outside, used through OpenWorker's agent (keys =
	// "agent"); no private key is copied.
	SSHAgent bool
	// StandIn: the login's secrets stay outside (secrets = "stand-in"); its copy holds a
	// stand-in for each, and Result.StandIns says what each stands for.
	StandIn bool
}

// Entries returns the settings' enabled entries, in file order, as sessions copy them.
func Entries(cs []config.Credential) []Entry {
	var out []Entry
	for _, c := range cs {
		if !c.Enabled {
			continue
		}
		out = append(out, EntryFor(c))
	}
	return out
}

// EntryFor returns what copying c means: a catalog login brings its path, variable and
// hosts; a file or folder of the person's own has its own.
func EntryFor(c config.Credential) Entry {
	if it, ok := Lookup(c.Name); ok && c.Name != "" {
		return Entry{Key: c.Key(), Name: it.Name, Path: it.Path, Label: it.Label, Var: it.Var, VarFolder: it.VarFolder, Hosts: slices.Clone(it.Hosts), SSHAgent: c.SSHAgent(), StandIn: c.StandIn()}
	}
	return Entry{Key: c.Key(), Path: c.Path, Label: c.Label, Var: c.Var, Hosts: slices.Clone(c.Hosts)}
}

// Options say where to copy from and to.
type Options struct {
	// UserHome is the person's real home folder; SandboxHome the session's private home.
	UserHome, SandboxHome string
	// Helper is the openworker binary as the sandbox sees it, which ssh's ProxyCommand runs
	// (with ConnectArg) to reach a server through the session's proxy.
	Helper string
	// MaxBytes and MaxFiles bound the copies; zero means the defaults.
	MaxBytes int64
	MaxFiles int
	// GhToken returns the GitHub CLI's token for a host, as `gh auth token --hostname HOST`
	// prints it outside the sandbox; nil runs the gh found on PATH.
	GhToken func(host string) (string, error)
	// DockerCredential returns the user and secret a Docker credential helper keeps for a
	// registry, as `docker-credential-HELPER get` prints them outside the sandbox; nil runs
	// the helper found on PATH.
	DockerCredential func(helper, server string) (user, secret string, err error)
	// StandInCA returns OpenWorker's certificate authority (PEM), which a stand-in
	// kubectl login's copy names as its clusters' authority; nil: there is none.
	StandInCA func() ([]byte, error)
	// Untrusted are the folders a session has had writable (resolved): nothing in them is
	// copied, as a command could have changed what it holds or where it leads.
	Untrusted []string
	// SSHAgentSocket is where the session serves OpenWorker's SSH agent (in its private
	// tmp), for an ssh entry whose keys stay outside.
	SSHAgentSocket string
	// HTTPSocket is where the session serves plain HTTP for https sites (in its private tmp;
	// see proxy.ServeSocket): a stand-in gh login's copy sends gh's requests there
	// (http_unix_socket), so that gh needs to trust no certificate of OpenWorker's.
	HTTPSocket string
	// Memo, for Survey, keeps what the files looked through for keys came to, so that a
	// list read again looks through only the files that changed. Copy never uses it.
	Memo *ScanMemo
}

// ScanMemo is Survey's memory of the files it looked through for private keys: by path, the
// size and modification time each had and why it stays out ("" for none). It is a display's
// (the person changes ~/.ssh, no sandbox can): what a session gets, Copy decides afresh.
type ScanMemo struct {
	mu sync.Mutex
	m  map[string]scanned
}

type scanned struct {
	size  int64
	mtime time.Time
	why   string
}

// maxMemo bounds a ScanMemo; past it, it starts again empty.
const maxMemo = 4096

func (m *ScanMemo) get(path string, st fs.FileInfo) (string, bool) {
	if m == nil {
		return "", false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.m[path]
	if !ok || s.size != st.Size() || !s.mtime.Equal(st.ModTime()) {
		return "", false
	}
	return s.why, true
}

func (m *ScanMemo) put(path string, st fs.FileInfo, why string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= maxMemo {
		m.m = map[string]scanned{}
	}
	m.m[path] = scanned{size: st.Size(), mtime: st.ModTime(), why: why}
}

// Copied is what became of one entry.
type Copied struct {
	Key   string `json:"key"`
	Found bool   `json:"found"`
	// Copy is where the copy is, inside the sandbox home.
	Copy  string `json:"copy,omitempty"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
	// Secrets is how the login's secrets reached the session: "stand-in" (they stayed
	// outside; the copy holds stand-ins), "copy", or for the ssh login "agent" (its keys
	// stayed outside with OpenWorker's agent).
	Secrets string   `json:"secrets,omitempty"`
	Var     string   `json:"var,omitempty"`
	Hosts   []string `json:"hosts,omitempty"`
	// LeftOut says what was not copied and why; Notes what else the person should know.
	LeftOut []string `json:"left_out,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// Result is what a session's copies came to.
type Result struct {
	Entries []Copied
	// Vars are set in the sandbox's environment: each entry's variable, GIT_SSH_COMMAND.
	Vars map[string]string
	// Hosts are the entries' hosts, for the session's allow list.
	Hosts []hosts.Entry
	// PathFirst are folders (inside the sandbox home) to put first on PATH: the ssh wrapper.
	PathFirst []string
	// SSHAgent is the socket the session must serve OpenWorker's SSH agent on, when the ssh
	// login's keys stay outside; "" otherwise.
	SSHAgent string
	// StandIns are the secrets of the stand-in logins, each with its stand-in and the hosts
	// it may go to. They are the real secrets: kept in OpenWorker's memory, never written
	// anywhere a sandbox reaches, never put in a message.
	StandIns []StandIn `json:"-"`
	// HTTPSocket is Options.HTTPSocket when a copy sends requests there, for the session to
	// serve; "" otherwise.
	HTTPSocket string `json:"-"`
}

// Copy copies every entry into the sandbox home, at the same place relative to the home
// folder, and wires each one up. A login that is missing or partly unreadable is reported in
// its Copied; an error means the sandbox home could not be written, and the session must
// not start on a half-made home.
func Copy(o Options, entries []Entry) (*Result, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.GhToken == nil {
		o.GhToken = ghAuthToken
	}
	if o.DockerCredential == nil {
		o.DockerCredential = dockerCredential
	}
	realHome, err := filepath.EvalSymlinks(o.UserHome)
	if err != nil {
		return nil, fmt.Errorf("finding the home folder for shared logins: %w", err)
	}
	c := &copier{o: o, realHome: realHome}
	res := &Result{Vars: map[string]string{}}
	for _, e := range entries {
		cp, err := c.entry(e, res)
		if err != nil {
			return nil, fmt.Errorf("copying %s into the sandbox home: %w", e.Key, err)
		}
		res.Entries = append(res.Entries, cp)
	}
	// The kubeconfig's EKS clusters get their tokens from the AWS login: bound to it once
	// both are copied.
	for i := range res.Entries {
		if res.Entries[i].Key == "kubectl" && res.Entries[i].Copy != "" {
			c.cur = &res.Entries[i]
			if err := c.eksStandIns(res.Entries[i].Copy, res); err != nil {
				return nil, fmt.Errorf("binding the kubeconfig's EKS clusters to the AWS login: %w", err)
			}
		}
	}
	return res, nil
}

type copier struct {
	o        Options
	realHome string
	bytes    int64
	files    int
	cur      *Copied
	visited  map[string]bool
	// noPrivateKeys leaves every private key file out of the copy (the ssh login used
	// through OpenWorker's agent).
	noPrivateKeys bool
	// survey: nothing is written, nothing run; the entries are only looked through (Survey).
	survey bool
	// standIn: the entry being copied is a stand-in login (see Entry.StandIn).
	standIn bool
}

// Survey says what Copy would make of each entry now, without writing or running anything:
// the files and bytes it would copy, and those it would leave out and why (for the ssh
// login whose keys stay outside, the files that hold a private key, wherever in the file).
// Where the copy wires a login up (ssh's config, gh's token, kubeconfig's paths), the
// survey says nothing of it.
func Survey(o Options, entries []Entry) []Copied {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	realHome, err := filepath.EvalSymlinks(o.UserHome)
	if err != nil {
		return nil
	}
	c := &copier{o: o, realHome: realHome, survey: true}
	var out []Copied
	for _, e := range entries {
		cp, _ := c.entry(e, &Result{Vars: map[string]string{}})
		cp.Copy = ""
		out = append(out, cp)
	}
	return out
}

func (c *copier) entry(e Entry, res *Result) (Copied, error) {
	cp := Copied{Key: e.Key, Secrets: secretsWord(e)}
	c.cur, c.visited, c.standIn = &cp, map[string]bool{}, e.StandIn
	defer func() { c.standIn = false }()
	agentSock := ""
	if e.Name == "ssh" && e.SSHAgent && c.o.SSHAgentSocket != "" {
		agentSock = c.o.SSHAgentSocket
	}
	c.noPrivateKeys = agentSock != "" || c.survey && e.Name == "ssh" && e.SSHAgent
	defer func() { c.noPrivateKeys = false }()
	src := filepath.Join(c.o.UserHome, e.Path)
	dst := filepath.Join(c.o.SandboxHome, e.Path)
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		cp.Notes = append(cp.Notes, "~/"+e.Path+" is not on this machine; nothing was copied")
		return cp, nil
	}
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		c.leftOut(src, "cannot be followed: "+reason(err))
		return cp, nil
	}
	// A login reached through a symlink (dotfiles) is followed while it stays in the home
	// folder: a link planted to reach further would otherwise copy anything the person
	// can read.
	if !within(c.realHome, real) {
		c.leftOut(src, "leads out of the home folder, to "+real+"; not followed")
		return cp, nil
	}
	if c.untrusted(src) || c.untrusted(real) {
		c.leftOut(src, untrustedWhy+" (sessions with that folder reach it there already)")
		return cp, nil
	}
	st, err := os.Stat(real)
	if err != nil {
		c.leftOut(src, reason(err))
		return cp, nil
	}
	cp.Found = true
	if !c.survey {
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return cp, err
		}
	}
	switch {
	case st.IsDir():
		if err := c.dir(real, dst, real); err != nil {
			return cp, err
		}
	case st.Mode().IsRegular():
		if err := c.file(real, dst, src); err != nil {
			return cp, err
		}
	default:
		c.leftOut(src, "is not a regular file or folder")
		return cp, nil
	}
	cp.Copy = dst
	switch {
	case c.survey:
		// Nothing is wired up, nor a token asked for.
	case e.Name == "ssh":
		if err := c.wireSSH(dst, res, agentSock); err != nil {
			return cp, err
		}
	case e.Name == "gh":
		if err := c.ghTokens(dst); err != nil {
			return cp, err
		}
	case e.Name == "kubectl":
		servers, err := c.kubeconfig(src, dst)
		if err != nil {
			return cp, err
		}
		e.Hosts = append(e.Hosts, servers...)
	case e.Name == "docker" && !e.StandIn:
		if err := c.dockerConfig(dst); err != nil {
			return cp, err
		}
	}
	if e.StandIn && !c.survey {
		before := len(res.StandIns)
		bound, err := c.makeStandIns(e, src, dst, res)
		var refused errStandIn
		if errors.As(err, &refused) {
			// What could hold a secret is gone; the session has none of this login.
			res.StandIns = res.StandIns[:before]
			c.leftOut(src, "was not given to the session: "+refused.why)
			cp.Copy, cp.Files, cp.Bytes = "", 0, 0
			return cp, nil
		}
		if err != nil {
			return cp, err
		}
		for _, h := range bound {
			if !slices.Contains(e.Hosts, h) {
				e.Hosts = append(e.Hosts, h)
			}
		}
		if n := len(res.StandIns) - before; n > 0 {
			var to []string
			for _, h := range bound {
				to = append(to, h.String())
			}
			cp.Notes = append(cp.Notes, fmt.Sprintf("the secrets stay outside: the copy holds %d stand-in(s), which OpenWorker replaces with the real ones on requests to %s and nowhere else", n, strings.Join(to, ", ")))
		} else {
			cp.Notes = append(cp.Notes, "the copy held no secret to stand in for")
		}
	}
	if e.Var != "" {
		cp.Var = e.Var
		res.Vars[e.Var] = dst
		if e.VarFolder {
			res.Vars[e.Var] = filepath.Dir(dst)
		}
	}
	for _, h := range e.Hosts {
		cp.Hosts = append(cp.Hosts, h.String())
		if !slices.Contains(res.Hosts, h) {
			res.Hosts = append(res.Hosts, h)
		}
	}
	return cp, nil
}

// secretsWord is how an entry's secrets reach a session, as Copied.Secrets says it.
func secretsWord(e Entry) string {
	switch {
	case e.StandIn:
		return "stand-in"
	case e.Name == "ssh" && e.SSHAgent:
		return "agent"
	}
	return "copy"
}

// dir copies folder src (a real path inside root) to dst.
func (c *copier) dir(src, dst, root string) error {
	if c.visited[src] {
		c.leftOut(src, "is a folder already copied (a symlink loops back to it); not copied twice")
		return nil
	}
	c.visited[src] = true
	if !c.survey {
		if err := os.Mkdir(dst, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	des, err := os.ReadDir(src)
	if err != nil {
		c.leftOut(src, "cannot be listed: "+reason(err))
		return nil
	}
	sort.Slice(des, func(i, j int) bool { return des[i].Name() < des[j].Name() })
	for _, de := range des {
		p, q := filepath.Join(src, de.Name()), filepath.Join(dst, de.Name())
		st, err := os.Lstat(p)
		if err != nil {
			c.leftOut(p, reason(err))
			continue
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			t, err := filepath.EvalSymlinks(p)
			if err != nil {
				c.leftOut(p, "is a symlink that leads nowhere; not followed")
				continue
			}
			if !within(root, t) {
				c.leftOut(p, "is a symlink to "+t+", outside "+c.show(root)+"; not followed")
				continue
			}
			if st, err = os.Stat(t); err != nil {
				c.leftOut(p, reason(err))
				continue
			}
			if st.IsDir() && c.visited[t] {
				c.leftOut(p, "is a symlink to a folder already copied; not followed")
				continue
			}
			p = t
		}
		if c.untrusted(p) {
			c.leftOut(filepath.Join(src, de.Name()), untrustedWhy)
			continue
		}
		switch {
		case st.IsDir():
			if err := c.dir(p, q, root); err != nil {
				return err
			}
		case st.Mode().IsRegular():
			if err := c.file(p, q, filepath.Join(src, de.Name())); err != nil {
				return err
			}
		default:
			c.leftOut(filepath.Join(src, de.Name()), "is "+regularfile.Kind(st.Mode())+", not a regular file")
		}
	}
	return nil
}

// file copies regular file src to dst, owner-only. shown is the path the person knows.
// The original is opened read-only, never through a symlink at its last component, and
// never blocking on a FIFO swapped in; only as many bytes as it had when opened are copied.
func (c *copier) file(src, dst, shown string) error {
	if c.files >= c.o.MaxFiles {
		c.leftOut(shown, fmt.Sprintf("was not copied: the copies are limited to %d files in all", c.o.MaxFiles))
		return nil
	}
	f, err := regularfile.Open(src)
	if err != nil {
		c.leftOut(shown, reason(err))
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		c.leftOut(shown, reason(err))
		return nil
	}
	if c.bytes+st.Size() > c.o.MaxBytes {
		c.leftOut(shown, fmt.Sprintf("was not copied: it is %d bytes, and the copies are limited to %d bytes in all", st.Size(), c.o.MaxBytes))
		return nil
	}
	if c.noPrivateKeys {
		// The whole file is looked through before any of it is copied: a key after a
		// certificate chain is a key too.
		why, seen := "", false
		if c.survey {
			why, seen = c.o.Memo.get(src, st)
		}
		var err error
		if !seen {
			why, err = sshagent.ScanKeyFile(io.LimitReader(f, st.Size()))
			if err == nil && c.survey {
				c.o.Memo.put(src, st, why)
			}
		}
		switch {
		case err != nil:
			c.leftOut(shown, "could not be read through for private keys ("+reason(err)+"); it stays outside")
			return nil
		case why != "":
			c.leftOut(shown, why+"; it stays outside (the keys of ~/.ssh are used through OpenWorker's SSH agent)")
			return nil
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			c.leftOut(shown, reason(err))
			return nil
		}
	}
	if c.survey {
		c.files++
		c.bytes += st.Size()
		c.cur.Files++
		c.cur.Bytes += st.Size()
		return nil
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if errors.Is(err, fs.ErrExist) {
		c.leftOut(shown, "was already copied by another entry")
		return nil
	}
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(f, st.Size()))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
		return fmt.Errorf("copying %s: %w", c.show(shown), err)
	}
	c.files++
	c.bytes += n
	c.cur.Files++
	c.cur.Bytes += n
	return nil
}

// writeCopy replaces a copy's text (a rewritten kubeconfig, hosts.yml), owner-only.
func writeCopy(path string, data []byte) error {
	tmp := path + ".openworker-new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// untrustedWhy says why nothing in a folder a session has had writable is copied: a planted
// symlink there, or one swapped in while the copy runs, would copy a login the person did
// not share under the name of one they did.
const untrustedWhy = "is in a folder a session has had writable: a command could have changed it or where it leads; not copied"

func (c *copier) untrusted(p string) bool {
	for _, u := range c.o.Untrusted {
		if within(u, p) {
			return true
		}
	}
	return false
}

func (c *copier) leftOut(path, why string) {
	c.cur.LeftOut = append(c.cur.LeftOut, c.show(path)+" "+why)
}

// show is a path as the person knows it: under ~ when it is in the home folder.
func (c *copier) show(p string) string {
	for _, h := range []string{c.realHome, c.o.UserHome} {
		if within(h, p) {
			rel, _ := filepath.Rel(h, p)
			return "~/" + filepath.ToSlash(rel)
		}
	}
	return p
}

func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
