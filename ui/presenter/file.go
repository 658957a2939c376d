package presenter

import "github.com/openworker/openworker/core/config"

// FileSettings changes the settings by editing the settings file, as a person would: the
// backend's store watches the file and takes the change when it reloads. It is the editor for
// settings that the backend has no call for yet; the file's own checks apply, and a file with
// problems is not touched.
type FileSettings struct {
	Path string
	GOOS string
}

var _ SettingsEditor = FileSettings{}

func (f FileSettings) set(key, value string) error {
	return config.Update(f.Path, f.GOOS, func(e *config.Editor) error { return e.SetString(key, value) })
}

func (f FileSettings) SetProvider(word string) error { return f.set(config.KeyProvider, word) }
func (f FileSettings) SetNetworkProfile(word string) error {
	return f.set(config.KeyNetworkProfile, word)
}
func (f FileSettings) SetApprovals(word string) error { return f.set(config.KeyApprovals, word) }

func (f FileSettings) SetToolchain(path string, on bool) error {
	return config.Update(f.Path, f.GOOS, func(e *config.Editor) error {
		if on {
			return e.AddToolchain(path)
		}
		return e.RemoveToolchain(path)
	})
}
