//go:build darwin && cgo

package cocoa

import (
	"github.com/progrium/darwinkit/macos/appkit"

	"github.com/openworker/openworker/ui/view"
)

// pickPath shows the system's open panel ("A file or folder…", a toolchain's folder) and
// sends the chosen path to the tree's next action. Cancel sends nothing.
func (s *shell) pickPath(p view.PickPath) {
	panel := appkit.OpenPanel_OpenPanel()
	files, folders := p.Files, p.Folders
	if !files && !folders {
		files, folders = true, true
	}
	panel.SetCanChooseFiles(files)
	panel.SetCanChooseDirectories(folders)
	panel.SetAllowsMultipleSelection(false)
	// A dotfile or a folder like ~/.config is what the person most often shares.
	panel.SetShowsHiddenFiles(true)
	if p.Prompt != "" {
		panel.SetPrompt(p.Prompt)
	}
	// An accessory app's panel opens behind the frontmost app unless the app comes forward.
	s.activate()
	// Not runModal: its modal loop runs the main queue's blocks, which re-enter Go, and
	// darwinkit receives a call's return value in the calling goroutine's stack, which such
	// a callback may move, so OK could read as Cancel and the choice be lost. The completion
	// handler gets the answer as an argument instead. The panel is kept until it answers.
	panel.Retain()
	panel.BeginWithCompletionHandler(func(result appkit.ModalResponse) {
		defer panel.Release()
		if result != appkit.ModalResponseOK || p.Then == nil {
			return
		}
		urls := panel.URLs()
		if len(urls) == 0 {
			return
		}
		s.act(p.Then.WithText(urls[0].Path()))
	})
	// And the panel itself to the front, key, in case the app was not yet when it opened.
	panel.MakeKeyAndOrderFront(nil)
}
