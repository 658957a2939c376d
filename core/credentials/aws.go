package credentials

import (
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/openworker/openworker/core/hosts"
)

// An AWS secret access key never travels: a request carries a signature made with it. So in
// stand-in mode each profile's secret (and session token) in the copy of ~/.aws/credentials
// is a stand-in of its shape that the sandbox's programs sign with, and OpenWorker's proxy
// checks that signature and signs each request again with the real secret (see
// proxy.SigV4). The access key's id stays: it only names the key. The login is bound to
// *.amazonaws.com, every host AWS serves its APIs from.

// awsHosts are where an AWS login's requests go.
var awsHosts = mustHosts("*.amazonaws.com:443")

// awsStandIns replaces each profile's aws_secret_access_key and aws_session_token in the
// copy of the credentials file at path with stand-ins.
func (c *copier) awsStandIns(path string, res *Result) ([]hosts.Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(data), "\n")
	type profile struct {
		name                  string
		id                    string
		secretLine, tokenLine int
	}
	var profiles []*profile
	cur := &profile{secretLine: -1, tokenLine: -1}
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			cur = &profile{name: strings.TrimSpace(t[1 : len(t)-1]), secretLine: -1, tokenLine: -1}
			profiles = append(profiles, cur)
			continue
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok || t[0] == '#' || t[0] == ';' {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "aws_access_key_id":
			cur.id = strings.TrimSpace(v)
		case "aws_secret_access_key":
			cur.secretLine = i
		case "aws_session_token", "aws_security_token":
			cur.tokenLine = i
		}
	}
	value := func(i int) string {
		_, v, _ := strings.Cut(lines[i], "=")
		return strings.TrimSpace(v)
	}
	var added []hosts.Entry
	n := 0
	for _, p := range profiles {
		if p.secretLine < 0 {
			continue
		}
		if p.id == "" {
			lines[p.secretLine] = ""
			if p.tokenLine >= 0 {
				lines[p.tokenLine] = ""
			}
			c.cur.Notes = append(c.cur.Notes, "the secret access key of the profile "+p.name+" was left out of the copy: the profile names no aws_access_key_id")
			continue
		}
		if n++; n > maxStandIns {
			return nil, c.dropCopy(path, "the credentials file holds more than "+strconv.Itoa(maxStandIns)+" keys")
		}
		s := StandIn{Login: "aws-credentials", Hosts: slices.Clone(awsHosts), AccessKeyID: p.id, Real: value(p.secretLine)}
		if i := slices.IndexFunc(res.StandIns, func(o StandIn) bool { return o.AccessKeyID == p.id }); i >= 0 {
			// One key in two profiles: one stand-in, which the proxy finds by the key's id.
			if o := res.StandIns[i]; o.Real == s.Real && p.tokenLine < 0 && o.Token == "" {
				lines[p.secretLine] = strings.Replace(lines[p.secretLine], s.Real, o.StandIn, 1)
				continue
			}
			lines[p.secretLine] = ""
			if p.tokenLine >= 0 {
				lines[p.tokenLine] = ""
			}
			c.cur.Notes = append(c.cur.Notes, "the secret access key of the profile "+p.name+" was left out of the copy: another profile has the key "+p.id+" with other secrets")
			continue
		}
		if s.StandIn, err = MakeStandIn(s.Real); err != nil {
			return nil, err
		}
		lines[p.secretLine] = strings.Replace(lines[p.secretLine], s.Real, s.StandIn, 1)
		if p.tokenLine >= 0 && value(p.tokenLine) != "" {
			s.Token = value(p.tokenLine)
			if s.StandInToken, err = MakeStandIn(s.Token); err != nil {
				return nil, err
			}
			lines[p.tokenLine] = strings.Replace(lines[p.tokenLine], s.Token, s.StandInToken, 1)
		}
		res.StandIns = append(res.StandIns, s)
		added = awsHosts
	}
	if err := writeCopy(path, []byte(strings.Join(lines, ""))); err != nil {
		return nil, err
	}
	return added, c.noRealSecret(path, res)
}
