// Package tcc says which of a session's folders macOS guards with a permission of its own
// (Transparency, Consent and Control: the Documents, Desktop and Downloads folders, iCloud
// Drive, and removable and network volumes), whether the app was refused one, and what to
// tell the person. A command in the
// sandbox that touches such a folder is refused with "Operation not permitted" when the person
// has not allowed OpenWorker, and the wall's own reports say nothing of it; the app probes
// the folders itself when a session starts, which also asks the person up front.
//
// The decision is plain path logic, tested on every OS; only macOS refuses anything.
package tcc

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Area is a folder of the home folder that macOS guards.
type Area struct {
	Name string // what System Settings calls it: "Documents folder"
	Path string // absolute
}

// areas are the guarded folders, relative to the home folder.
var areas = []struct{ rel, name string }{
	{"Desktop", "Desktop folder"},
	{"Documents", "Documents folder"},
	{"Downloads", "Downloads folder"},
	{"Library/Mobile Documents", "iCloud Drive"},
}

// volumes is where macOS mounts other disks: removable and network volumes, each guarded on
// its own since macOS 10.15 (a project on an external SSD is on one). Which of the two a
// volume is, its path does not say; the person finds both under Files and Folders.
const volumes = "/Volumes"

// UsageKeys are the Info.plist keys whose text macOS shows when it asks the person for each
// guarded place (iCloud Drive has none of its own): the app's Info.plist must have each.
var UsageKeys = []string{
	"NSDesktopFolderUsageDescription", "NSDocumentsFolderUsageDescription", "NSDownloadsFolderUsageDescription",
	"NSRemovableVolumesUsageDescription", "NSNetworkVolumesUsageDescription",
}

// Where is where a person allows OpenWorker a guarded folder.
const Where = "System Settings ▸ Privacy & Security ▸ Files and Folders (or Full Disk Access)"

// Guarded returns the guarded areas a session folder reaches: the area it is in, or those
// inside it (a session of the whole home folder reaches all four of it), or the removable or
// network volume it lies on. folder and home are absolute and clean.
func Guarded(home, folder string) []Area {
	if !filepath.IsAbs(folder) {
		return nil
	}
	var out []Area
	for _, a := range areas {
		if home == "" {
			break
		}
		p := filepath.Join(home, a.rel)
		if within(folder, p) || within(p, folder) {
			out = append(out, Area{Name: a.name, Path: p})
		}
	}
	if rest, ok := strings.CutPrefix(folder, volumes+"/"); ok && rest != "" {
		name, _, _ := strings.Cut(rest, "/")
		vol := filepath.Join(volumes, name)
		out = append(out, Area{Name: "removable or network volume " + vol, Path: vol})
	}
	return out
}

// within reports whether path is dir or under it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// Refusal is a session folder macOS does not let OpenWorker use.
type Refusal struct {
	Folder string `json:"folder"` // the session's folder
	Area   string `json:"area"`   // "Documents folder"
	// Message says what happened and where to allow it, for the session's result and notice.
	Message string `json:"message"`
}

// Probe opens each guarded place the folders reach, with open (OpenForListing in the app),
// and returns those macOS refused. Only EPERM, macOS's answer for a guarded folder the app
// is not allowed, is a refusal: a folder that is missing or unreadable for its file
// permissions (EACCES) fails the session's commands with its own clear error.
func Probe(home string, folders []string, open func(path string) error) []Refusal {
	var out []Refusal
	seen := map[string]bool{}
	for _, f := range folders {
		for _, a := range Guarded(home, f) {
			// Probe the folder itself when it is inside the area, else the area inside it.
			target := f
			if within(a.Path, f) {
				target = a.Path
			}
			if seen[target] {
				continue
			}
			seen[target] = true
			if err := open(target); errors.Is(err, syscall.EPERM) {
				out = append(out, Refusal{Folder: target, Area: a.Name, Message: Message(home, target, a.Name)})
			}
		}
	}
	return out
}

// Message says that macOS refused OpenWorker folder, what that does to the session, and
// where to allow it.
func Message(home, folder, area string) string {
	return "macOS does not let OpenWorker use " + tilde(home, folder) + " (in the " + area + "): commands in this session fail there with \"Operation not permitted\". " +
		"Allow OpenWorker in " + Where + ", then run them again (Full Disk Access applies once OpenWorker restarts)."
}

func tilde(home, p string) string {
	if home != "" && within(p, home) {
		return "~" + strings.TrimPrefix(p, home)
	}
	return p
}

// OpenForListing opens a folder and reads one name from it, as listing it does: macOS
// refuses the reading of a guarded folder (and asks the person, the first time) even where
// it lets the folder itself be opened.
func OpenForListing(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); err != nil && err != io.EOF {
		return err
	}
	return nil
}
