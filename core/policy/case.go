package policy

import (
	"os"
	"path/filepath"
	"strings"
)

// caseInsensitive says that the file systems here find a name in any letter case (macOS's
// APFS and HFS+, unless made case-sensitive): a path then has one spelling on disk and many
// that reach it.
var caseInsensitive = false

// onDiskCase returns the resolved path p spelled as its folders are on disk, where names are
// found in any case: rules written for the path (a Seatbelt profile's) then begin as the
// paths the system reports do. Each name is looked up among its folder's entries; one
// that cannot be read is kept as it is.
func onDiskCase(p string) string {
	if !caseInsensitive || !filepath.IsAbs(p) {
		return p
	}
	out := "/"
	for _, name := range strings.Split(strings.Trim(p, "/"), "/") {
		if name == "" {
			continue
		}
		out = filepath.Join(out, spelled(out, name))
	}
	return out
}

// spelled is name as the folder dir spells it: the entry that is name in another case, when
// there is no entry by name itself.
func spelled(dir, name string) string {
	f, err := os.Open(dir)
	if err != nil {
		return name
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return name
	}
	found := name
	for _, n := range names {
		if n == name {
			return name
		}
		if found == name && strings.EqualFold(n, name) {
			found = n
		}
	}
	return found
}
