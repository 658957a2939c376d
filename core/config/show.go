package config

import (
	"fmt"
	"strings"
)

// TOML renders the settings as a complete settings file, every key written out, defaults
// included: what `openworker config show` prints as the settings in force.
func (s *Settings) TOML() []byte {
	var b strings.Builder
	list := func(items []string) string {
		q := make([]string, len(items))
		for i, it := range items {
			q[i] = tomlString(it)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	hostsText := make([]string, len(s.NetworkHosts))
	for i, h := range s.NetworkHosts {
		hostsText[i] = h.String()
	}
	fmt.Fprintf(&b, "%s = %s\n", KeyProvider, tomlString(s.Provider))
	fmt.Fprintf(&b, "%s = %s\n", KeyNetworkProfile, tomlString(s.NetworkProfile))
	fmt.Fprintf(&b, "%s = %s\n", KeyNetworkHosts, list(hostsText))
	fmt.Fprintf(&b, "%s = %s\n", KeyToolchains, list(s.Toolchains))
	fmt.Fprintf(&b, "%s = %s\n", KeyApprovals, tomlString(s.Approvals))
	fmt.Fprintf(&b, "%s = %s\n", KeyGitMetadata, tomlString(s.GitMetadata))
	maxCaches := "0"
	if s.MaxCaches > 0 {
		maxCaches = Size{Bytes: s.MaxCaches}.String()
	}
	fmt.Fprintf(&b, "%s = %s\n", KeyMaxCaches, tomlString(maxCaches))
	fmt.Fprintf(&b, "%s = %s\n", KeyHostCaches, tomlString(s.HostCaches))
	s.Limits.toml(&b)
	for _, c := range s.Credentials {
		b.WriteString("\n")
		b.WriteString(credentialBlock(c, "\n"))
	}
	return []byte(b.String())
}
