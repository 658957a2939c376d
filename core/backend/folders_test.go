package backend

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A session folder macOS does not let the app use is told on the session's Access list and
// in a notice when the session starts; the probe itself is the OS's (faked here with macOS's
// answer, EPERM).
func TestFolderRefusedAtStart(t *testing.T) {
	f := newFixture(t, "")
	home := filepath.Dir(f.project)
	docs := filepath.Join(home, "Documents", "specs")
	if err := os.MkdirAll(docs, 0o700); err != nil {
		t.Fatal(err)
	}
	var probed []string
	f.b.opts.Home = home
	f.b.opts.ProbeFolder = func(p string) error {
		probed = append(probed, p)
		if p == docs {
			return &fs.PathError{Op: "open", Path: p, Err: syscall.EPERM}
		}
		return nil
	}
	events, cancel := f.b.Subscribe(false)
	defer cancel()

	plain, err := f.b.Start(context.Background(), Request{Writable: []string{f.project}})
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := f.b.Access(plain.ID); len(a.FoldersRefused) != 0 || len(probed) != 0 {
		t.Errorf("a session outside the guarded folders was probed (%q) or reported: %+v", probed, a.FoldersRefused)
	}

	s, err := f.b.Start(context.Background(), Request{Writable: []string{f.project}, ReadOnly: []string{docs}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.b.Access(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.FoldersRefused) != 1 || a.FoldersRefused[0].Folder != docs {
		t.Fatalf("Access.FoldersRefused = %+v, want %s", a.FoldersRefused, docs)
	}
	if m := a.FoldersRefused[0].Message; !strings.Contains(m, "Privacy & Security") {
		t.Errorf("the refusal does not say where to allow the folder: %s", m)
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case e := <-events:
			if e.Type == FolderRefused && e.Session == s.ID && strings.Contains(e.Message, "~/Documents/specs") {
				return
			}
		case <-deadline:
			t.Fatal("no folder.refused notice for the session")
		}
	}
}
