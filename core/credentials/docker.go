package credentials

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openworker/openworker/core/hosts"
)

// A Docker login (config.json's auths) is a registry's user and password or access token,
// which registry clients (crane, skopeo, helm, oras, buildctl) send as Basic to the
// registry's token service, or to the registry itself; a registry token goes as Bearer. In
// stand-in mode each becomes a stand-in bound to the registry's hosts. A login kept by a
// credential helper (credsStore, credHelpers: the Keychain on a Mac, Docker Desktop's
// store) is asked of the helper here, outside, where it can run: inside it never could.

// dockerHub are the names config.json knows Docker Hub by, and hubHosts where its logins go:
// the token service, the registry, and the index.
var (
	dockerHub = []string{"index.docker.io", "docker.io", "registry-1.docker.io", "registry.hub.docker.com"}
	hubHosts  = []string{"auth.docker.io:443", "registry-1.docker.io:443", "index.docker.io:443"}
)

// tokenServices are registries whose token service is on another host, which their logins
// go to as well.
var tokenServices = map[string]string{"registry.gitlab.com": "gitlab.com:443"}

// dockerStandIns replaces every secret of the copy of config.json at path with a stand-in,
// fills in from their helpers the logins config.json only names, and takes the helpers out
// of the copy. A login that cannot be a stand-in is taken out, and said.
func (c *copier) dockerStandIns(path string, res *Result) ([]hosts.Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	var auths map[string]map[string]json.RawMessage
	var helpers struct {
		CredsStore  string            `json:"credsStore"`
		CredHelpers map[string]string `json:"credHelpers"`
	}
	if json.Unmarshal(data, &top) != nil || json.Unmarshal(data, &helpers) != nil ||
		top["auths"] != nil && json.Unmarshal(top["auths"], &auths) != nil {
		return nil, c.dropCopy(path, "config.json is not valid JSON, so its logins cannot be replaced by stand-ins")
	}
	if auths == nil {
		auths = map[string]map[string]json.RawMessage{}
	}
	for server := range helpers.CredHelpers {
		if _, ok := auths[server]; !ok {
			auths[server] = map[string]json.RawMessage{}
		}
	}
	servers := make([]string, 0, len(auths))
	for s := range auths {
		servers = append(servers, s)
	}
	slices.Sort(servers)
	var added []hosts.Entry
	n := 0
	for _, server := range servers {
		login := auths[server]
		leave := func(why string) {
			delete(auths, server)
			c.cur.Notes = append(c.cur.Notes, "the login for "+server+" was left out of the copy: "+why)
		}
		targets, why := registryTargets(server)
		str := func(k string) string {
			var v string
			json.Unmarshal(login[k], &v)
			return v
		}
		user, secret, field := "", "", ""
		switch {
		case str("identitytoken") != "":
			leave("an identity token (Docker's own sign-in) is sent in a request's body, where OpenWorker does not replace stand-ins; share docker by copying it to use this login")
			continue
		case str("password") != "":
			leave("a password of its own field cannot be a stand-in; log in again with docker login to save it as auth")
			continue
		case str("registrytoken") != "":
			secret, field = str("registrytoken"), "registrytoken"
		case str("auth") != "":
			raw, err := base64.StdEncoding.DecodeString(str("auth"))
			u, p, ok := strings.Cut(string(raw), ":")
			if err != nil || !ok || p == "" {
				leave("its auth is not a user and password")
				continue
			}
			user, secret, field = u, p, "auth"
		default:
			helper := helpers.CredHelpers[server]
			if helper == "" {
				helper = helpers.CredsStore
			}
			if helper == "" {
				continue // a name with no login
			}
			if why != "" {
				leave(why)
				continue
			}
			u, p, err := c.o.DockerCredential(helper, server)
			switch {
			case err != nil:
				leave("no login for " + server + " from docker-credential-" + helper + " (" + err.Error() + ")")
				continue
			case u == "<token>":
				leave("docker-credential-" + helper + " keeps an identity token (Docker's own sign-in) for it, which is sent in a request's body, where OpenWorker does not replace stand-ins")
				continue
			}
			user, secret, field = u, p, "auth"
		}
		if why != "" {
			leave(why)
			continue
		}
		if n++; n > maxStandIns {
			return nil, c.dropCopy(path, "config.json holds more than "+strconv.Itoa(maxStandIns)+" logins")
		}
		s, err := c.newStandIn("docker", secret, targets, res)
		if err != nil {
			return nil, err
		}
		if field == "auth" {
			s = base64.StdEncoding.EncodeToString([]byte(user + ":" + s))
		}
		login[field], _ = json.Marshal(s)
		for _, t := range targets {
			if !slices.Contains(added, t) {
				added = append(added, t)
			}
		}
	}
	if top == nil {
		top = map[string]json.RawMessage{}
	}
	delete(top, "credsStore")
	delete(top, "credHelpers")
	if top["auths"], err = json.Marshal(auths); err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(top, "", "\t")
	if err != nil {
		return nil, err
	}
	if err := writeCopy(path, append(out, '\n')); err != nil {
		return nil, err
	}
	return added, c.noRealSecret(path, res)
}

// registryTargets are the host:ports a login saved for server (a registry's name or URL, as
// docker login saved it) goes to, or why a stand-in cannot stand for it.
func registryTargets(server string) ([]hosts.Entry, string) {
	name := server
	if strings.HasPrefix(name, "http://") {
		return nil, "it is reached over http://, where a stand-in would travel as it is"
	}
	name = strings.TrimPrefix(name, "https://")
	name, _, _ = strings.Cut(name, "/")
	u, err := url.Parse("https://" + name)
	if err != nil || u.Hostname() == "" {
		return nil, strconv.Quote(server) + " is not a registry's address"
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = "443"
	}
	bound := []string{net.JoinHostPort(host, port)}
	if slices.Contains(dockerHub, host) {
		bound = hubHosts
	}
	if ts, ok := tokenServices[host]; ok {
		bound = append(bound, ts)
	}
	var out []hosts.Entry
	for _, b := range bound {
		e, err := hosts.Parse(b)
		if err != nil || e.Wildcard {
			return nil, strconv.Quote(server) + " is not a registry's address"
		}
		out = append(out, e)
	}
	return out, ""
}

// helperName is what a credential helper's name may be: docker-credential-NAME on PATH.
var helperName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// dockerCredential runs docker-credential-HELPER get, found on PATH, outside the sandbox,
// for server's user and secret.
func dockerCredential(helper, server string) (string, string, error) {
	if !helperName.MatchString(helper) {
		return "", "", errors.New(strconv.Quote(helper) + " is not a credential helper's name")
	}
	bin, err := exec.LookPath("docker-credential-" + helper)
	if err != nil {
		return "", "", errors.New("docker-credential-" + helper + " is not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "get")
	cmd.Stdin = strings.NewReader(server)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String() + " " + errb.String())
		if len(msg) > 200 {
			msg = msg[:200]
		}
		if msg == "" {
			msg = err.Error()
		}
		return "", "", errors.New(msg)
	}
	var got struct{ Username, Secret string }
	if out.Len() > 64<<10 || json.Unmarshal(out.Bytes(), &got) != nil || got.Secret == "" {
		return "", "", errors.New("it did not print a login")
	}
	return got.Username, got.Secret, nil
}
