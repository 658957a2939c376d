package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/openworker/openworker/core/policy"
)

// Event tells a subscriber what a reload found.
type Event struct {
	// Settings are the settings in force after the reload: the new ones when Err is nil,
	// otherwise the last good ones, unchanged (nil if the file has never been valid).
	Settings *Settings
	// Err says why the file as it now stands was not taken: a *ProblemsError for a file that
	// does not validate, or an error for a file that was deleted or cannot be read.
	Err error
}

// Watcher keeps the settings file's last good contents current as the user edits it.
//
// It watches the file's folder, not the file, because editors save by writing a new file and
// renaming it over the old one, and some delete and recreate it; a watch on the file itself
// would go quiet after the first such save. Events in a burst are merged: the file is read
// once the folder has been quiet for the debounce interval. A reload is validated completely
// before it replaces the settings in force. A file that goes bad, or is deleted, never brings
// back the defaults (or an open network): the last good settings stay until the file is
// valid again. Only when the file is missing at the very start do the defaults apply, as on
// a machine where the user has not chosen anything yet.
//
// A settings file that is a symlink (into a dotfiles folder) is followed: the folder of every
// link on the way and of the file it leads to is watched too, so an edit where the file
// really lies is seen, and a link pointed elsewhere moves the watch with it.
type Watcher struct {
	path     string
	goos     string
	debounce time.Duration

	current atomic.Pointer[Settings]
	fsw     *fsnotify.Watcher
	cancel  context.CancelFunc
	done    chan struct{}
	close   sync.Once

	mu      sync.Mutex
	subs    map[int]chan Event
	nextSub int
	closed  bool
	err     error

	// Only the watch loop touches these after start: what the last reload read, the
	// folders watched (resolved, each to the path it is watched by) and the names in them
	// whose events concern the file (see follow).
	lastExists bool
	lastData   []byte
	dirs       map[string]string
	names      map[string]bool
}

// Watch loads the settings file at path and keeps reloading it as it changes until ctx ends
// or Close is called. The file's folder is created (owner-only) when missing, so that a file
// created later is seen. If the file does not validate at the start, Current is nil and Err
// says why until it is fixed: the caller must not run sessions without settings.
func Watch(ctx context.Context, path, goos string, debounce time.Duration) (*Watcher, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("settings file %q: %w", path, err)
	}
	dir := filepath.Dir(abs)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the settings folder: %w", err)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("cannot watch the settings folder: %w", err)
	}
	if err := fsw.Add(dir); err != nil {
		fsw.Close()
		return nil, fmt.Errorf("cannot watch the settings folder %s: %w", dir, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{
		path:     abs,
		goos:     goos,
		debounce: debounce,
		fsw:      fsw,
		cancel:   cancel,
		done:     make(chan struct{}),
		subs:     map[int]chan Event{},
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		resolved = dir
	}
	w.dirs = map[string]string{resolved: dir}
	// Loaded after the watch is in place, so that a save in between is not missed.
	w.reload(true)
	go w.loop(ctx)
	return w, nil
}

// Current returns the settings in force: the last good contents of the file. It is nil only
// while the file has never been valid since Watch started.
func (w *Watcher) Current() *Settings { return w.current.Load() }

// Err returns why the file as it now stands is not in force, or nil when it is.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Subscribe returns a channel that receives an Event after every reload that changed
// something. A subscriber that falls behind gets the latest event, not every one. The channel
// is closed by cancel or when the watcher stops.
func (w *Watcher) Subscribe() (events <-chan Event, cancel func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan Event, 1)
	if w.closed {
		close(ch)
		return ch, func() {}
	}
	id := w.nextSub
	w.nextSub++
	w.subs[id] = ch
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if c, ok := w.subs[id]; ok {
			delete(w.subs, id)
			close(c)
		}
	}
}

// Close stops watching and closes every subscription. It waits for the watch to end.
func (w *Watcher) Close() error {
	var err error
	w.close.Do(func() {
		w.cancel()
		<-w.done
		err = w.fsw.Close()
	})
	return err
}

func (w *Watcher) loop(ctx context.Context) {
	defer func() {
		w.mu.Lock()
		w.closed = true
		for id, ch := range w.subs {
			delete(w.subs, id)
			close(ch)
		}
		w.mu.Unlock()
		close(w.done)
	}()
	dir := filepath.Dir(w.path)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			switch {
			case w.names[ev.Name]:
				timer.Reset(w.debounce)
			case ev.Name == dir && ev.Has(fsnotify.Remove|fsnotify.Rename):
				w.fail(fmt.Errorf("the settings folder %s was removed; the last settings stay in force, and changes are no longer seen until OpenWorker restarts", dir))
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			// Usually an overflow: events were lost, so look at the file again.
			w.fail(fmt.Errorf("watching %s: %w; reading it again", w.path, err))
			timer.Reset(w.debounce)
		case <-timer.C:
			w.reload(false)
		}
	}
}

// follow watches the folder of every link on the way to the file and of the file it leads
// to, and stops watching those it no longer goes through; the settings file's own folder is
// always watched. A folder is watched by one path only: inotify reports a folder watched
// twice under the first path it was given.
func (w *Watcher) follow() {
	main := filepath.Dir(w.path)
	dirs := map[string]string{}
	names := map[string]bool{w.path: true}
	for d, by := range w.dirs {
		if by == main {
			dirs[d] = by
		}
	}
	for _, p := range policy.Chain(w.path) {
		d := filepath.Dir(p)
		by, ok := dirs[d]
		if !ok {
			if by, ok = w.dirs[d]; !ok {
				if err := w.fsw.Add(d); err != nil {
					continue // a link to a folder that does not exist: nothing to read there
				}
				by = d
			}
			dirs[d] = by
		}
		names[filepath.Join(by, filepath.Base(p))] = true
	}
	for d, by := range w.dirs {
		if _, ok := dirs[d]; !ok {
			w.fsw.Remove(by)
		}
	}
	w.dirs, w.names = dirs, names
}

// reload reads and validates the file and swaps it in if it is good.
func (w *Watcher) reload(initial bool) {
	// Where the file leads is watched before it is read, so that an edit in between is
	// not missed.
	w.follow()
	data, err := os.ReadFile(w.path)
	exists := err == nil
	if !initial && exists == w.lastExists && bytes.Equal(data, w.lastData) {
		return // touched or rewritten with the same bytes: nothing to tell
	}
	w.lastExists, w.lastData = exists, data
	var s *Settings
	switch {
	case errors.Is(err, fs.ErrNotExist) && initial:
		s = Default()
	case errors.Is(err, fs.ErrNotExist):
		err = fmt.Errorf("%s was deleted; the last settings stay in force until it is back", w.path)
	case err != nil:
		err = fmt.Errorf("cannot read %s: %w; the last settings stay in force", w.path, err)
	default:
		var problems []Problem
		if s, problems = Parse(w.path, data, w.goos); len(problems) > 0 {
			err = &ProblemsError{Problems: problems}
		}
	}
	if s == nil {
		w.fail(err)
		return
	}
	w.current.Store(s)
	w.mu.Lock()
	w.err = nil
	w.mu.Unlock()
	if !initial {
		w.publish(Event{Settings: s})
	}
}

// fail records why the file is not in force and tells subscribers; the settings stay.
func (w *Watcher) fail(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	w.publish(Event{Settings: w.current.Load(), Err: err})
}

func (w *Watcher) publish(ev Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range w.subs {
		// Latest wins: a subscriber that has not taken the previous event gets this one
		// instead, and the watch never waits on a slow subscriber.
		select {
		case ch <- ev:
		default:
			select {
			case <-ch:
			default:
			}
			ch <- ev
		}
	}
}
