package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testDebounce = 60 * time.Millisecond

// next waits for the next event, failing the test if none comes.
func next(t *testing.T, events <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("subscription closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no reload event within 5s")
	}
	return Event{}
}

// quiet checks no event arrives for a while. That nothing happened has no signal to wait
// for: a fixed window, longer than the debounce, is the only way to see it.
func quiet(t *testing.T, events <-chan Event, d time.Duration) {
	t.Helper()
	select {
	case ev := <-events:
		t.Fatalf("unexpected event: settings=%+v err=%v", ev.Settings, ev.Err)
	case <-time.After(d):
	}
}

func hostsFile(hosts ...string) string {
	return `sandbox_network_hosts = ["` + strings.Join(hosts, `", "`) + `"]` + "\n"
}

func startWatch(t *testing.T, path string) (*Watcher, <-chan Event) {
	t.Helper()
	w, err := Watch(context.Background(), path, "linux", testDebounce)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	events, _ := w.Subscribe()
	return w, events
}

func wantHosts(t *testing.T, s *Settings, want ...string) {
	t.Helper()
	if s == nil {
		t.Fatalf("settings are nil, want hosts %q", want)
	}
	if strings.Join(s.NetworkHostsRaw, ",") != strings.Join(want, ",") {
		t.Fatalf("hosts = %q, want %q", s.NetworkHostsRaw, want)
	}
}

func TestWatchReloads(t *testing.T) {
	tests := []struct {
		name string
		save func(t *testing.T, path, text string)
	}{
		{"in_place_write", func(t *testing.T, path, text string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(text); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}},
		{"rename_over", func(t *testing.T, path, text string) {
			tmp := filepath.Join(filepath.Dir(path), ".config.toml.swp")
			writeFile(t, tmp, text)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"write_back", func(t *testing.T, path, text string) {
			if err := Update(path, "linux", func(e *Editor) error { return e.AddHost("b.com:443") }); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			writeFile(t, path, hostsFile("a.com:443"))
			w, events := startWatch(t, path)
			wantHosts(t, w.Current(), "a.com:443")

			tt.save(t, path, hostsFile("a.com:443", "b.com:443"))
			ev := next(t, events)
			if ev.Err != nil {
				t.Fatal(ev.Err)
			}
			wantHosts(t, ev.Settings, "a.com:443", "b.com:443")
			wantHosts(t, w.Current(), "a.com:443", "b.com:443")
			if w.Err() != nil {
				t.Errorf("Err = %v", w.Err())
			}
		})
	}
}

func TestWatchDeleteAndRecreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, path, `sandbox_network_profile = "allowlist"`+"\n"+hostsFile("a.com:443"))
	w, events := startWatch(t, path)

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	ev := next(t, events)
	if ev.Err == nil || !strings.Contains(ev.Err.Error(), "was deleted; the last settings stay in force") {
		t.Fatalf("Err = %v, want the deletion reported", ev.Err)
	}
	// A deleted file is not "no settings": the defaults do not come back.
	wantHosts(t, ev.Settings, "a.com:443")
	wantHosts(t, w.Current(), "a.com:443")

	writeFile(t, path, hostsFile("c.com:443"))
	ev = next(t, events)
	if ev.Err != nil {
		t.Fatal(ev.Err)
	}
	wantHosts(t, ev.Settings, "c.com:443")
	wantHosts(t, w.Current(), "c.com:443")
}

func TestWatchBrokenSaveKeepsLastGood(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, path, hostsFile("a.com:443"))
	w, events := startWatch(t, path)

	// A save that would open the network but also has a bad entry: nothing of it is taken.
	writeFile(t, path, "sandbox_network_profile = \"open\"\nsandbox_network_hosts = [\"a.com:443\", \"*\"]\n")
	ev := next(t, events)
	var pe *ProblemsError
	if !errors.As(ev.Err, &pe) || len(pe.Problems) != 1 {
		t.Fatalf("Err = %v, want one problem", ev.Err)
	}
	if got, want := pe.Problems[0].String(), path+`:2:39: sandbox_network_hosts: site "*": allows every site; name the sites instead, such as *.example.com`; got != want {
		t.Errorf("problem = %q, want %q", got, want)
	}
	for _, s := range []*Settings{ev.Settings, w.Current()} {
		wantHosts(t, s, "a.com:443")
		if s.NetworkProfile != NetworkAllowlist {
			t.Fatalf("profile = %q while the file is broken, want the last good allowlist", s.NetworkProfile)
		}
	}
	if w.Err() == nil {
		t.Error("Err() = nil while the file is broken")
	}

	writeFile(t, path, hostsFile("a.com:443", "fixed.com:443"))
	ev = next(t, events)
	if ev.Err != nil {
		t.Fatal(ev.Err)
	}
	wantHosts(t, ev.Settings, "a.com:443", "fixed.com:443")
	wantHosts(t, w.Current(), "a.com:443", "fixed.com:443")
	if w.Err() != nil {
		t.Errorf("Err() = %v after the fix", w.Err())
	}
}

func TestWatchBurstIsOneReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, path, hostsFile("a.com:443"))
	w, err := Watch(context.Background(), path, "linux", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	events, _ := w.Subscribe()
	for i := range 20 {
		// Every intermediate state is valid and different, so each would be an event if the
		// burst were not merged.
		writeFile(t, path, hostsFile("a.com:443", "n"+string(rune('a'+i))+".com:443"))
		time.Sleep(5 * time.Millisecond)
	}
	ev := next(t, events)
	if ev.Err != nil {
		t.Fatal(ev.Err)
	}
	wantHosts(t, ev.Settings, "a.com:443", "nt.com:443")
	quiet(t, events, 700*time.Millisecond)
}

func TestWatchTouchWithoutChangeIsQuiet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, path, hostsFile("a.com:443"))
	_, events := startWatch(t, path)
	writeFile(t, path, hostsFile("a.com:443"))
	quiet(t, events, 5*testDebounce)
}

func TestWatchMissingFolderAndFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "not", "yet", "config.toml")
	w, events := startWatch(t, path)
	s := w.Current()
	if s == nil || s.Provider != ProviderDirect || s.NetworkProfile != NetworkAllowlist || len(s.NetworkHosts) != 0 {
		t.Fatalf("Current = %+v, want the defaults for a machine with no settings yet", s)
	}
	writeFile(t, path, hostsFile("a.com:443"))
	wantHosts(t, next(t, events).Settings, "a.com:443")
}

func TestWatchBrokenAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, path, "sandbox_provider = \"seatbelt\"\n")
	w, events := startWatch(t, path)
	if w.Current() != nil {
		t.Fatalf("Current = %+v for a file broken from the start; want nil (no settings, no sessions)", w.Current())
	}
	var pe *ProblemsError
	if !errors.As(w.Err(), &pe) {
		t.Fatalf("Err = %v, want a *ProblemsError", w.Err())
	}
	writeFile(t, path, "sandbox_provider = \"linux\"\n")
	ev := next(t, events)
	if ev.Err != nil || ev.Settings.Provider != ProviderLinux || w.Current().Provider != ProviderLinux {
		t.Fatalf("after fix: %+v %v", ev.Settings, ev.Err)
	}
}

func TestWatchStops(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	ctx, cancel := context.WithCancel(context.Background())
	w, err := Watch(ctx, path, "linux", testDebounce)
	if err != nil {
		t.Fatal(err)
	}
	events, _ := w.Subscribe()
	gone, unsubscribe := w.Subscribe()
	unsubscribe()
	if _, ok := <-gone; ok {
		t.Error("cancelled subscription still open")
	}
	cancel()
	select {
	case _, ok := <-events:
		if ok {
			t.Error("event after cancel")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("subscription not closed when the context ended")
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	if err := w.Close(); err != nil {
		t.Error("second Close:", err)
	}
	late, _ := w.Subscribe()
	if _, ok := <-late; ok {
		t.Error("subscription after Close is open")
	}
}
