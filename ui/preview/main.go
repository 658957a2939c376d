// Command preview draws every screen of the menu-bar app in its named states as HTML, from
// the same view trees the Cocoa shell renders, so they can be seen (and screenshotted) on a
// machine without macOS:
//
//	go run ./ui/preview -out DIR
//
// writes DIR/index.html, one DIR/NAME.html per state, and the style sheet.
package main

import (
	_ "embed"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openworker/openworker/ui/presenter"
)

//go:embed style.css
var style string

func main() {
	out := flag.String("out", "", "the folder to write the previews to")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "usage: go run ./ui/preview -out DIR")
		os.Exit(2)
	}
	if err := write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "preview:", err)
		os.Exit(1)
	}
}

// write renders every preview into dir.
func write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pvs := presenter.Previews()
	files := map[string]string{"index.html": index(pvs), "style.css": style}
	for _, pv := range pvs {
		files[pv.Name+".html"] = page(pv, presenter.Build(pv.State))
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}
