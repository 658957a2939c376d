package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Project is what a project's own .openworker/config.toml says.
type Project struct {
	// File is the project config's path, or "" when the project has none.
	File string
	// Ignored lists each sandbox_* key found there, which was not applied: the sandbox is
	// set per machine, and a folder the agent can write must not be able to widen its wall.
	Ignored []Problem
}

// LoadProject reads dir/.openworker/config.toml, if there is one. Keys that would change the
// sandbox (any key or table whose first part starts with "sandbox") are ignored and listed
// in Ignored; other keys belong to features that read them and are not checked here.
func LoadProject(dir string) (*Project, error) {
	file := filepath.Join(dir, ".openworker", FileName)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return &Project{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the project's settings: %w", err)
	}
	var whole map[string]any
	if err := toml.NewDecoder(bytes.NewReader(data)).Decode(&whole); err != nil {
		p := Problem{File: file, Msg: "not valid TOML: " + strings.TrimPrefix(err.Error(), "toml: ")}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			p.Line, p.Col = de.Position()
		}
		return nil, &ProblemsError{Problems: []Problem{p}}
	}
	proj := &Project{File: file}
	var parser unstable.Parser
	parser.Reset(data)
	inSandboxTable := false
	for parser.NextExpression() {
		e := parser.Expression()
		var first *unstable.Node
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			first = e.Child()
			inSandboxTable = strings.HasPrefix(string(first.Data), "sandbox")
			if !inSandboxTable {
				continue
			}
		case unstable.KeyValue:
			if inSandboxTable {
				continue // the table was reported once, at its header
			}
			it := e.Key()
			it.Next()
			first = it.Node()
			if !strings.HasPrefix(string(first.Data), "sandbox") {
				continue
			}
		default:
			continue
		}
		line, col := position(data, int(first.Raw.Offset))
		proj.Ignored = append(proj.Ignored, Problem{File: file, Line: line, Col: col,
			Msg: fmt.Sprintf("%s is ignored: sandbox settings are per machine and a project cannot change them; set it in Settings ▸ Sandbox", first.Data)})
	}
	return proj, nil
}
