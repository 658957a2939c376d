package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/openworker/openworker/core/hosts"
	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// The setting keys, exactly as written in config.toml.
const (
	KeyProvider       = "sandbox_provider"
	KeyNetworkProfile = "sandbox_network_profile"
	KeyNetworkHosts   = "sandbox_network_hosts"
	KeyToolchains     = "sandbox_toolchains"
	KeyApprovals      = "sandbox_approvals"
	KeyCredentials    = "sandbox_credentials"
	KeyGitMetadata    = "sandbox_git_metadata"
	KeyMaxCaches      = "sandbox_max_caches"
	KeyHostCaches     = "sandbox_host_caches"
)

const settingsList = "sandbox_provider, sandbox_network_profile, sandbox_network_hosts, " +
	"sandbox_toolchains, sandbox_approvals, sandbox_git_metadata, sandbox_max_caches, sandbox_host_caches, the limits (sandbox_max_processes, sandbox_max_memory, " +
	"sandbox_cpu_weight, sandbox_max_tmp, sandbox_max_proxy_connections, sandbox_max_proxy_connections_total) " +
	"and [[sandbox_credentials]]"

// Parse decodes and validates a settings file's contents for the OS goos. file names the file
// in problems. It returns either settings or every problem it found, never both: settings are
// only handed out once the whole file is valid.
func Parse(file string, data []byte, goos string) (*Settings, []Problem) {
	s, _, problems := parseDocument(file, data, goos)
	return s, problems
}

// span is a byte range [start, end) of the file.
type span struct{ start, end int }

// valueIndex is where one key/value sits in the file, so write-back can change just the value.
type valueIndex struct {
	key     span
	value   span
	kind    unstable.Kind
	elems   []elemIndex // for a list: its elements, comments left out
	lineEnd int         // just past the newline that ends the key/value
}

type elemIndex struct {
	span
	kind unstable.Kind
	text string // a string element's value
}

// credIndex is one [[sandbox_credentials]] entry in the file.
type credIndex struct {
	header span
	keys   map[string]*valueIndex
	cred   Credential
}

// document is a parsed, valid settings file with the places of its values.
type document struct {
	data []byte
	top  map[string]*valueIndex
	// topInsert is where a new top-level key/value line goes: after the last top-level one,
	// or before the first table (and the comments directly above it), or at the end.
	topInsert int
	// topBeforeTable is set when topInsert is right before a table, which then needs a
	// blank line to stay apart from the settings.
	topBeforeTable bool
	creds          []*credIndex
}

// decoder walks the parser's expressions, building Settings and the document index, and
// collecting problems with their positions.
type decoder struct {
	file     string
	data     []byte
	goos     string
	problems []Problem
	settings *Settings
	doc      *document
	seenCred map[string]int // credential key → line of its first entry
}

func parseDocument(file string, data []byte, goos string) (*Settings, *document, []Problem) {
	d := &decoder{
		file:     file,
		data:     data,
		goos:     goos,
		settings: Default(),
		doc:      &document{data: data, top: map[string]*valueIndex{}, topInsert: -1},
		seenCred: map[string]int{},
	}
	// go-toml's decoder knows all of TOML's rules (duplicate keys, redefined tables) that the
	// expression parser below does not check; a file it rejects is not looked at further.
	var whole map[string]any
	if err := toml.NewDecoder(bytes.NewReader(data)).Decode(&whole); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			msg := strings.TrimPrefix(de.Error(), "toml: ")
			if l, c, ok := unclosedList(data, line, col); ok {
				// TOML finds out at the next setting; the person looks where the list starts.
				msg = fmt.Sprintf("the list that starts here is not closed: a ']' is missing before line %d", line)
				line, col = l, c
			}
			d.problems = append(d.problems, Problem{File: file, Line: line, Col: col, Msg: "not valid TOML: " + msg})
		} else {
			d.problems = append(d.problems, Problem{File: file, Msg: "not valid TOML: " + err.Error()})
		}
		return nil, nil, d.problems
	}
	d.walk()
	if len(d.problems) > 0 {
		// Entries are checked when they end, so put problems back in file order.
		slices.SortStableFunc(d.problems, func(a, b Problem) int {
			return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
		})
		return nil, nil, d.problems
	}
	return d.settings, d.doc, nil
}

func (d *decoder) walk() {
	var p unstable.Parser
	p.Reset(d.data)
	const (
		inTop = iota
		inCredential
		inUnknown
	)
	section := inTop
	var cur *credIndex
	lastTopEnd, firstHeader := -1, -1
	finish := func() {
		if cur != nil {
			d.finishCredential(cur)
			cur = nil
		}
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.KeyValue:
			vi, key := d.index(e)
			switch section {
			case inTop:
				d.doc.top[key] = vi
				lastTopEnd = vi.lineEnd
				d.topKV(e.Value(), vi, key)
			case inCredential:
				cur.keys[key] = vi
				d.credentialKV(cur, e.Value(), vi, key)
			}
		case unstable.Table, unstable.ArrayTable:
			finish()
			keySpan, key := d.keyOf(e.Key())
			header := span{d.headerStart(keySpan.start), keySpan.end}
			if firstHeader < 0 {
				firstHeader = header.start
			}
			switch {
			case e.Kind == unstable.ArrayTable && key == KeyCredentials:
				section = inCredential
				cur = &credIndex{header: header, keys: map[string]*valueIndex{}}
			case key == KeyCredentials:
				section = inUnknown
				d.problem(header.start, "sandbox_credentials is a list of entries; write each entry under its own [[sandbox_credentials]] line")
			default:
				section = inUnknown
				d.problem(keySpan.start, "unknown table %q; the only table is [[sandbox_credentials]], and the other settings are top-level keys", key)
			}
		}
	}
	finish()
	if err := p.Error(); err != nil {
		// The strict decoder above accepted the file, so this is not expected; still refuse.
		d.problems = append(d.problems, Problem{File: d.file, Msg: "not valid TOML: " + err.Error()})
	}
	switch {
	case lastTopEnd >= 0:
		d.doc.topInsert = lastTopEnd
	case firstHeader >= 0:
		d.doc.topInsert = commentsAbove(d.data, firstHeader)
		d.doc.topBeforeTable = true
	default:
		d.doc.topInsert = len(d.data)
	}
}

// index records where a key/value sits.
func (d *decoder) index(kv *unstable.Node) (*valueIndex, string) {
	keySpan, key := d.keyOf(kv.Key())
	v := kv.Value()
	vi := &valueIndex{key: keySpan, kind: v.Kind}
	end := int(kv.Raw.Offset + kv.Raw.Length)
	if v.Kind == unstable.Array || v.Kind == unstable.InlineTable {
		// Lists carry no range of their own: the value runs from after "=" to the end of the
		// key/value.
		i := keySpan.end
		for i < end && (d.data[i] == ' ' || d.data[i] == '\t' || d.data[i] == '=') {
			i++
		}
		vi.value = span{i, end}
	} else {
		vi.value = span{int(v.Raw.Offset), int(v.Raw.Offset + v.Raw.Length)}
	}
	if v.Kind == unstable.Array {
		it := v.Children()
		for it.Next() {
			n := it.Node()
			if n.Kind == unstable.Comment {
				continue
			}
			el := elemIndex{kind: n.Kind, span: span{vi.value.start, vi.value.start}}
			if n.Kind != unstable.Array && n.Kind != unstable.InlineTable {
				el.span = span{int(n.Raw.Offset), int(n.Raw.Offset + n.Raw.Length)}
			}
			if n.Kind == unstable.String {
				el.text = string(n.Data)
			}
			vi.elems = append(vi.elems, el)
		}
	}
	vi.lineEnd = lineEnd(d.data, end)
	return vi, key
}

func (d *decoder) keyOf(it unstable.Iterator) (span, string) {
	var parts []string
	s := span{-1, -1}
	for it.Next() {
		n := it.Node()
		if s.start < 0 {
			s.start = int(n.Raw.Offset)
		}
		s.end = int(n.Raw.Offset + n.Raw.Length)
		parts = append(parts, string(n.Data))
	}
	return s, strings.Join(parts, ".")
}

// headerStart finds the "[[" or "[" that opens a table header whose key starts at keyStart.
func (d *decoder) headerStart(keyStart int) int {
	i := keyStart
	for i > 0 && (d.data[i-1] == ' ' || d.data[i-1] == '\t' || d.data[i-1] == '[') {
		i--
	}
	return i
}

func (d *decoder) problem(offset int, format string, args ...any) {
	line, col := position(d.data, offset)
	d.problems = append(d.problems, Problem{File: d.file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
}

func position(data []byte, offset int) (line, col int) {
	line = 1 + bytes.Count(data[:offset], []byte("\n"))
	return line, offset - (bytes.LastIndexByte(data[:offset], '\n') + 1) + 1
}

func lineEnd(data []byte, offset int) int {
	if i := bytes.IndexByte(data[offset:], '\n'); i >= 0 {
		return offset + i + 1
	}
	return len(data)
}

func lineStart(data []byte, offset int) int {
	return bytes.LastIndexByte(data[:offset], '\n') + 1
}

// commentsAbove returns the start of the run of comment lines directly above the line at
// offset, or that line's start: a key added before a table must not split the table from
// the comment that describes it.
func commentsAbove(data []byte, offset int) int {
	start := lineStart(data, offset)
	for start > 0 {
		prev := lineStart(data, start-1)
		if !bytes.HasPrefix(bytes.TrimLeft(data[prev:start], " \t"), []byte("#")) {
			break
		}
		start = prev
	}
	return start
}

func kindName(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "a string"
	case unstable.Bool:
		return "true or false"
	case unstable.Integer, unstable.Float:
		return "a number"
	case unstable.Array:
		return "a list"
	case unstable.InlineTable:
		return "a table"
	default:
		return "a date or time"
	}
}

// str checks that a value is a string and returns it.
func (d *decoder) str(v *unstable.Node, vi *valueIndex, key, example string) (string, bool) {
	if v.Kind != unstable.String {
		d.problem(vi.value.start, "%s must be a string such as %s, not %s", key, example, kindName(v.Kind))
		return "", false
	}
	return string(v.Data), true
}

// strList checks that a value is a list, reports elements that are not strings, and returns
// the string elements with their positions.
func (d *decoder) strList(v *unstable.Node, vi *valueIndex, key, example string) ([]elemIndex, bool) {
	if v.Kind != unstable.Array {
		d.problem(vi.value.start, "%s must be a list such as [%s], not %s", key, example, kindName(v.Kind))
		return nil, false
	}
	var out []elemIndex
	for _, el := range vi.elems {
		if el.kind != unstable.String {
			d.problem(el.start, "%s entries must be strings such as %s, not %s", key, example, kindName(el.kind))
			continue
		}
		out = append(out, el)
	}
	return out, true
}

func (d *decoder) topKV(v *unstable.Node, vi *valueIndex, key string) {
	s := d.settings
	switch key {
	case KeyProvider:
		if p, ok := d.str(v, vi, key, `"direct"`); ok {
			if msg := providerProblem(p, d.goos); msg != "" {
				d.problem(vi.value.start, "%s", msg)
			} else {
				s.Provider = p
			}
		}
	case KeyNetworkProfile:
		if p, ok := d.str(v, vi, key, `"allowlist"`); ok {
			if p != NetworkAllowlist && p != NetworkOpen {
				d.problem(vi.value.start, `%s %q is not a network profile; use "allowlist" (only the sites listed) or "open" (any site)`, key, p)
			} else {
				s.NetworkProfile = p
			}
		}
	case KeyApprovals:
		if p, ok := d.str(v, vi, key, `"ask"`); ok {
			if p != ApprovalsAsk && p != ApprovalsFullAccess {
				d.problem(vi.value.start, `%s %q is not an approvals mode; use "ask" or "full-access"`, key, p)
			} else {
				s.Approvals = p
			}
		}
	case KeyGitMetadata:
		if p, ok := d.str(v, vi, key, `"protected"`); ok {
			if p != GitMetadataProtected && p != GitMetadataWritable {
				d.problem(vi.value.start, `%s %q is not a choice; use "protected" (repository hooks and config stay read-only inside) or "writable"`, key, p)
			} else {
				s.GitMetadata = p
			}
		}
	case KeyMaxCaches:
		d.diskSize(v, vi, key, &s.MaxCaches)
	case KeyHostCaches:
		if p, ok := d.str(v, vi, key, `"read-only"`); ok {
			if p != HostCachesReadOnly && p != HostCachesOff {
				d.problem(vi.value.start, `%s %q is not a choice; use "read-only" (sessions read the packages your own caches hold, never writing them) or "off"`, key, p)
			} else {
				s.HostCaches = p
			}
		}
	case KeyNetworkHosts:
		elems, ok := d.strList(v, vi, key, `"github.com:443"`)
		if !ok {
			return
		}
		for _, el := range elems {
			e, err := hosts.Parse(el.text)
			if err != nil {
				d.problem(el.start, "%s: %v", key, err)
				continue
			}
			s.NetworkHosts = append(s.NetworkHosts, e)
			s.NetworkHostsRaw = append(s.NetworkHostsRaw, el.text)
		}
	case KeyToolchains:
		elems, ok := d.strList(v, vi, key, `".nvm"`)
		if !ok {
			return
		}
		for _, el := range elems {
			t, err := toolchainPath(el.text, d.goos)
			if err != nil {
				d.problem(el.start, "%s: %q %v", key, el.text, err)
				continue
			}
			if !slices.Contains(s.Toolchains, t) {
				s.Toolchains = append(s.Toolchains, t)
			}
		}
	case KeyCredentials:
		d.problem(vi.key.start, "sandbox_credentials is a list of entries; write each entry under its own [[sandbox_credentials]] line")
	default:
		if !d.limitKV(v, vi, key) {
			d.problem(vi.key.start, "unknown setting %q; the settings are %s", key, settingsList)
		}
	}
}

// providerProblem says what is wrong with provider p on goos, or "" when it can be used.
func providerProblem(p, goos string) string {
	native := nativeProvider(goos)
	use := `use "direct"`
	if native != "" {
		use = fmt.Sprintf(`use %q or "direct"`, native)
	}
	switch {
	case p == ProviderDirect || p == native:
		return ""
	case p == ProviderSeatbelt:
		return fmt.Sprintf(`sandbox_provider "seatbelt" is the macOS sandbox and does not exist on %s; %s`, osName(goos), use)
	case p == ProviderLinux:
		return fmt.Sprintf(`sandbox_provider "linux" is the Linux sandbox and does not exist on %s; %s`, osName(goos), use)
	}
	return fmt.Sprintf("sandbox_provider %q is not a provider; %s", p, use)
}

// nativeProvider is the sandbox that exists on goos, or "" where there is none.
func nativeProvider(goos string) string {
	switch goos {
	case "darwin":
		return ProviderSeatbelt
	case "linux":
		return ProviderLinux
	}
	return ""
}

func osName(goos string) string {
	switch goos {
	case "darwin":
		return "macOS"
	case "linux":
		return "Linux"
	}
	return goos
}

// homePath checks a path written relative to the home folder ("~/x" or "x") and returns it
// cleaned, without "~/". Absolute paths are refused: these settings name things under the
// home folder only, and the same file must mean the same on any account.
func homePath(s string) (string, error) {
	switch {
	case s == "":
		return "", errors.New("is empty; write a folder under your home folder, such as \".local/share/fnm\"")
	case strings.ContainsRune(s, 0):
		return "", errors.New("contains a NUL byte")
	case s == "~" || s == "~/":
		return "", errors.New("is the whole home folder; name a folder inside it")
	case strings.HasPrefix(s, "~/"):
		s = s[2:]
	case strings.HasPrefix(s, "~"):
		return "", errors.New("names another user's home folder; write a path under your own, such as \"~/tools/x\"")
	case strings.HasPrefix(s, "/"):
		return "", errors.New("is an absolute path; write it relative to your home folder, such as \"~/tools/x\"")
	}
	clean := path.Clean(s)
	switch {
	case clean == ".":
		return "", errors.New("is the whole home folder; name a folder inside it")
	case clean == ".." || strings.HasPrefix(clean, "../"):
		return "", errors.New("leaves the home folder; name a folder inside it")
	}
	return clean, nil
}

// loginPaths are places under the home folder that hold logins. A
// toolchain folder that is, holds or sits inside one would hand its secrets to every command;
// those are shared one at a time, on purpose, with [[sandbox_credentials]].
func loginPaths() []string {
	return []string{
		".ssh", ".aws", ".config/gh", ".kube", ".npmrc", ".docker", ".config/gcloud",
		".terraform.d", ".gnupg", ".netrc", ".git-credentials", ".password-store", "Library/Keychains",
	}
}

func toolchainPath(s, goos string) (string, error) {
	if slices.Contains(KnownToolchains(), s) {
		return s, nil
	}
	clean, err := homePath(s)
	if err != nil {
		return "", err
	}
	for _, own := range appHomePaths(goos) {
		if overlaps(clean, own) {
			return "", fmt.Errorf("would expose ~/%s, OpenWorker's own state, which no session may reach", own)
		}
	}
	for _, secret := range loginPaths() {
		if overlaps(clean, secret) {
			return "", fmt.Errorf("would expose ~/%s, which holds logins; share a login on purpose with [[sandbox_credentials]]", secret)
		}
	}
	return clean, nil
}

// overlaps says whether home-relative paths a and b are the same, or one contains the other.
func overlaps(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

func (d *decoder) credentialKV(c *credIndex, v *unstable.Node, vi *valueIndex, key string) {
	switch key {
	case "name":
		if n, ok := d.str(v, vi, key, `"ssh"`); ok {
			if !slices.Contains(CatalogNames(), n) {
				d.problem(vi.value.start, "sandbox_credentials: %q is not in the catalog (%s); for another file or folder write path, label and hosts instead of name",
					n, strings.Join(CatalogNames(), ", "))
				return
			}
			c.cred.Name = n
		}
	case "path":
		if p, ok := d.str(v, vi, key, `"~/.config/tool"`); ok {
			clean, err := homePath(p)
			if err == nil {
				for _, own := range appHomePaths(d.goos) {
					if overlaps(clean, own) {
						err = errors.New("is OpenWorker's own state, which is never shared")
					}
				}
			}
			if err != nil {
				d.problem(vi.value.start, "sandbox_credentials: path %q %v", p, err)
				return
			}
			c.cred.Path = clean
		}
	case "label":
		if l, ok := d.str(v, vi, key, `"credential"`); ok {
			if l != LabelCredential && l != LabelConfiguration {
				d.problem(vi.value.start, `sandbox_credentials: label %q is not a label; use "credential" (a secret inside) or "configuration" (host names, profiles, options)`, l)
				return
			}
			c.cred.Label = l
		}
	case "hosts":
		elems, ok := d.strList(v, vi, key, `"api.example.com:443"`)
		if !ok {
			return
		}
		for _, el := range elems {
			e, err := hosts.Parse(el.text)
			if err != nil {
				d.problem(el.start, "sandbox_credentials hosts: %v", err)
				continue
			}
			c.cred.Hosts = append(c.cred.Hosts, e)
		}
	case "var":
		if n, ok := d.str(v, vi, key, `"TOOL_CONFIG"`); ok {
			if err := CheckVarName(n); err != nil {
				d.problem(vi.value.start, "sandbox_credentials: var %v", err)
				return
			}
			c.cred.Var = n
		}
	case "keys":
		if k, ok := d.str(v, vi, key, `"agent"`); ok {
			if k != SSHKeysCopy && k != SSHKeysAgent {
				d.problem(vi.value.start, `sandbox_credentials: keys %q is not a way to share SSH keys; use "agent" (they stay outside, and OpenWorker signs for the hosts you allow) or "copy" (they are copied into the sandbox)`, k)
				return
			}
			c.cred.Keys = k
		}
	case "secrets":
		if m, ok := d.str(v, vi, key, `"stand-in"`); ok {
			if m != SecretsStandIn && m != SecretsCopy {
				d.problem(vi.value.start, `sandbox_credentials: secrets %q is not a way to share a login's secrets; use "stand-in" (they stay outside, and OpenWorker puts them on requests to the login's own hosts) or "copy" (they are copied into the sandbox)`, m)
				return
			}
			c.cred.Secrets = m
		}
	case "agent_logins", "agent_signing":
		elems, ok := d.strList(v, vi, key, `"github.com SHA256:…"`)
		if !ok {
			return
		}
		for _, el := range elems {
			what, fp, ok := strings.Cut(el.text, " ")
			if !ok || what == "" || !strings.HasPrefix(fp, "SHA256:") || strings.ContainsAny(fp, " \t") {
				d.problem(el.start, "sandbox_credentials %s: %q is not \"HOST SHA256:…\" (a name and a key's fingerprint, as the SSH cards write them)", key, el.text)
				continue
			}
			if key == "agent_logins" {
				c.cred.AgentLogins = append(c.cred.AgentLogins, el.text)
			} else {
				c.cred.AgentSigning = append(c.cred.AgentSigning, el.text)
			}
		}
	case "enabled":
		if v.Kind != unstable.Bool {
			d.problem(vi.value.start, "enabled must be true or false, not %s", kindName(v.Kind))
			return
		}
		c.cred.Enabled = string(v.Data) == "true"
	default:
		d.problem(vi.key.start, "unknown key %q in [[sandbox_credentials]]; an entry has name (a catalog login) and secrets (for gh, npm, docker, kubectl, aws-credentials and terraform), or path, label, hosts and var (your own file or folder), and enabled", key)
	}
}

// finishCredential checks an entry as a whole once all its keys are read.
func (d *decoder) finishCredential(c *credIndex) {
	_, hasName := c.keys["name"]
	_, hasPath := c.keys["path"]
	at := c.header.start
	switch {
	case hasName && hasPath:
		d.problem(c.keys["path"].key.start, "a [[sandbox_credentials]] entry has either name (a catalog login) or path (your own file or folder), not both")
		return
	case !hasName && !hasPath:
		d.problem(at, "this [[sandbox_credentials]] entry has neither name nor path; add name = \"ssh\" (a catalog login) or path, label and hosts (your own file or folder)")
		return
	}
	if hasName {
		for _, k := range []string{"label", "hosts", "var"} {
			if vi, ok := c.keys[k]; ok {
				d.problem(vi.key.start, "a catalog entry brings its own %s; %s is only for an entry with a path", k, k)
			}
		}
	}
	for _, k := range []string{"keys", "agent_logins", "agent_signing"} {
		if vi, ok := c.keys[k]; ok && c.cred.Name != "ssh" {
			d.problem(vi.key.start, "%s is only for the ssh entry (name = \"ssh\")", k)
		}
	}
	if vi, ok := c.keys["secrets"]; ok {
		switch supported, why := StandInSupport(c.cred.Name, d.goos); {
		case !hasName:
			d.problem(vi.key.start, "secrets is only for a CLI's login (name = \"gh\", \"npm\", \"docker\", \"kubectl\", \"aws-credentials\", \"terraform\"); a file or folder of your own is copied")
		case !supported && c.cred.Secrets == SecretsStandIn:
			d.problem(vi.value.start, "%s cannot be a stand-in here: %s; write secrets = \"copy\"", c.cred.Name, why)
		case !supported && c.cred.Name == "ssh":
			d.problem(vi.key.start, "secrets is not for the ssh login: %s", why)
		}
	}
	if hasPath {
		if _, ok := c.keys["label"]; !ok {
			d.problem(at, `this [[sandbox_credentials]] entry has a path but no label; add label = "credential" or label = "configuration"`)
		}
	}
	if _, ok := c.keys["enabled"]; !ok {
		d.problem(at, "this [[sandbox_credentials]] entry has no enabled; add enabled = true to share it or enabled = false to keep it off")
	}
	if c.cred.Name == "" && c.cred.Path == "" {
		return // its name or path was already reported
	}
	id := c.cred.Key()
	idAt := c.keys["name"]
	if hasPath {
		idAt = c.keys["path"]
	}
	line, _ := position(d.data, c.header.start)
	if first, ok := d.seenCred[id]; ok {
		d.problem(idAt.value.start, "sandbox_credentials: %s is already listed on line %d; keep one entry", id, first)
		return
	}
	d.seenCred[id] = line
	d.doc.creds = append(d.doc.creds, c)
	d.settings.Credentials = append(d.settings.Credentials, c.cred)
}

// unclosedList finds the list left open that a TOML error at line:col comes from: the error
// is at the start of a line that begins a setting or a table ("key =", "[table]"), and a
// list ('[' after '=') opened on an earlier line is still open there. It returns where that
// list starts.
func unclosedList(data []byte, line, col int) (int, int, bool) {
	lines := strings.Split(string(data), "\n")
	if line < 2 || line > len(lines) {
		return 0, 0, false
	}
	at := lines[line-1]
	rest := strings.TrimLeft(at, " \t")
	if col > len(at)-len(rest)+1 || !startsSetting(rest) {
		return 0, 0, false
	}
	type open struct{ line, col int }
	var stack []open
	inValue := false
	for i := 0; i < line-1; i++ {
		l := lines[i]
		for j := 0; j < len(l); j++ {
			switch c := l[j]; {
			case c == '#':
				j = len(l)
			case c == '"' || c == '\'':
				// A string on one line (a multi-line one is not looked into: TOML's own
				// error is kept for a file with one open there).
				if strings.HasPrefix(l[j:], `"""`) || strings.HasPrefix(l[j:], "'''") {
					return 0, 0, false
				}
				for j++; j < len(l) && l[j] != c; j++ {
					if c == '"' && l[j] == '\\' {
						j++
					}
				}
			case c == '=' && len(stack) == 0:
				inValue = true
			case (c == '[' || c == '{') && inValue:
				stack = append(stack, open{i + 1, j + 1})
			case (c == ']' || c == '}') && inValue && len(stack) > 0:
				stack = stack[:len(stack)-1]
			}
		}
		if len(stack) == 0 {
			inValue = false
		}
	}
	if len(stack) == 0 || lines[stack[0].line-1][stack[0].col-1] != '[' {
		return 0, 0, false
	}
	return stack[0].line, stack[0].col, true
}

// startsSetting says a line (without its indentation) begins a setting or a table: a bare
// or quoted key followed by '=', or '['.
func startsSetting(l string) bool {
	if strings.HasPrefix(l, "[") {
		return true
	}
	key, _, ok := strings.Cut(l, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return false
	}
	for _, r := range key {
		if !(r == '_' || r == '-' || r == '.' || r == '"' || r == '\'' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
