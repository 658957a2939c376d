//go:build darwin && cgo

// Package offmain touches AppKit from goroutines other than the main one.
package offmain

import (
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
