package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// LastGoodName is the copy of the settings file as it last validated, kept in the state
// folder, which no session can reach. While the file has problems, every OpenWorker process
// (the daemon, a `run`, `config show`) keeps these in force, the same ones, so a broken save
// never opens anything and never makes one surface disagree with another.
const LastGoodName = "settings.last-good.toml"

// InForce is what a process runs with: the settings, and why they are not the file's.
type InForce struct {
	Settings *Settings
	// Problems are the file's problems when it does not validate; nil when it does.
	Problems error
	// LastGood says Settings are the last good ones (Problems is set); without them, Settings
	// are the defaults and NoLastGood is set.
	LastGood   bool
	NoLastGood bool
}

// LoadInForce reads the settings file at path. A file that validates is in force, and its
// bytes are kept in stateDir as the last good ones. A file that does not keeps the last good
// settings in force and says what is wrong with the file; with no last good copy, the
// defaults are in force and NoLastGood says so.
func LoadInForce(path, stateDir, goos string) (*InForce, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &InForce{Settings: Default()}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the settings file: %w", err)
	}
	s, problems := Parse(path, data, goos)
	if len(problems) == 0 {
		_ = SaveLastGood(stateDir, data)
		return &InForce{Settings: s}, nil
	}
	in := &InForce{Problems: &ProblemsError{Problems: problems}}
	lastPath := filepath.Join(stateDir, LastGoodName)
	if last, err := os.ReadFile(lastPath); err == nil {
		if ls, lp := Parse(path, last, goos); len(lp) == 0 {
			in.Settings, in.LastGood = ls, true
			return in, nil
		}
	}
	in.Settings, in.NoLastGood = Default(), true
	return in, nil
}

// SaveLastGood keeps data, a settings file that validated, as the last good settings. It
// writes only when they changed, owner-only, through a rename so a reader never sees half.
func SaveLastGood(stateDir string, data []byte) error {
	path := filepath.Join(stateDir, LastGoodName)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(stateDir, LastGoodName+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Describe is the line every surface prints about the settings file while it has problems.
func (in *InForce) Describe(path string) string {
	switch {
	case in.Problems == nil:
		return ""
	case in.LastGood:
		return fmt.Sprintf("the settings file %s has problems; the last good settings stay in force until it is fixed (openworker config check):\n%v", path, in.Problems)
	default:
		return fmt.Sprintf("the settings file %s has problems and no earlier version of it was valid; the defaults are in force until it is fixed (openworker config check):\n%v", path, in.Problems)
	}
}
