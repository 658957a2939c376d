//go:build darwin && cgo

// Package offmain touches AppKit from goroutines other than the main one.
package offmain

import (
	"sync"
	"time"

	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/macos/appkit"
)

// Start updates the status item from goroutines, three of them wrongly.
func Start(item appkit.StatusItem, titles <-chan string) {
	go func() {
		for t := range titles {
			item.Button().SetTitle(t)
		}
	}()
	go relay(item, titles)
	go appkit.Application_SharedApplication().Run()
	go func() {
		// A global queue is not the main thread.
		dispatch.GlobalQueue(dispatch.QueuePriorityDefault, 0).DispatchAsync(func() {
			item.SetVisible(true)
		})
		// This one is right, and must not be reported.
		dispatch.MainQueue().DispatchAsync(func() { setTitle(item, "ok") })
	}()
}

func relay(item appkit.StatusItem, titles <-chan string) {
	for t := range titles {
		setTitle(item, t)
	}
}

func setTitle(item appkit.StatusItem, title string) {
	item.Button().SetTitle(title)
}

// Later runs functions on goroutines other than go statements start.
func Later(item appkit.StatusItem, wg *sync.WaitGroup) {
	time.AfterFunc(time.Second, func() { item.SetVisible(false) })
	time.AfterFunc(time.Second, appkit.Cursor_Hide)
	time.AfterFunc(time.Second, relayNothing)
	wg.Go(func() { setTitle(item, "done") })
	// Right: the timer's goroutine hands the work to the main queue.
	time.AfterFunc(time.Second, func() {
		dispatch.MainQueue().DispatchAsync(func() { item.SetVisible(true) })
	})
}

func relayNothing() { setTitle(appkit.StatusItem{}, "") }
