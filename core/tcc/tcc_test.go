package tcc

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestGuarded(t *testing.T) {
	home := "/Users/ann"
	tests := []struct {
		folder string
		want   []string
	}{
		{"/Users/ann/Documents/specs", []string{"Documents folder"}},
		{"/Users/ann/Documents", []string{"Documents folder"}},
		{"/Users/ann/Desktop/x", []string{"Desktop folder"}},
		{"/Users/ann/Downloads", []string{"Downloads folder"}},
		{"/Users/ann/Library/Mobile Documents/com~apple~CloudDocs/p", []string{"iCloud Drive"}},
		{"/Users/ann", []string{"Desktop folder", "Documents folder", "Downloads folder", "iCloud Drive"}},
		{"/Users/ann/code/project", nil},
		{"/Users/ann/Documents-old", nil}, // a sibling with the same prefix is not inside
		{"/Users/ann/Library/Caches", nil},
		{"/tmp/Documents", nil},
		{"relative/Documents", nil},
		// Other disks: removable and network volumes are guarded on their own.
		{"/Volumes/Work/data", []string{"removable or network volume /Volumes/Work"}},
		{"/Volumes/My Passport", []string{"removable or network volume /Volumes/My Passport"}},
		{"/Volumes", nil},
		{"/Volumesque/x", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, a := range Guarded(home, tt.folder) {
			got = append(got, a.Name)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Guarded(%q) = %q, want %q", tt.folder, got, tt.want)
		}
	}
}

func TestProbe(t *testing.T) {
	home := "/Users/ann"
	refused := map[string]error{
		"/Users/ann/Documents/specs": syscall.EPERM, // macOS: not allowed
		"/Users/ann/Downloads":       syscall.EPERM,
		"/Users/ann/Desktop/x":       syscall.EACCES, // plain file permissions: not macOS's guard
	}
	var opened []string
	open := func(p string) error {
		opened = append(opened, p)
		if err, ok := refused[p]; ok {
			return &fs.PathError{Op: "open", Path: p, Err: err}
		}
		return nil
	}
	got := Probe(home, []string{"/Users/ann/code/project", "/Users/ann/Documents/specs", "/Users/ann/Desktop/x", "/Users/ann"}, open)
	// Each guarded place once; the project folder is not probed at all.
	wantOpened := []string{"/Users/ann/Documents/specs", "/Users/ann/Desktop/x", "/Users/ann/Desktop", "/Users/ann/Documents", "/Users/ann/Downloads", "/Users/ann/Library/Mobile Documents"}
	if !slices.Equal(opened, wantOpened) {
		t.Errorf("opened %q, want %q", opened, wantOpened)
	}
	if len(got) != 2 || got[0].Folder != "/Users/ann/Documents/specs" || got[1].Folder != "/Users/ann/Downloads" {
		t.Fatalf("Probe = %+v, want the refused Documents/specs and Downloads", got)
	}
	msg := got[0].Message
	for _, want := range []string{"~/Documents/specs", "Documents folder", "Operation not permitted", "Privacy & Security ▸ Files and Folders", "Full Disk Access"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not say %q: %s", want, msg)
		}
	}
}

// The probe's real opener: a folder it may list passes, a missing one is no refusal, and a
// refusal keeps its errno so Probe can tell macOS's EPERM from the rest.
func TestOpenForListing(t *testing.T) {
	home := t.TempDir()
	docs := filepath.Join(home, "Documents", "specs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(docs, "a.txt"), []byte("x"), 0o644)
	if err := OpenForListing(docs); err != nil {
		t.Errorf("listing a readable folder: %v", err)
	}
	if err := OpenForListing(filepath.Join(home, "Documents")); err != nil {
		t.Errorf("listing a folder of folders: %v", err)
	}
	empty := filepath.Join(home, "Desktop")
	os.Mkdir(empty, 0o755)
	if err := OpenForListing(empty); err != nil {
		t.Errorf("listing an empty folder: %v", err)
	}
	if r := Probe(home, []string{filepath.Join(home, "Downloads", "missing")}, OpenForListing); len(r) != 0 {
		t.Errorf("a missing folder was reported refused: %+v", r)
	}
	// A file is not a folder: reading names fails, but not with EPERM.
	file := filepath.Join(docs, "a.txt")
	if err := OpenForListing(file); err == nil || errors.Is(err, syscall.EPERM) {
		t.Errorf("listing a file: %v, want an error that is not EPERM", err)
	}
}

// A folder the OS refuses for real: made unreadable, and opened by an unprivileged user (the
// test re-runs itself as nobody when it runs as root, who reads everything). The refusal
// reaches the probe with its errno: EACCES, file permissions, which is not macOS's guard.
func TestOpenForListingRefused(t *testing.T) {
	if dir := os.Getenv("TCC_TEST_UNREADABLE"); dir != "" {
		err := OpenForListing(dir)
		if !errors.Is(err, fs.ErrPermission) || !errors.Is(err, syscall.EACCES) {
			t.Fatalf("listing an unreadable folder: %v, want EACCES", err)
		}
		if r := Probe(filepath.Dir(dir), []string{dir}, OpenForListing); len(r) != 0 {
			t.Fatalf("a folder refused by its file permissions was reported as macOS's refusal: %+v", r)
		}
		return
	}
	root := t.TempDir()
	home := filepath.Join(root, "home")
	docs := filepath.Join(home, "Documents")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(root), root, home} {
		os.Chmod(d, 0o755)
	}
	if err := os.Chmod(docs, 0); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		t.Setenv("TCC_TEST_UNREADABLE", docs)
		TestOpenForListingRefused(t)
		return
	}
	// The test binary's own folder is root's alone: nobody runs a copy.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(root, "tcc.test")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestOpenForListingRefused$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TCC_TEST_UNREADABLE="+docs)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

// A session folder on an external disk is probed where it is, and a refusal names the
// volume and where to allow it.
func TestProbeVolumes(t *testing.T) {
	open := func(p string) error {
		if p == "/Volumes/Work/data" {
			return &fs.PathError{Op: "open", Path: p, Err: syscall.EPERM}
		}
		return nil
	}
	got := Probe("/Users/ann", []string{"/Volumes/Work/data", "/Volumes/Backup/x"}, open)
	if len(got) != 1 || got[0].Folder != "/Volumes/Work/data" || !strings.Contains(got[0].Message, "removable or network volume /Volumes/Work") ||
		!strings.Contains(got[0].Message, "Files and Folders") {
		t.Fatalf("Probe = %+v", got)
	}
}

// Each guarded place has the Info.plist key whose reason macOS shows when it asks the person.
func TestUsageKeys(t *testing.T) {
	want := []string{"NSDesktopFolderUsageDescription", "NSDocumentsFolderUsageDescription", "NSDownloadsFolderUsageDescription",
		"NSRemovableVolumesUsageDescription", "NSNetworkVolumesUsageDescription"}
	if !slices.Equal(UsageKeys, want) {
		t.Errorf("UsageKeys = %q, want %q", UsageKeys, want)
	}
}
