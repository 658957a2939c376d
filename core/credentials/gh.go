package credentials

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/openworker/openworker/core/internal/regularfile"
)

// ghTokens fills in the copy's hosts.yml. gh keeps its token in the keychain by default (on
// a Mac always), and then hosts.yml names the host and user without one: the copy alone is
// logged out. For each such host the token `gh auth token --hostname HOST` prints outside the
// sandbox is written into the copy, where gh inside reads it. The person chose to share this
// login; nothing else is asked of the keychain.
func (c *copier) ghTokens(dir string) error {
	path := filepath.Join(dir, "hosts.yml")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		c.cur.Notes = append(c.cur.Notes, "~/.config/gh has no hosts.yml: gh is logged out there, and inside too")
		return nil
	}
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		c.cur.Notes = append(c.cur.Notes, "hosts.yml is not valid YAML ("+err.Error()+"); copied as it is")
		return nil
	}
	missing := ghMissing(&doc)
	if len(missing) == 0 {
		return nil // every host has its token in the file: the copy is as it is
	}
	added := 0
	for _, h := range missing {
		tok, err := c.o.GhToken(h.Value)
		if err == nil {
			err = checkToken(tok)
		}
		if err != nil {
			c.cur.Notes = append(c.cur.Notes, "no token for "+h.Value+" from gh auth token ("+err.Error()+"); gh inside is logged out of "+h.Value)
			continue
		}
		m := h.mapping
		if v := mapValue(m, "oauth_token"); v != nil {
			v.Value, v.Tag, v.Style = strings.TrimSpace(tok), "!!str", 0
		} else {
			m.Content = append(m.Content,
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "oauth_token"},
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: strings.TrimSpace(tok)})
		}
		added++
	}
	if added == 0 {
		return nil
	}
	out, err := ghYAML(&doc)
	if err != nil {
		return err
	}
	if !c.standIn {
		c.cur.Notes = append(c.cur.Notes, fmt.Sprintf("the token of %d host(s) kept in the keychain was written into the copy", added))
	}
	return writeCopy(path, out)
}

// ghYAML writes doc as gh writes its files (indented by four).
func ghYAML(doc *yaml.Node) ([]byte, error) {
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(4)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

type ghHost struct {
	Value   string
	mapping *yaml.Node
}

// ghMissing lists the hosts of a hosts.yml whose entry has no oauth_token.
func ghMissing(doc *yaml.Node) []ghHost {
	root := yamlRoot(doc)
	if root.Kind != yaml.MappingNode {
		return nil
	}
	var out []ghHost
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			// "github.com:" with nothing under it yet
			v.Kind, v.Tag, v.Value = yaml.MappingNode, "!!map", ""
		}
		if v.Kind != yaml.MappingNode {
			continue
		}
		if t := mapValue(v, "oauth_token"); t != nil && strings.TrimSpace(t.Value) != "" {
			continue
		}
		out = append(out, ghHost{Value: k.Value, mapping: v})
	}
	return out
}

// ghHostsWithoutToken lists the hosts whose token is not in the hosts.yml at path.
func ghHostsWithoutToken(path string) ([]string, error) {
	data, err := regularfile.Read(path, 1<<20)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	var out []string
	for _, h := range ghMissing(&doc) {
		out = append(out, h.Value)
	}
	return out, nil
}

// checkToken refuses what cannot be a token: it goes into a YAML file as one scalar.
func checkToken(tok string) error {
	tok = strings.TrimSpace(tok)
	switch {
	case tok == "":
		return errors.New("it printed nothing")
	case len(tok) > 4096:
		return errors.New("it printed more than a token")
	}
	for _, r := range tok {
		if r <= ' ' || r == 0x7f {
			return errors.New("it printed more than one word")
		}
	}
	return nil
}

// ghAuthToken runs the gh found on PATH, outside the sandbox, for one host's token.
func ghAuthToken(host string) (string, error) {
	gh, err := exec.LookPath("gh")
	if err != nil {
		return "", errors.New("gh is not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, gh, "auth", "token", "--hostname", host)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if len(msg) > 200 {
			msg = msg[:200]
		}
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New(msg)
	}
	return out.String(), nil
}

// dockerConfig takes the credential helpers out of the copy of config.json: they cannot
// run inside (no helper binary, no keychain, no socket), and a config that names one makes
// docker fail before it tries the logins saved in the file.
func (c *copier) dockerConfig(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		c.cur.Notes = append(c.cur.Notes, "config.json is not valid JSON; copied as it is")
		return nil
	}
	helpers := dockerHelpers(path)
	if len(helpers) == 0 {
		return nil
	}
	delete(m, "credsStore")
	delete(m, "credHelpers")
	out, err := json.MarshalIndent(m, "", "\t")
	if err != nil {
		return err
	}
	c.cur.Notes = append(c.cur.Notes, "the credential helper(s) "+strings.Join(helpers, ", ")+" cannot run inside and were taken out of the copy; only the logins saved in the file work")
	return writeCopy(path, append(out, '\n'))
}
