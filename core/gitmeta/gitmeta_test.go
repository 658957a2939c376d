package gitmeta

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestDangerousKeys(t *testing.T) {
	for _, tc := range []struct {
		name, cfg string
		want      []string
		bad       bool
	}{
		{"plain", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = x\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n", nil, false},
		{"fsmonitor", "[core]\n\tfsmonitor = touch /tmp/x\n", []string{"core.fsmonitor"}, false},
		{"case", "[CORE]\n\tFsMonitor = x\n", []string{"core.fsmonitor"}, false},
		{"same_line", "[core] hooksPath = /x", []string{"core.hookspath"}, false},
		{"subsection", "[diff \"pdf\"]\n\ttextconv = x\n[filter \"lfs\"]\n\tsmudge = y\n", []string{"diff.pdf.textconv", "filter.lfs.smudge"}, false},
		{"old_subsection", "[diff.pdf]\n\ttextconv = x\n", []string{"diff.pdf.textconv"}, false},
		{"include", "[include]\n\tpath = ../x\n[includeIf \"gitdir:/\"]\n\tpath = y\n", []string{"include.path", "includeif.gitdir:/.path"}, false},
		{"bool_key", "[core]\n\tfsmonitor\n", []string{"core.fsmonitor"}, false},
		{"continuation_hides_nothing", "[core]\n\tbare = x \\\n\tfsmonitor = y\n", nil, false},
		{"comment", "# [core] fsmonitor = x\n[core] ; fsmonitor = y\n", nil, false},
		{"credential", "[credential \"https://x\"]\n\thelper = !sh\n", []string{"credential.https://x.helper"}, false},
		{"remote_uploadpack", "[remote \"o\"]\n\tuploadpack = sh -c x\n", []string{"remote.o.uploadpack"}, false},
		{"alias", "[alias]\n\tst = !sh\n", []string{"alias.st"}, false},
		{"bom", "\xef\xbb\xbf[core]\n\tsshCommand = x\n", []string{"core.sshcommand"}, false},
		{"crlf", "[core]\r\n\tpager = x\r\n", []string{"core.pager"}, false},
		{"unterminated_quote", "[core]\n\tbare = \"x\n\tfsmonitor = y\n", nil, true},
		{"garbage", "[core]\n\t=x\n", nil, true},
		{"key_before_section", "fsmonitor = x\n", nil, true},
		// Keys that run programs the deny list of before missed, and any key no list names:
		// a repository made inside may set only what git and everyday tools set.
		{"tar_command", "[tar \"tgz\"]\n\tcommand = sh -c x\n", []string{"tar.tgz.command"}, false},
		{"sendemail_cmd", "[sendemail]\n\tsendmailcmd = x\n[sendemail \"a\"]\n\tsendmailCmd = y\n", []string{"sendemail.sendmailcmd", "sendemail.a.sendmailcmd"}, false},
		{"lfs_transfer", "[lfs \"customtransfer.x\"]\n\tpath = sh\n[lfs \"extension.y\"]\n\tclean = z\n[lfs]\n\turl = https://x\n", []string{"lfs.customtransfer.x.path", "lfs.extension.y.clean"}, false},
		{"worktree_unplaced", "[core]\n\tworktree = /home/me\n", []string{"core.worktree"}, false},
		{"unknown_key", "[frob]\n\tnicate = yes\n", []string{"frob.nicate"}, false},
		{"clone", "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n\tignorecase = true\n\tprecomposeunicode = true\n" +
			"[remote \"origin\"]\n\turl = git@github.com:me/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n" +
			"[user]\n\tname = me\n\temail = me@example.com\n[submodule \"lib\"]\n\turl = ../lib\n\tactive = true\n[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic x\n" +
			"[pull]\n\trebase = true\n[push]\n\tautoSetupRemote = true\n[extensions]\n\tworktreeConfig = true\n[lfs]\n\trepositoryformatversion = 0\n", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dangerousKeys([]byte(tc.cfg), "", nil)
			if (err != nil) != tc.bad {
				t.Fatalf("err = %v, want bad = %v", err, tc.bad)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// repo makes a repository folder as git init leaves it, with a hook sample.
func repo(t *testing.T, dir string) string {
	t.Helper()
	g := filepath.Join(dir, ".git")
	for _, d := range []string{"hooks", "objects", "refs/heads"} {
		if err := os.MkdirAll(filepath.Join(g, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(g, "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(g, "config"), "[core]\n\tbare = false\n")
	write(t, filepath.Join(g, "hooks", "pre-commit.sample"), "#!/bin/sh\n")
	return g
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestScanFindsMetadata(t *testing.T) {
	root := t.TempDir()
	a := repo(t, filepath.Join(root, "a"))
	b := repo(t, filepath.Join(root, "deep", "er", "b"))
	write(t, filepath.Join(root, "wt", ".git"), "gitdir: "+a+"/worktrees/wt\n")
	wt := filepath.Join(a, "worktrees", "wt")
	write(t, filepath.Join(wt, "HEAD"), "ref: refs/heads/wt\n")
	write(t, filepath.Join(wt, "config"), "[core]\n")
	if err := os.MkdirAll(filepath.Join(wt, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := Scan([]string{root}, DefaultBounds)
	var got []string
	for _, e := range s.Protect() {
		got = append(got, strings.TrimPrefix(e.Path, root)+" "+string(e.Kind))
	}
	want := []string{
		"/a/.git/config settings file", "/a/.git/hooks hooks folder",
		"/a/.git/worktrees/wt/config settings file", "/a/.git/worktrees/wt/hooks hooks folder",
		strings.TrimPrefix(b, root) + "/config settings file", strings.TrimPrefix(b, root) + "/hooks hooks folder",
		"/wt/.git git file",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s.Truncated {
		t.Error("a small tree was cut short")
	}
	// The bounds are kept, and said.
	if s := Scan([]string{root}, Bounds{MaxDepth: 1, MaxEntries: 1000}); !s.Truncated || len(s.Protect()) != 3 {
		t.Errorf("depth 1: truncated %v, %d entries", s.Truncated, len(s.Protect()))
	}
	if s := Scan([]string{root}, Bounds{MaxDepth: 10, MaxEntries: 3}); !s.Truncated {
		t.Error("3 entries: not said to be cut short")
	}
}

func TestCheckMovesPlantedMetadata(t *testing.T) {
	root, q := t.TempDir(), t.TempDir()
	old := repo(t, filepath.Join(root, "old"))
	// The person's own hook and setting, there before the session, stay.
	write(t, filepath.Join(old, "hooks", "pre-push"), "#!/bin/sh\n")
	write(t, filepath.Join(old, "config"), "[core]\n\teditor = vim\n")
	s := Scan([]string{root}, DefaultBounds)

	// A command's benign work moves nothing.
	nw := repo(t, filepath.Join(root, "new"))
	write(t, filepath.Join(nw, "config"), "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = ../x\n")
	// git worktree add: a .git file naming the worktree's folder, whose commondir names
	// the repository's.
	write(t, filepath.Join(root, "wt", ".git"), "gitdir: "+nw+"/worktrees/wt\n")
	write(t, filepath.Join(nw, "worktrees", "wt", "HEAD"), "ref: refs/heads/wt\n")
	write(t, filepath.Join(nw, "worktrees", "wt", "commondir"), "../..\n")
	moved, s := s.Check(DefaultBounds, q)
	if len(moved) != 0 {
		t.Fatalf("benign changes moved: %v", moved)
	}
	// What it plants is moved aside, each named.
	write(t, filepath.Join(nw, "config"), "[core]\n\tbare = false\n\tfsmonitor = touch /tmp/x\n")
	write(t, filepath.Join(nw, "hooks", "post-checkout"), "#!/bin/sh\n")
	write(t, filepath.Join(old, "config"), "[core]\n\teditor = vim\n[diff \"x\"]\n\ttextconv = sh\n")
	if err := os.Symlink("../elsewhere", filepath.Join(root, "linked", ".git")); err != nil {
		os.MkdirAll(filepath.Join(root, "linked"), 0o755)
		if err := os.Symlink("../elsewhere", filepath.Join(root, "linked", ".git")); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(root, "away", ".git"), "gitdir: /somewhere/else\n")
	// A commondir in a repository's folder sends git to settings elsewhere.
	write(t, filepath.Join(old, "commondir"), "evil\n")
	write(t, filepath.Join(old, "evil", "config"), "[core]\n\tfsmonitor = x\n")
	if err := os.Mkdir(filepath.Join(old, "evil", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A .git file that names a folder that is not a repository's yet (git clone writes it
	// first) is looked at again until it is one.
	write(t, filepath.Join(root, "cloning", ".git"), "gitdir: "+filepath.Join(root, "modules", "sub")+"\n")
	moved, s = s.Check(DefaultBounds, q)
	var got []string
	for _, m := range moved {
		if m.Err != nil || m.To == "" {
			t.Errorf("%s", m)
		}
		if _, err := os.Lstat(m.Path); err == nil {
			t.Errorf("%s is still there", m.Path)
		}
		if _, err := os.Lstat(m.To); err != nil {
			t.Errorf("%s is not in quarantine: %v", m.Path, err)
		}
		got = append(got, strings.TrimPrefix(m.Path, root)+": "+m.Why)
	}
	want := []string{
		"/away/.git: it names /somewhere/else, outside the session's writable folders",
		"/linked/.git: a symlink or special file where git reads metadata",
		"/new/.git/config: it sets core.fsmonitor",
		"/new/.git/hooks/post-checkout: a new hook",
		"/old/.git/commondir: it names " + old + "/evil, which is not a repository folder the check reads",
		"/old/.git/config: it sets diff.x.textconv",
	}
	if !slices.Equal(got, want) {
		t.Errorf("moved\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(filepath.Join(old, "hooks", "pre-push")); err != nil {
		t.Errorf("the person's own hook was moved: %v", err)
	}
	if moved, _ := s.Check(DefaultBounds, q); len(moved) != 0 {
		t.Errorf("a second check moved %v", moved)
	}
	// Once it names a repository's folder the walk does not read, it is moved.
	sub := filepath.Join(root, "modules", "sub")
	write(t, filepath.Join(sub, "HEAD"), "ref: refs/heads/main\n")
	if err := os.Mkdir(filepath.Join(sub, "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	if moved, _ := s.Check(DefaultBounds, q); len(moved) != 0 {
		t.Errorf("a .git file naming a repository's folder the walk reads was moved: %v", moved)
	}
	// One that names a folder the walk does not read (inside a .git) is moved once git
	// would take it for a repository's folder, not before.
	hidden := filepath.Join(old, "hidden")
	write(t, filepath.Join(root, "later", ".git"), "gitdir: "+hidden+"\n")
	moved, s = s.Check(DefaultBounds, q)
	if len(moved) != 0 {
		t.Errorf("moved before it named a repository's folder: %v", moved)
	}
	write(t, filepath.Join(hidden, "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(hidden, "config"), "[core]\n\tfsmonitor = x\n")
	if err := os.Mkdir(filepath.Join(hidden, "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	if moved, _ = s.Check(DefaultBounds, q); len(moved) != 1 || moved[0].Path != filepath.Join(root, "later", ".git") {
		t.Errorf("once it names a repository's folder the walk does not read: moved %v", moved)
	}
}

// BenchmarkCheck measures the check after each command over a project of 2,000 folders and
// 20,000 files holding 5 repositories, which is what a command's result waits for.
func BenchmarkCheck(b *testing.B) {
	root, q := b.TempDir(), b.TempDir()
	s := benchTree(b, root)
	b.ResetTimer()
	for b.Loop() {
		moved, _ := s.Check(DefaultBounds, q)
		if len(moved) != 0 {
			b.Fatal(moved)
		}
	}
}

// BenchmarkFirstWalk measures a session's first walk of the same project, which its wall
// waits for: in full, and from the walk an earlier session kept.
func BenchmarkFirstWalk(b *testing.B) {
	root := b.TempDir()
	kept, err := DecodeFolders(benchTree(b, root).EncodeFolders(), DefaultBounds)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			Scan([]string{root}, DefaultBounds)
		}
	})
	b.Run("from-kept", func(b *testing.B) {
		for b.Loop() {
			ScanFrom([]string{root}, DefaultBounds, kept)
		}
	})
}

// benchTree makes the project the benchmarks walk under root, old enough for its folders'
// stamps to be trusted, and returns a walk of it.
func benchTree(b *testing.B, root string) *Snapshot {
	tb := &testing.T{}
	for r := 0; r < 5; r++ {
		repo(tb, filepath.Join(root, "repo"+itoa(int64(r))))
	}
	for d := 0; d < 2000; d++ {
		dir := filepath.Join(root, "repo0", "node_modules", "p"+itoa(int64(d/50)), "d"+itoa(int64(d)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 10; f++ {
			if err := os.WriteFile(filepath.Join(dir, "f"+itoa(int64(f))), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Folders as old as a project's usually are: most of them trusted unchanged.
	time.Sleep(racyWindow)
	s := Scan([]string{root}, DefaultBounds)
	if s.Truncated {
		b.Fatal("the tree is over the bounds")
	}
	return s
}

// Where the quarantine lies on another file system, a copy is kept and the file removed.
func TestCheckAcrossFileSystems(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "gitmeta")
	if err != nil {
		t.Skipf("no second file system here: %v", err)
	}
	defer os.RemoveAll(shm)
	root := t.TempDir()
	s := Scan([]string{root}, DefaultBounds)
	g := repo(t, filepath.Join(root, "r"))
	write(t, filepath.Join(g, "hooks", "pre-commit"), "#!/bin/sh\necho planted\n")
	if err := os.Symlink("/etc/passwd", filepath.Join(g, "config.worktree")); err != nil {
		t.Fatal(err)
	}
	moved, _ := s.Check(DefaultBounds, shm)
	if len(moved) != 2 {
		t.Fatalf("moved %v", moved)
	}
	for _, m := range moved {
		if m.Err != nil || m.To == "" {
			t.Fatalf("%s", m)
		}
		if _, err := os.Lstat(m.Path); err == nil {
			t.Errorf("%s is still there", m.Path)
		}
		b, err := os.ReadFile(m.To)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[Kind]string{Hook: "#!/bin/sh\necho planted\n", Link: "a symlink to /etc/passwd\n"}[m.Kind]; string(b) != want {
			t.Errorf("%s kept as %q, want %q", m.Path, b, want)
		}
	}
}

// withRacyWindow shortens the time after which a folder's stamp is trusted, for tests that
// would otherwise wait seconds for their folders to age.
func withRacyWindow(t *testing.T, d time.Duration) {
	t.Helper()
	old := racyWindow
	racyWindow = d
	t.Cleanup(func() { racyWindow = old })
}

// A folder whose stamp is unchanged is not read again (BenchmarkCheck): whatever a command
// does to the folders — planting deep in an old tree, renaming a folder away and making
// another in its place, a link in the place of a folder, setting a folder's times back — its
// plants are found all the same, right after the command and on a tree whose folders are
// old enough to be trusted.
func TestCheckOnATrustedTree(t *testing.T) {
	if _, ok := trustsStamps(openOrFail(t, t.TempDir())); !ok {
		t.Skip("the temporary folder's file system is not trusted: every folder is read")
	}
	withRacyWindow(t, 200*time.Millisecond)
	root, q := t.TempDir(), t.TempDir()
	deep := filepath.Join(root, "a", "b", "c", "d")
	os.MkdirAll(deep, 0o755)
	os.MkdirAll(filepath.Join(root, "m", "n"), 0o755)
	os.MkdirAll(filepath.Join(root, "p", "q"), 0o755)
	os.MkdirAll(filepath.Join(root, "t", "u"), 0o755)
	old := repo(t, filepath.Join(root, "old"))
	age := func() { time.Sleep(300 * time.Millisecond) }
	age()
	s := Scan([]string{root}, DefaultBounds)
	if len(s.dirs) < 10 {
		t.Fatalf("the scan trusted %d folders of an old tree", len(s.dirs))
	}
	moved, s := s.Check(DefaultBounds, q)
	if len(moved) != 0 {
		t.Fatalf("nothing changed, yet %v", moved)
	}
	age()

	// Planted right after the last check.
	write(t, filepath.Join(deep, "new", ".git", "hooks", "post-checkout"), "#!/bin/sh\n")
	write(t, filepath.Join(deep, "new", ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(old, "hooks", "post-merge"), "#!/bin/sh\n")
	// m renamed away, and a repository made where it was.
	if err := os.Rename(filepath.Join(root, "m"), filepath.Join(root, "m2")); err != nil {
		t.Fatal(err)
	}
	repo(t, filepath.Join(root, "m", "n"))
	write(t, filepath.Join(root, "m", "n", ".git", "config"), "[core]\n\tfsmonitor = x\n")
	// p's place taken by a link to a folder holding a repository's settings file.
	os.Rename(filepath.Join(root, "p"), filepath.Join(root, "p-real"))
	os.Symlink("p-real", filepath.Join(root, "p"))
	write(t, filepath.Join(root, "p-real", "q", ".git"), "gitdir: /elsewhere\n")
	// A .git file planted in t/u, whose times are then set back to what they were.
	fi, err := os.Stat(filepath.Join(root, "t", "u"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "t", "u", ".git"), "gitdir: /elsewhere\n")
	os.Chtimes(filepath.Join(root, "t", "u"), fi.ModTime(), fi.ModTime())
	os.Chtimes(filepath.Join(root, "t"), fi.ModTime(), fi.ModTime())

	moved, s = s.Check(DefaultBounds, q)
	var got []string
	for _, m := range moved {
		got = append(got, strings.TrimPrefix(m.Path, root))
	}
	slices.Sort(got)
	want := []string{"/a/b/c/d/new/.git/hooks/post-checkout", "/m/n/.git/config", "/old/.git/hooks/post-merge", "/p-real/q/.git", "/t/u/.git"}
	if !slices.Equal(got, want) {
		t.Errorf("moved %q, want %q", got, want)
	}

	// And planted within the same clock tick as a check's read of the folder: a folder
	// changed that lately is read again next time, whatever its stamp.
	age()
	write(t, filepath.Join(root, "a", "file"), "")
	if moved, s = s.Check(DefaultBounds, q); len(moved) != 0 {
		t.Fatalf("a plain file moved %v", moved)
	}
	write(t, filepath.Join(root, "a", ".git"), "gitdir: /elsewhere\n")
	if moved, _ = s.Check(DefaultBounds, q); len(moved) != 1 || moved[0].Path != filepath.Join(root, "a", ".git") {
		t.Fatalf("a .git planted right after a check read its folder: moved %v", moved)
	}
}

func openOrFail(t *testing.T, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// A walk kept from an earlier one (another run's, read back) spares the next first walk the
// folders that have not changed, and hides nothing that changed since: a repository made
// after it, a hook added to a repository it saw.
func TestScanFromAnEarlierWalk(t *testing.T) {
	if _, ok := trustsStamps(openOrFail(t, t.TempDir())); !ok {
		t.Skip("the temporary folder's file system is not trusted: every folder is read")
	}
	withRacyWindow(t, 200*time.Millisecond)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "a", "b", "c"), 0o755)
	old := repo(t, filepath.Join(root, "old"))
	time.Sleep(300 * time.Millisecond)
	first := Scan([]string{root}, DefaultBounds)
	kept, err := DecodeFolders(first.EncodeFolders(), DefaultBounds)
	if err != nil || len(kept.dirs) != len(first.dirs) || len(kept.dirs) < 5 {
		t.Fatalf("read back %d of %d folders: %v", len(kept.dirs), len(first.dirs), err)
	}
	for path, f := range first.dirs {
		if k := kept.dirs[path]; k == nil || k.st != f.st || k.n != f.n || !slices.Equal(k.subdirs, f.subdirs) || k.git != f.git || k.repo != f.repo {
			t.Errorf("%s read back as %+v, was %+v", path, k, f)
		}
	}

	repo(t, filepath.Join(root, "a", "b", "c", "new"))
	write(t, filepath.Join(old, "hooks", "post-checkout"), "#!/bin/sh\n")
	next := ScanFrom([]string{root}, DefaultBounds, kept)
	var found []string
	for _, e := range next.Protect() {
		found = append(found, strings.TrimPrefix(e.Path, root))
	}
	for _, want := range []string{"/a/b/c/new/.git/config", "/a/b/c/new/.git/hooks", "/old/.git/config", "/old/.git/hooks"} {
		if !slices.Contains(found, want) {
			t.Errorf("the walk from a kept one missed %s: %q", want, found)
		}
	}
	if !slices.ContainsFunc(next.Entries, func(e Entry) bool { return e.Path == filepath.Join(old, "hooks", "post-checkout") && e.Kind == Hook }) {
		t.Errorf("the hook added since was not seen: %v", next.Entries)
	}
	// A walk of other folders takes nothing of it.
	other := t.TempDir()
	repo(t, filepath.Join(other, "r"))
	if got := ScanFrom([]string{other}, DefaultBounds, kept); len(got.Protect()) != 2 {
		t.Errorf("a walk of %s found %v", other, got.Entries)
	}
}

// What is read back is checked: any other bytes, a record a walk would not write, more
// folders than a walk reads.
func TestDecodeFoldersRefuses(t *testing.T) {
	root := t.TempDir()
	repo(t, filepath.Join(root, "r"))
	good := (&Snapshot{roots: []string{root}, dirs: map[string]*folder{root: {n: 1, subdirs: []string{"r"}}}}).EncodeFolders()
	if _, err := DecodeFolders(good, DefaultBounds); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-1],
		"longer":    append(append([]byte(nil), good...), 0),
		"version":   append([]byte{foldersVersion + 1}, good[1:]...),
		"relative":  (&Snapshot{roots: []string{root}, dirs: map[string]*folder{"rel": {}}}).EncodeFolders(),
		"dotdot":    (&Snapshot{roots: []string{root}, dirs: map[string]*folder{root: {subdirs: []string{".."}}}}).EncodeFolders(),
		"slash":     (&Snapshot{roots: []string{root}, dirs: map[string]*folder{root: {subdirs: []string{"a/b"}}}}).EncodeFolders(),
		"dotgit":    (&Snapshot{roots: []string{root}, dirs: map[string]*folder{root: {subdirs: []string{".git"}}}}).EncodeFolders(),
		"type":      (&Snapshot{roots: []string{root}, dirs: map[string]*folder{root: {git: 200}}}).EncodeFolders(),
	} {
		if _, err := DecodeFolders(data, DefaultBounds); err == nil {
			t.Errorf("%s: read back", name)
		}
	}
	many := &Snapshot{roots: []string{root}, dirs: map[string]*folder{}}
	for i := 0; i < 11; i++ {
		many.dirs[filepath.Join(root, itoa(int64(i+1)))] = &folder{}
	}
	if _, err := DecodeFolders(many.EncodeFolders(), Bounds{MaxDepth: 10, MaxEntries: 10}); err == nil {
		t.Errorf("more folders than the bounds read back")
	}
}

// Every repository's own folder, the folder that holds it or a .git file, and every folder
// between that and its root are anchored; nothing else is, and the root is not.
func TestAnchors(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{".git/hooks", "a/b/.git/hooks", "a/c", "w/x", "plain/deep"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".git/HEAD", "a/b/.git/HEAD"} {
		os.WriteFile(filepath.Join(root, f), []byte("ref: refs/heads/main\n"), 0o644)
	}
	os.WriteFile(filepath.Join(root, "w/x/.git"), []byte("gitdir: "+filepath.Join(root, ".git", "worktrees", "x")+"\n"), 0o644)
	var got []string
	for _, a := range Scan([]string{root}, DefaultBounds).Anchors() {
		rel, _ := filepath.Rel(root, a.Path)
		got = append(got, rel)
		if a.Ino == 0 {
			t.Errorf("%s has no inode", rel)
		}
	}
	slices.Sort(got)
	want := []string{".git", "a", "a/b", "a/b/.git", "w", "w/x"}
	if !slices.Equal(got, want) {
		t.Fatalf("anchors %q, want %q", got, want)
	}
}

// core.worktree names the folder git works on: a submodule's names its checkout, inside the
// writable folders; one that names a folder outside them (the home folder) would turn the
// person's git checkout or clean on it.
func TestWorktreeMustStayInside(t *testing.T) {
	inside := func(p string) bool { return within("/w", p) }
	for _, tc := range []struct {
		value string
		ok    bool
	}{
		{"../../../lib", true}, // /w/.git/modules/lib -> /w/lib
		{"/w/lib", true},
		{"../../../../home/me", false},
		{"/home/me", false},
		{"\"../../../lib\"", true},
	} {
		got, err := dangerousKeys([]byte("[core]\n\tworktree = "+tc.value+"\n"), "/w/.git/modules/lib", inside)
		if err != nil || (len(got) == 0) != tc.ok {
			t.Errorf("%s: %q %v", tc.value, got, err)
		}
	}
}

// A command chooses how deep its repositories lie and how many files lie beside them: a
// repository made 11 folders deep, or past 60,000 files the command made (a node_modules),
// is checked as one at the top is; and a walk that must stop says where.
func TestCheckReachesWhatACommandChooses(t *testing.T) {
	root, q := t.TempDir(), t.TempDir()
	s := Scan([]string{root}, DefaultBounds)
	deep := filepath.Join(root, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k")
	repo(t, deep)
	write(t, filepath.Join(deep, ".git", "config"), "[core]\n\tfsmonitor = x\n")
	many := filepath.Join(root, "a", "node_modules")
	if err := os.MkdirAll(many, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 60_000 {
		f, err := os.Create(filepath.Join(many, "f"+itoa(int64(i))))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	beside := filepath.Join(root, "z")
	repo(t, beside)
	write(t, filepath.Join(beside, ".git", "config"), "[core]\n\tfsmonitor = y\n")
	moved, next := s.Check(DefaultBounds, q)
	var got []string
	for _, m := range moved {
		got = append(got, strings.TrimPrefix(m.Path, root))
	}
	want := []string{"/a/b/c/d/e/f/g/h/i/j/k/.git/config", "/z/.git/config"}
	if !slices.Equal(got, want) || next.Truncated {
		t.Errorf("moved %v (truncated %v), want %v", got, next.Truncated, want)
	}

	// Past the bounds (made small here), the walk says which folder it did not read.
	small := Bounds{MaxDepth: 4, MaxEntries: 1_000_000}
	if s := Scan([]string{root}, small); !s.Truncated || s.Unchecked != filepath.Join(root, "a", "b", "c", "d", "e") {
		t.Errorf("depth 4: truncated %v, unchecked %q", s.Truncated, s.Unchecked)
	}
	small = Bounds{MaxDepth: 256, MaxEntries: 10}
	if s := Scan([]string{root}, small); !s.Truncated || s.Unchecked == "" {
		t.Errorf("10 entries: truncated %v, unchecked %q", s.Truncated, s.Unchecked)
	}
}

// Where names are found in any case (a Mac), a repository whose folder a command spelled
// .GIT is one to git, and so to the walk; elsewhere it is just a folder.
func TestRepositoryInAnotherCase(t *testing.T) {
	defer func(was bool) { caseInsensitive = was }(caseInsensitive)
	root := t.TempDir()
	g := repo(t, filepath.Join(root, "made"))
	if err := os.Rename(g, filepath.Join(root, "made", ".GIT")); err != nil {
		t.Fatal(err)
	}
	withRacyWindow(t, 0)
	time.Sleep(10 * time.Millisecond)
	// This file system finds names in one case only: what is asked of the walk is that it
	// takes the entry for git's, and opens it by git's name, as a Mac's volume then finds.
	made := filepath.Join(root, "made")
	caseInsensitive = false
	if s := Scan([]string{root}, DefaultBounds); s.dirs[made] == nil || s.dirs[made].git != typeNone {
		t.Errorf("case-sensitive: .GIT taken for a repository's folder")
	}
	caseInsensitive = true
	if s := Scan([]string{root}, DefaultBounds); s.dirs[made] == nil || s.dirs[made].git != typeDir {
		t.Errorf("where names are found in any case, .GIT was not taken for a repository's folder")
	}
}

// A linked worktree's and a submodule's repository folders are anchored as a .git is; a
// root that is itself a repository's folder is not (it is the provider's to bind).
func TestAnchorsOfNestedRepositoryFolders(t *testing.T) {
	root := t.TempDir()
	g := repo(t, root)
	for _, d := range []string{"worktrees/wt", "modules/lib"} {
		write(t, filepath.Join(g, d, "HEAD"), "ref: refs/heads/main\n")
		write(t, filepath.Join(g, d, "config"), "[core]\n")
	}
	bare := filepath.Join(t.TempDir(), "bare.git")
	repo(t, bare)
	var got []string
	for _, a := range Scan([]string{root}, DefaultBounds).Anchors() {
		got = append(got, strings.TrimPrefix(a.Path, root))
	}
	want := []string{"/.git", "/.git/modules", "/.git/modules/lib", "/.git/worktrees", "/.git/worktrees/wt"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("anchors %v, want %v", got, want)
	}
	if a := Scan([]string{filepath.Join(bare, ".git")}, DefaultBounds).Anchors(); len(a) != 0 {
		t.Errorf("a root that is a repository's folder is anchored: %v", a)
	}
}

// Where a walk reads repository folders: anywhere but in a .git, where only its worktrees'
// and its submodules' own are read.
func TestWalkReads(t *testing.T) {
	root := t.TempDir()
	lib := filepath.Join(root, ".git", "modules", "lib")
	write(t, filepath.Join(lib, "HEAD"), "ref: refs/heads/main\n")
	if err := os.Mkdir(filepath.Join(lib, "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]bool{
		root + "/src/x":                      true,
		root + "/.git/worktrees/wt":          true,
		root + "/.git/modules/a/b":           true,
		root + "/.git/modules/lib":           true,
		root + "/.git/modules/lib/evil":      false,
		root + "/.git/evil":                  false,
		root + "/.git/worktrees/wt/evil":     false,
		root + "/src/.git/modules/x/.git/y":  false,
		root + "/.git/modules/lib/modules/z": false,
	} {
		if got := walkReads(dir); got != want {
			t.Errorf("walkReads(%s) = %v, want %v", strings.TrimPrefix(dir, root), got, want)
		}
	}
}
