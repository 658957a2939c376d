package api

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/apiclient"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
	"github.com/openworker/openworker/core/tstest"
)

// The credentials endpoints change the settings through the backend, with an event on the
// stream for each change.
func TestCredentialsEndpoints(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home, state := filepath.Join(root, "home"), filepath.Join(root, "state")
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	// The paths added below are there: a path that is not is refused.
	os.MkdirAll(filepath.Join(home, ".config", "tool"), 0o700)
	os.WriteFile(filepath.Join(home, ".config", "abs"), nil, 0o600)
	exe, _ := os.Executable()
	settings := filepath.Join(root, "config.toml")
	store, err := backend.OpenStore(context.Background(), settings, state, "linux", false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := backend.New(backend.Options{Settings: store, GOOS: "linux", Session: session.Options{Providers: map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}},
		UserHome: home, StateDir: state, TmpRoot: root, GOOS: "linux", RunnerPath: exe}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Backend: b}
	l, err := Listen(state)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Shutdown(context.Background())
	c := apiclient.New(SocketPath(state))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan backend.Event, 16)
	// A stream that counts as a card watcher, so that its opening can be seen.
	go c.Events(ctx, true, func(e backend.Event) {
		if strings.HasPrefix(e.Type, "credential.") {
			events <- e
		}
	})
	tstest.WaitFor(t, 5*time.Second, func() error {
		if b.CardWatchers() == 0 {
			return errors.New("the event stream is not open")
		}
		return nil
	})

	list, err := c.Credentials(ctx)
	if err != nil || len(list.Catalog) != 9 || list.Catalog[0].Name != "ssh" || list.Catalog[0].Status != "found" || len(list.Entries) != 0 {
		t.Fatalf("list: %v %+v", err, list)
	}
	steps := []struct {
		req  CredentialsRequest
		want string // event type, or the error
	}{
		{CredentialsRequest{Action: "add", Name: "ssh"}, backend.CredentialAdded},
		{CredentialsRequest{Action: "add", Name: "keychain"}, `"keychain" is not a CLI login OpenWorker knows`},
		{CredentialsRequest{Action: "add-path", Path: "~/.config/tool", Label: "configuration", Hosts: []string{"api.tool.example"}, Var: "TOOL_CONFIG"}, backend.CredentialAdded},
		{CredentialsRequest{Action: "add-path", Path: "/etc/passwd", Label: "configuration"}, "/etc/passwd is not under the home folder"},
		{CredentialsRequest{Action: "add-path", Path: "~/../other", Label: "configuration"}, "leaves the home folder"},
		{CredentialsRequest{Action: "add-path", Path: filepath.Join(home, ".config", "abs"), Label: "credential"}, backend.CredentialAdded},
		{CredentialsRequest{Action: "add-path", Path: "~/.config/tool2", Label: "configuration", Var: "PATH"}, `var "PATH" is set by the sandbox itself`},
		{CredentialsRequest{Action: "disable", Name: "ssh"}, backend.CredentialDisabled},
		{CredentialsRequest{Action: "enable", Name: "~/.config/tool"}, backend.CredentialEnabled},
		{CredentialsRequest{Action: "enable", Name: "gh"}, "gh is not added"},
		{CredentialsRequest{Action: "remove", Name: "ssh"}, backend.CredentialRemoved},
		{CredentialsRequest{Action: "share"}, `action "share" is not add`},
	}
	for _, s := range steps {
		_, err := c.ChangeCredentials(ctx, s.req)
		if !strings.Contains(s.want, ".") {
			if err == nil || !strings.Contains(err.Error(), s.want) {
				t.Errorf("%+v: %v, want %q", s.req, err, s.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", s.req, err)
		}
		select {
		case e := <-events:
			if e.Type != s.want || e.Credential == nil {
				t.Errorf("%+v: event %+v, want %s", s.req, e, s.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%+v: no event", s.req)
		}
	}
	list, _ = c.Credentials(ctx)
	if len(list.Entries) != 2 || list.Entries[1].Key != "~/.config/abs" || list.Entries[0].Key != "~/.config/tool" || !list.Entries[0].Enabled || list.Entries[0].Var != "TOOL_CONFIG" ||
		strings.Join(list.Entries[0].Hosts, ",") != "api.tool.example:443" || list.Entries[0].Status != "found" {
		t.Errorf("entries %+v", list.Entries)
	}
	text, _ := os.ReadFile(settings)
	if strings.Contains(string(text), `name = "ssh"`) || !strings.Contains(string(text), `path = "~/.config/tool"`) {
		t.Errorf("the settings file:\n%s", text)
	}
}
