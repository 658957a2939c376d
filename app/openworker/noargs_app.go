//go:build darwin && cgo

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/seatbelt"
	"github.com/openworker/openworker/ui/cocoa"
	"github.com/openworker/openworker/ui/presenter"
)

// noArgs starts the menu-bar app: with no arguments on macOS, openworker is the app. The app
// is the daemon: it hosts the backend and the local API, so `openworker mcp` and the CLI
// attach to it, and the cards they wait on are the app's.
func noArgs() error {
	err := runApp()
	if err != nil {
		tellPerson(err)
	}
	return err
}

// tellPerson shows why the app could not start when it was opened from Finder, where
// nothing reads stderr. osascript draws the alert in a process of its own: this one may be
// the very build that must not call into Cocoa. The message is passed as an argument, never
// as script text.
func tellPerson(err error) {
	if fi, statErr := os.Stderr.Stat(); statErr == nil && fi.Mode()&os.ModeCharDevice != 0 {
		return // a terminal shows the error
	}
	script := []string{
		"-e", "on run argv",
		"-e", "display alert \"OpenWorker cannot start\" message (item 1 of argv) as critical",
		"-e", "end run",
		err.Error(),
	}
	_ = exec.Command("/usr/bin/osascript", script...).Run()
}

func runApp() error {
	// Before anything starts: a binary that would crash at its first Cocoa callback says so
	// now, instead of leaving sessions behind.
	if err := cocoa.CheckBuild(debug.ReadBuildInfo()); err != nil {
		return err
	}
	e, err := loadEnv()
	if err != nil {
		return err
	}
	_, statErr := os.Stat(e.settingsPath)
	firstLaunch := errors.Is(statErr, os.ErrNotExist)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	native := nativeProvider()
	h, err := e.hostBackend(ctx, true)
	if err != nil {
		return err
	}
	b := h.b
	srv := h.server(e)
	l, err := api.Listen(e.stateDir)
	if err != nil {
		h.close()
		return fmt.Errorf("%w; quit the other openworker (serve, or the app) first", err)
	}
	go func() {
		if err := srv.Serve(l); err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "openworker: the local API stopped: %v\n", err)
		}
	}()

	// The wall's status may run a probe: the app starts with what it finds, in the time a
	// person waits for an icon.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	wall := native.Status(sctx)
	cancel()

	exe, err := os.Executable()
	if err != nil {
		h.close()
		return err
	}
	p := presenter.New(b, presenter.Options{
		Native: e.machine().Native, Wall: wall, Home: e.home,
		AuditLog: e.auditPath(), FirstLaunch: firstLaunch, Logins: presenter.BackendLogins{B: b},
		Links: func() *presenter.Links {
			probed, both, why := seatbelt.RecordedLinkChecks(e.stateDir)
			return &presenter.Links{Probed: probed, Both: both, Why: why}
		},
		// Check this Mac… runs the binary's own check, as a person would in a terminal, with
		// the login environment the app's sessions get (the app's own is launchd's), and
		// keeps its report in the state folder.
		CheckMachine: func(ctx context.Context) (presenter.Check, error) {
			mc, err := runMachineCheck(ctx, exe, filepath.Join(e.stateDir, "check-report.txt"), h.env())
			c := presenter.Check{Summary: mc.summary(), Report: mc.Report, ReportPath: mc.ReportPath}
			for _, r := range mc.Programs {
				c.Lines = append(c.Lines, presenter.CheckLine{Name: r.Name, Status: r.Status, Detail: r.Detail, OK: r.OK, Info: r.Info})
			}
			return c, err
		},
	})
	changes := p.Watch(ctx)
	// On a Mac whose link probe has not run on this macOS version, it runs now, in the
	// background: the profiles of sessions started afterwards follow its answer (npm install
	// and cargo build need links and clones), and Settings shows it.
	if wall.OK {
		if probed, _, _ := seatbelt.RecordedLinkChecks(e.stateDir); !probed {
			go func() {
				pr := &seatbelt.Provider{StateDir: e.stateDir}
				if _, err := pr.ProbeLinks(ctx); err != nil {
					fmt.Fprintf(os.Stderr, "openworker: the link probe: %v\n", err)
				}
				p.SetWall(wall) // redraw with the answer
			}()
		}
	}

	var once sync.Once
	quit := func() {
		once.Do(func() {
			// Sessions first (their walls and private files), then the API and the rest.
			b.EndAllBecause("the app quit")
			sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
			_ = srv.Shutdown(sctx)
			c()
			_ = os.Remove(api.SocketPath(e.stateDir))
			stop()
			h.close()
		})
	}
	defer quit()
	return cocoa.Run(cocoa.Options{
		Model:   p,
		Changes: changes,
		OnQuit:  quit,
		OnError: func(err error) { fmt.Fprintf(os.Stderr, "openworker: %v\n", err) },
	})
}
