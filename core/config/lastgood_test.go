package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadInForceKeepsTheLastGoodSettings(t *testing.T) {
	dir := t.TempDir()
	path, state := filepath.Join(dir, "config.toml"), filepath.Join(dir, "state")
	good := "sandbox_provider = \"linux\"\nsandbox_network_hosts = [\"github.com:443\"]\n"
	os.WriteFile(path, []byte(good), 0o600)
	in, err := LoadInForce(path, state, "linux")
	if err != nil || in.Problems != nil || in.Settings.Provider != "linux" {
		t.Fatalf("a good file: %+v %v", in, err)
	}
	broken := "sandbox_provider = \"linux\"\nsandbox_network_profile = \"opne\"\n"
	os.WriteFile(path, []byte(broken), 0o600)
	in, err = LoadInForce(path, state, "linux")
	if err != nil || in.Problems == nil || !in.LastGood || in.Settings.Provider != "linux" || len(in.Settings.NetworkHosts) != 1 {
		t.Fatalf("a broken file: %+v %v; want the last good settings and the problems", in, err)
	}
	if b, _ := os.ReadFile(path); string(b) != broken {
		t.Fatalf("the broken file was changed: %q", b)
	}
	if fi, err := os.Stat(filepath.Join(state, LastGoodName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the last good copy: %v %v", fi, err)
	}
	// With no last good copy the defaults are in force, and that is said.
	os.Remove(filepath.Join(state, LastGoodName))
	in, err = LoadInForce(path, state, "linux")
	if err != nil || !in.NoLastGood || in.Settings.Provider != ProviderDirect || in.Describe(path) == "" {
		t.Fatalf("a broken file with no last good copy: %+v %v", in, err)
	}
}
