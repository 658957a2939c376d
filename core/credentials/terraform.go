package credentials

import (
	"encoding/json"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/openworker/openworker/core/hosts"
)

// Terraform keeps a token per host (Terraform Cloud's app.terraform.io, an Enterprise host)
// in credentials.tfrc.json, and sends it as Bearer to that host's APIs and registry. In
// stand-in mode each is a stand-in of its shape (an "….atlasv1.…" token keeps its middle),
// bound to its host.

// terraformStandIns replaces each host's token in the copy of credentials.tfrc.json at path.
func (c *copier) terraformStandIns(path string, res *Result) ([]hosts.Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	var creds map[string]map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil || top["credentials"] != nil && json.Unmarshal(top["credentials"], &creds) != nil {
		return nil, c.dropCopy(path, "credentials.tfrc.json is not valid JSON, so its tokens cannot be replaced by stand-ins")
	}
	names := make([]string, 0, len(creds))
	for h := range creds {
		names = append(names, h)
	}
	slices.Sort(names)
	var added []hosts.Entry
	for i, h := range names {
		var tok string
		if json.Unmarshal(creds[h]["token"], &tok) != nil || tok == "" {
			continue
		}
		target, err := hosts.Parse(net.JoinHostPort(strings.ToLower(h), "443"))
		if err != nil || target.Wildcard || strings.Contains(h, ":") {
			delete(creds, h)
			c.cur.Notes = append(c.cur.Notes, "the Terraform token for "+strconv.Quote(h)+" was left out of the copy: it is not a host")
			continue
		}
		if i >= maxStandIns {
			return nil, c.dropCopy(path, "credentials.tfrc.json holds more than "+strconv.Itoa(maxStandIns)+" tokens")
		}
		s, err := c.newStandIn("terraform", tok, []hosts.Entry{target}, res)
		if err != nil {
			return nil, err
		}
		creds[h]["token"], _ = json.Marshal(s)
		added = append(added, target)
	}
	if creds != nil {
		if top["credentials"], err = json.Marshal(creds); err != nil {
			return nil, err
		}
	}
	out, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeCopy(path, append(out, '\n')); err != nil {
		return nil, err
	}
	return added, c.noRealSecret(path, res)
}
