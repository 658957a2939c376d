package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworker/openworker/ui/presenter"
	"github.com/openworker/openworker/ui/view"
)

// Every preview renders: each text of its tree is on the page, the page has exactly the
// default buttons the tree has, and no node is one the renderer does not know.
func TestPages(t *testing.T) {
	for _, pv := range presenter.Previews() {
		t.Run(pv.Name, func(t *testing.T) {
			app := presenter.Build(pv.State)
			html := page(pv, app)
			if strings.Contains(html, `class="unknown"`) {
				t.Fatal("a node the renderer does not know")
			}
			var defaults int
			var texts []string
			for _, w := range app.Windows {
				texts = append(texts, w.Title)
				view.Walk(w.Body, func(n view.Node) {
					switch n := n.(type) {
					case view.Button:
						texts = append(texts, n.Title)
						if n.Default {
							defaults++
						}
					case view.Label:
						texts = append(texts, n.Text)
					case view.Checkbox:
						texts = append(texts, n.Title)
					case view.Switch:
						texts = append(texts, n.Title)
					case view.TextField:
						texts = append(texts, n.Message)
					}
				})
			}
			for _, it := range app.Menu.Items {
				texts = append(texts, it.Title)
			}
			for _, s := range texts {
				if !strings.Contains(html, esc(s)) {
					t.Errorf("%q is not on the page", s)
				}
			}
			if got := strings.Count(html, " default\""); got != defaults {
				t.Errorf("%d default buttons on the page, %d in the tree", got, defaults)
			}
		})
	}
}

// The cards that nobody clicked into show no default button.
func TestCardPageHasNoDefault(t *testing.T) {
	for _, pv := range presenter.Previews() {
		if pv.Name == "three-cards" || pv.Name == "one-card" {
			if strings.Contains(page(pv, presenter.Build(pv.State)), " default\"") {
				t.Errorf("%s shows a default button", pv.Name)
			}
		}
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	if err := write(dir); err != nil {
		t.Fatal(err)
	}
	index, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	for _, pv := range presenter.Previews() {
		if _, err := os.Stat(filepath.Join(dir, pv.Name+".html")); err != nil {
			t.Error(err)
		}
		if !strings.Contains(string(index), pv.Name+".html") {
			t.Errorf("the index does not link %s", pv.Name)
		}
	}
}

// A run says where the pages are, so that the person knows what to open.
func TestRunSaysWhereThePagesAre(t *testing.T) {
	dir := t.TempDir()
	var out, errs strings.Builder
	if code := run([]string{"-out", dir}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	if !strings.Contains(out.String(), filepath.Join(dir, "index.html")) {
		t.Fatalf("the run says %q; want where index.html is", out.String())
	}
}
