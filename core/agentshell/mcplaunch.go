package agentshell

import (
	"os"
	"path/filepath"
	"strings"
)

// A host that runs its MCP servers through its shell prefix (Claude Code does) hands the
// shell the command that starts OpenWorker's own MCP server too, in a configuration a person
// keeps. That server must run outside, where the daemon is: the shell starts it itself, and
// only it — the program beside this one, with the MCP server's own options — never anything
// else, and never a command that came through the host's tools (those are wrapped in the
// host's script, which is no plain list of words).

// mcpFlags are the options of openworker mcp that take a value, and those that do not.
var (
	mcpValueFlags = map[string]bool{"--rw": true, "--ro": true, "--allow": true, "--network": true, "--provider": true, "--git-metadata": true, "--ask-wait": true}
	mcpBoolFlags  = map[string]bool{"--agent-host": true, "--no-forms": true, "--no-cwd": true, "--local-servers": true}
)

// ownMCPServer returns the argv of OpenWorker's MCP server when script is exactly the
// command that starts it for an agent host, and nil otherwise. self is this program's path.
func ownMCPServer(script, self string) []string {
	words, ok := plainWords(script)
	if !ok || len(words) < 3 || words[1] != "mcp" {
		return nil
	}
	host := false
	for i := 2; i < len(words); i++ {
		switch w := words[i]; {
		case w == "--agent-host":
			host = true
		case mcpBoolFlags[w]:
		case mcpValueFlags[w] && i+1 < len(words):
			i++
		default:
			name, _, _ := strings.Cut(w, "=")
			if !mcpValueFlags[name] {
				return nil
			}
		}
	}
	if !host || !isOurs(words[0], self) {
		return nil
	}
	return words
}

// isOurs says whether program is OpenWorker's CLI or MCP server of the same install as self:
// beside it, or the app's binary when self is in the bundle's Helpers.
func isOurs(program, self string) bool {
	if !filepath.IsAbs(program) {
		return false
	}
	want, err := filepath.EvalSymlinks(program)
	if err != nil {
		return false
	}
	me, err := filepath.EvalSymlinks(self)
	if err != nil {
		return false
	}
	dir := filepath.Dir(me)
	candidates := []string{filepath.Join(dir, "openworker"), filepath.Join(dir, "openworker-mcp")}
	if filepath.Base(dir) == "Helpers" {
		candidates = append(candidates, filepath.Join(filepath.Dir(dir), "MacOS", "openworker"))
	}
	if filepath.Base(me) == "openworker" {
		// This program is the CLI itself, started by a link named openworker-shell.
		candidates = append(candidates, me)
	}
	for _, c := range candidates {
		if r, err := filepath.EvalSymlinks(c); err == nil && r == want {
			if fi, err := os.Stat(r); err == nil && fi.Mode().IsRegular() {
				return true
			}
		}
	}
	return false
}

// plainWords splits a command made only of words, each plain or in single or double quotes
// with nothing in them a shell would expand; ok is false for anything else.
func plainWords(s string) (words []string, ok bool) {
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, false
			}
			part := s[i+1 : i+1+j]
			if c == '"' && strings.ContainsAny(part, "$`\\!") {
				return nil, false
			}
			cur.WriteString(part)
			inWord = true
			i += j + 1
		case strings.IndexByte("$`\\!;&|<>(){}*?[]~#\n\r", c) >= 0:
			return nil, false
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, len(words) > 0
}
