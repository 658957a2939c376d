package cocoa

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/tcc"
	"github.com/openworker/openworker/ui/presenter"
)

// readPlist reads a flat property list dictionary: its string and boolean values.
func readPlist(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	// The DOCTYPE names Apple's DTD; nothing is fetched.
	dec.Strict = true
	out := make(map[string]string)
	var key, text string
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
			text = ""
			switch tok.Name.Local {
			case "true", "false":
				if key == "" {
					t.Fatalf("%s: a <%s/> without a key", path, tok.Name.Local)
				}
				out[key] = tok.Name.Local
				key = ""
			case "array", "dict":
				if depth > 2 {
					t.Fatalf("%s: nested %s for %q; this test reads a flat dictionary", path, tok.Name.Local, key)
				}
			}
		case xml.CharData:
			text += string(tok)
		case xml.EndElement:
			depth--
			switch tok.Name.Local {
			case "key":
				if _, dup := out[text]; dup {
					t.Errorf("%s: key %s twice", path, text)
				}
				key = text
			case "string", "integer":
				out[key] = text
				key = ""
			}
		}
	}
	return out
}

// TestInfoPlist checks the bundle's Info.plist against what the app and build.sh need.
func TestInfoPlist(t *testing.T) {
	p := readPlist(t, filepath.Join("..", "..", "Info.plist"))
	build, err := os.ReadFile(filepath.Join("..", "..", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key   string
		check func(v string) error
	}{
		// A menu-bar app: no Dock icon, no main menu.
		{"LSUIElement", equal("true")},
		// build.sh puts the binary at Contents/MacOS/openworker.
		{"CFBundleExecutable", func(v string) error {
			if v != "openworker" || !bytes.Contains(build, []byte(`Contents/MacOS/openworker"`)) {
				return fmt.Errorf("%q, and build.sh must write Contents/MacOS/%s", v, v)
			}
			return nil
		}},
		{"CFBundleIdentifier", matches(`^[a-z0-9-]+(\.[A-Za-z0-9-]+){2,}$`)},
		{"CFBundlePackageType", equal("APPL")},
		{"CFBundleShortVersionString", matches(`^[0-9]+\.[0-9]+\.[0-9]+$`)},
		{"CFBundleVersion", matches(`^[0-9]+(\.[0-9]+)*$`)},
		// Go 1.25 and later need macOS 12; the shell's newest API (SF Symbols) needs 11.
		{"LSMinimumSystemVersion", func(v string) error {
			major, _, _ := strings.Cut(v, ".")
			if n, err := strconv.Atoi(major); err != nil || n < 12 {
				return fmt.Errorf("%q: the Go runtime the app is built with needs macOS 12 or later", v)
			}
			return nil
		}},
	}
	// The app is the local API and the sessions' proxy for its whole life: App Nap would
	// answer them late (the app holds an activity too).
	tests = append(tests, struct {
		key   string
		check func(v string) error
	}{"NSAppSleepDisabled", equal("true")})
	// macOS shows these when it asks the person for a guarded place a session's folder is
	// in (core/tcc probes them as a session starts); without one the prompt gives no reason.
	for _, key := range tcc.UsageKeys {
		tests = append(tests, struct {
			key   string
			check func(v string) error
		}{key, matches(`^OpenWorker .{20,}\.$`)})
	}
	for _, tt := range tests {
		v, ok := p[tt.key]
		if !ok {
			t.Errorf("Info.plist has no %s", tt.key)
			continue
		}
		if err := tt.check(v); err != nil {
			t.Errorf("Info.plist %s: %v", tt.key, err)
		}
	}
}

func equal(want string) func(string) error {
	return func(v string) error {
		if v != want {
			return fmt.Errorf("%q, want %q", v, want)
		}
		return nil
	}
}

func matches(re string) func(string) error {
	r := regexp.MustCompile(re)
	return func(v string) error {
		if !r.MatchString(v) {
			return fmt.Errorf("%q does not match %s", v, re)
		}
		return nil
	}
}

// The icon the shell falls back to when an SF Symbol is missing is in resources/ (copied to
// the bundle's Resources), at both scales, as PNG.
func TestBundledIcon(t *testing.T) {
	for _, name := range []string{presenter.BundledIcon + ".png", presenter.BundledIcon + "@2x.png"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "resources", name))
		if err != nil {
			t.Errorf("the bundled status icon: %v", err)
			continue
		}
		if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("resources/%s is not a PNG", name)
		}
	}
	// AppKit treats an image whose name ends in "Template" as a template image (black and
	// clear, tinted for light and dark menu bars).
	if !strings.HasSuffix(presenter.BundledIcon, "Template") {
		t.Errorf("the bundled icon %q is not named as a template image", presenter.BundledIcon)
	}
}
