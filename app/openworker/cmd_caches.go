package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/openworker/openworker/core/caches"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/termtext"
)

var cachesGroup = group{name: "caches", subs: "list or clear", usage: `Usage:
  openworker caches list                 the tools' caches kept for each project: size, last use, folders
  openworker caches clear [--rw DIR]…    clear the caches of the project of the current folder (or of
                                         exactly the --rw folders, as run takes them)
  openworker caches clear --all          clear every project's caches

A session's tools (Go, npm, pip, uv, cargo, and what else keeps its cache under
XDG_CACHE_HOME) keep their caches for the next session of the same writable folders, in
the state folder, bounded by sandbox_max_caches; --fresh-caches on run, session start and
mcp starts one session cold.

Example:
  openworker caches clear --rw ~/src/app
`}

var cachesListCommand = command{
	name:     "caches list",
	synopsis: "caches list",
	about:    "Lists the tools' caches kept for each project (its writable folders): what they take, when a session last used them, and whether one uses them now.",
	example:  "openworker caches list",
}

var cachesClearCommand = command{
	name:     "caches clear",
	synopsis: "caches clear [--rw DIR]… | --all",
	about: `Clears the tools' caches kept for a project: the current folder's, or exactly the folders
given with --rw (as run takes them); with --all, every project's. Caches a running session uses
are not cleared: end it first. The next session of the project starts cold.`,
	example: "openworker caches clear\nopenworker caches clear --rw ~/src/app --rw ~/src/lib",
}

func cmdCaches(args []string) error {
	if ok, err := cachesGroup.help(args); !ok {
		return err
	}
	switch args[0] {
	case "list":
		if _, _, err := parse(newFlags(cachesListCommand), cachesListCommand, args[1:]); err != nil {
			return err
		}
		return cachesList()
	case "clear":
		fs := newFlags(cachesClearCommand)
		var rw multi
		fs.Var(&rw, "rw", "a writable folder of the project (repeatable); without any, the current folder")
		all := fs.Bool("all", false, "clear every project's caches")
		if _, _, err := parse(fs, cachesClearCommand, args[1:]); err != nil {
			return err
		}
		if *all && len(rw) > 0 {
			return usagef("caches clear", "caches clear takes either --rw folders or --all, not both")
		}
		return cachesClear(rw, *all)
	}
	return cachesGroup.unknown(args[0])
}

func cachesList() error {
	state, err := config.StateDir()
	if err != nil {
		return err
	}
	st := caches.NewStore(state)
	ps := st.List()
	if len(ps) == 0 {
		fmt.Printf("No caches are kept (%s).\n", st.Dir())
		return nil
	}
	fmt.Printf("%s:\n", st.Dir())
	for _, p := range ps {
		when := "never ended"
		if !p.Used.IsZero() {
			when = "used " + p.Used.Local().Format(time.DateTime)
		}
		if p.InUse {
			when += ", in use"
		}
		fmt.Printf("  %9s  %s  %s\n", sandbox.FormatBytes(p.Size), when, termtext.Short(strings.Join(p.Folders, " "), 200))
	}
	return nil
}

func cachesClear(rw []string, all bool) error {
	state, err := config.StateDir()
	if err != nil {
		return err
	}
	st := caches.NewStore(state)
	if all {
		var busy []string
		n := 0
		for _, p := range st.List() {
			switch err := st.Clear(p.Key); {
			case errors.Is(err, caches.ErrInUse):
				busy = append(busy, strings.Join(p.Folders, " "))
			case err == nil:
				n++
			}
		}
		fmt.Printf("Cleared the caches of %d project(s).\n", n)
		if len(busy) > 0 {
			return fmt.Errorf("the caches of %s are in use by a running session and were not cleared; end it and clear them again", termtext.Short(strings.Join(busy, "; "), 400))
		}
		return nil
	}
	folders := []string(rw)
	if len(folders) == 0 {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("the current folder cannot be found (%v); give the project's folders with --rw DIR", err)
		}
		folders = []string{wd}
	}
	roots, err := caches.Roots(folders)
	if err != nil {
		return fmt.Errorf("finding the project's folders: %w", err)
	}
	switch err := st.Clear(caches.Key(roots)); {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Printf("No caches are kept for %s.\n", strings.Join(roots, " "))
	case errors.Is(err, caches.ErrInUse):
		return fmt.Errorf("the caches of %s are in use by a running session; end it first (openworker session ls)", strings.Join(roots, " "))
	case err != nil:
		return fmt.Errorf("clearing the caches of %s: %w", strings.Join(roots, " "), err)
	default:
		fmt.Printf("Cleared the caches of %s.\n", strings.Join(roots, " "))
	}
	return nil
}

// cachesStatus says where the projects' caches are kept and how big they are, and what of
// the person's own caches sessions read, for machine sandbox status.
func cachesStatus(e *env) []string {
	st := caches.NewStore(e.stateDir)
	var lines []string
	if e.settings.MaxCaches == 0 {
		lines = append(lines, `none kept (sandbox_max_caches = "0"): every session's tool caches go with it`)
	} else {
		var total int64
		ps := st.List()
		for _, p := range ps {
			total += p.Size
		}
		lines = append(lines, fmt.Sprintf("kept per project in %s: %d project(s), %s of %s (sandbox_max_caches); openworker caches list",
			st.Dir(), len(ps), sandbox.FormatBytes(total), sandbox.FormatBytes(e.settings.MaxCaches)))
	}
	switch dl := caches.GoDownloads(os.Environ(), e.home, runtime.GOOS); {
	case e.settings.HostCaches == config.HostCachesOff:
		lines = append(lines, `yours are not read (sandbox_host_caches = "off")`)
	case dl == "":
		lines = append(lines, "yours: no Go module download cache here to read; npm's, pip's, uv's and cargo's are never read")
	default:
		lines = append(lines, "yours, read-only: Go's module downloads in "+dl+" (sandbox_host_caches); npm's, pip's, uv's and cargo's are never read")
	}
	return lines
}
