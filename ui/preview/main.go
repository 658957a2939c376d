// Command preview draws every screen of the menu-bar app in its named states as HTML, from
// the same view trees the Cocoa shell renders, so they can be seen (and screenshotted) on a
// machine without macOS:
//
//	go run ./ui/preview -out DIR [-png]
//
// writes DIR/index.html, one DIR/NAME.html per state, and the style sheet. With -png it also
// takes a screenshot of each page with headless Chromium, light (NAME.png) and dark
// (NAME.dark.png).
package main

import (
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/openworker/openworker/ui/presenter"
)

//go:embed style.css
var style string

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("preview", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "the folder to write the previews to")
	png := fs.Bool("png", false, "also take screenshots with headless Chromium")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *out == "" {
		fmt.Fprintln(stderr, "usage: go run ./ui/preview -out DIR [-png]")
		return 2
	}
	if err := write(*out); err != nil {
		fmt.Fprintln(stderr, "preview:", err)
		return 1
	}
	if *png {
		if err := screenshots(*out); err != nil {
			fmt.Fprintln(stderr, "preview:", err)
			return 1
		}
	}
	index, err := filepath.Abs(filepath.Join(*out, "index.html"))
	if err != nil {
		index = filepath.Join(*out, "index.html")
	}
	fmt.Fprintf(stdout, "preview: %d pages written; open %s\n", len(presenter.Previews()), index)
	return 0
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

// screenshots takes a light and a dark screenshot of each preview page in dir.
func screenshots(dir string) error {
	var browser string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		return errors.New("no Chromium to take screenshots with (Debian: apt-get install chromium)")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for _, pv := range presenter.Previews() {
		for _, mode := range []struct{ suffix, flag string }{{"", "1"}, {".dark", "0"}} {
			shot := filepath.Join(abs, pv.Name+mode.suffix+".png")
			// --no-sandbox: the browser may run as root here, where its own sandbox refuses.
			cmd := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
				"--blink-settings=preferredColorScheme="+mode.flag, "--window-size=1600,1100",
				"--screenshot="+shot, "file://"+filepath.Join(abs, pv.Name+".html"))
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("screenshot of %s: %v\n%s", pv.Name, err, out)
			}
		}
	}
	return nil
}
