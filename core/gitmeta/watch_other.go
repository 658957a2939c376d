//go:build !linux

package gitmeta

type watcher struct{}

// Watch returns ErrNoWatch: on this system the checks after each command and on a timer
// find what changed.
func Watch(roots []string) (*Watcher, error) { return nil, ErrNoWatch }

// Unwatched says nothing here: there is no watcher.
func (w *Watcher) Unwatched() string { return "" }

// Close does nothing here.
func (w *Watcher) Close() {}

// Settle says nothing here: there is no watcher, and every check walks.
func (w *Watcher) Settle() (told uint64, whole bool) { return 0, false }
