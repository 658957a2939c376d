package presenter

// backendSettings changes the settings through the backend's store: in force at once, then
// written to the settings file keeping the rest of it, or kept pending while the file has
// problems (the settings screen then says so).
type backendSettings struct{ b SettingsEditor }

var _ SettingsEditor = backendSettings{}

func (s backendSettings) SetProvider(word string) error {
	return pendingIsDone(s.b.SetProvider(word))
}
func (s backendSettings) SetNetworkProfile(word string) error {
	return pendingIsDone(s.b.SetNetworkProfile(word))
}
func (s backendSettings) SetApprovals(word string) error {
	return pendingIsDone(s.b.SetApprovals(word))
}
func (s backendSettings) SetGitMetadata(word string) error {
	return pendingIsDone(s.b.SetGitMetadata(word))
}
func (s backendSettings) SetToolchain(path string, on bool) error {
	return pendingIsDone(s.b.SetToolchain(path, on))
}
