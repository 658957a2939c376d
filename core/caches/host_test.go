package caches

import (
	"os"
	"path/filepath"
	"testing"
)

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	mkdirs(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

// The person's download cache is found where the go command outside finds GOMODCACHE.
func TestGoDownloads(t *testing.T) {
	home := t.TempDir()
	dl := func(mod string) string { return filepath.Join(mod, "cache", "download") }
	def := filepath.Join(home, "go", "pkg", "mod")
	fromEnv := filepath.Join(home, "envcache")
	fromFile := filepath.Join(home, "filecache")
	gopath := filepath.Join(home, "gp")
	mkdirs(t, dl(def), dl(fromEnv), dl(fromFile), dl(filepath.Join(gopath, "pkg", "mod")))
	writeFile(t, filepath.Join(home, ".config", "go", "env"), "GOMODCACHE="+fromFile+"\n", 0o644)
	writeFile(t, filepath.Join(home, "other-env"), "# go env -w\nGOPATH="+gopath+"\n", 0o644)
	for _, tt := range []struct {
		name string
		env  []string
		goos string
		want string
	}{
		{"environment_first", []string{"GOMODCACHE=" + fromEnv}, "linux", dl(fromEnv)},
		{"then_go_env_file", nil, "linux", dl(fromFile)},
		{"goenv_names_the_file", []string{"GOENV=" + filepath.Join(home, "other-env")}, "linux", dl(filepath.Join(gopath, "pkg", "mod"))},
		{"goenv_off", []string{"GOENV=off"}, "linux", dl(def)},
		{"gopath_first_folder", []string{"GOENV=off", "GOPATH=" + gopath + ":/elsewhere"}, "linux", dl(filepath.Join(gopath, "pkg", "mod"))},
		{"mac_settings_folder", nil, "darwin", dl(def)}, // the file is under Library/Application Support there
		{"relative_is_none", []string{"GOMODCACHE=rel"}, "linux", ""},
		{"missing_is_none", []string{"GOMODCACHE=" + filepath.Join(home, "none")}, "linux", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := GoDownloads(tt.env, home, tt.goos); got != tt.want {
				t.Errorf("GoDownloads = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGoProxy(t *testing.T) {
	for _, tt := range []struct{ downloads, then, want string }{
		{"/home/u/go/pkg/mod/cache/download", "https://proxy.example,direct", "file:///home/u/go/pkg/mod/cache/download,https://proxy.example,direct"},
		{"/home/u/my cache/download", "off", "file:///home/u/my%20cache/download,off"},
		{"/home/u/a,b/download", "direct", ""},                         // a comma would split the list
		{"/home/u/go/download", "https://me:secret@proxy.example", ""}, // credentials stay out
		{"", "direct", ""},
		{"/home/u/go/download", "", ""}, // what the session's go would do without it is not known
	} {
		if got := GoProxy(tt.downloads, tt.then); got != tt.want {
			t.Errorf("GoProxy(%q, %q) = %q, want %q", tt.downloads, tt.then, got, tt.want)
		}
	}
}

// The go a session runs is found on its PATH; one in a folder a session may write is not
// believed, and neither is its go.env.
func TestFindGo(t *testing.T) {
	root := t.TempDir()
	goroot := filepath.Join(root, "usr", "local", "go")
	writeFile(t, filepath.Join(goroot, "bin", "go"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(goroot, "go.env"), "# defaults\nGOPROXY=https://proxy.example,direct\nGOSUMDB=sum.example\n", 0o644)
	bin := filepath.Join(root, "bin")
	mkdirs(t, bin)
	if err := os.Symlink(filepath.Join(goroot, "bin", "go"), filepath.Join(bin, "go")); err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(root, "project")
	writeFile(t, filepath.Join(project, "bin", "go"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(project, "bin", "x"), "", 0o644)

	gb, gr := FindGo([]string{filepath.Join(root, "nothing"), bin}, []string{project})
	if gb != filepath.Join(goroot, "bin", "go") || gr != goroot {
		t.Fatalf("FindGo = %q %q", gb, gr)
	}
	if p := GoRootProxy(gr); p != "https://proxy.example,direct" {
		t.Fatalf("GoRootProxy = %q", p)
	}
	if gb, _ := FindGo([]string{filepath.Join(project, "bin"), bin}, []string{project}); gb != "" {
		t.Fatalf("a go in a writable folder was taken: %q", gb)
	}
	if gb, _ := FindGo([]string{"relative", filepath.Join(root, "nothing")}, nil); gb != "" {
		t.Fatalf("found %q where there is none", gb)
	}
}
