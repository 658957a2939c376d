package main

import (
	"bytes"
	"strings"
	"testing"
)

// A package's line comes when it finishes, whatever its place in go test's list; a failing
// one's failed tests are printed before its line, not those that passed, nor go test's own
// summary lines; one that does not build says so; the status says
// whether any failed.
func TestALinePerPackageAsItFinishes(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"start","Package":"example.com/slow"}`,
		`{"Action":"start","Package":"example.com/quick"}`,
		`{"Action":"run","Package":"example.com/quick","Test":"TestA"}`,
		`{"Action":"output","Package":"example.com/quick","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"pass","Package":"example.com/quick","Test":"TestA","Elapsed":0.01}`,
		`{"Action":"pass","Package":"example.com/quick","Elapsed":0.5}`,
		`{"Action":"skip","Package":"example.com/notests"}`,
		`{"Action":"output","Package":"example.com/slow","Test":"TestOK","Output":"=== RUN   TestOK\n"}`,
		`{"Action":"pass","Package":"example.com/slow","Test":"TestOK","Elapsed":1}`,
		`{"Action":"output","Package":"example.com/slow","Test":"TestB","Output":"    b_test.go:9: went wrong\n"}`,
		`{"Action":"fail","Package":"example.com/slow","Test":"TestB","Elapsed":1}`,
		`{"Action":"output","Package":"example.com/slow","Output":"FAIL\n"}`,
		`{"Action":"output","Package":"example.com/slow","Output":"FAIL\texample.com/slow\t300.2s\n"}`,
		`{"Action":"fail","Package":"example.com/slow","Elapsed":300.2}`,
		`{"ImportPath":"example.com/broken","Action":"build-output","Output":"broken/x.go:1:1: syntax error\n"}`,
		`{"ImportPath":"example.com/broken","Action":"build-fail"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	code := run(strings.NewReader(stream), &out)
	lines := strings.Split(out.String(), "\n")
	if code != 1 || !strings.HasPrefix(lines[0], "ok  \texample.com/quick\t0.5s") || lines[1] != "?   \texample.com/notests\t[no test files]" ||
		lines[2] != "    b_test.go:9: went wrong" || lines[3] != "FAIL\texample.com/slow\t300.2s" ||
		lines[4] != "broken/x.go:1:1: syntax error" || lines[5] != "FAIL\texample.com/broken [build failed]" ||
		!strings.HasPrefix(lines[6], "2 package(s) failed, 1 passed") {
		t.Errorf("exit %d, printed:\n%s", code, out.String())
	}
	out.Reset()
	cached := `{"Action":"output","Package":"example.com/quick","Output":"ok  \texample.com/quick\t(cached)\n"}` + "\n" +
		`{"Action":"pass","Package":"example.com/quick","Elapsed":0}` + "\n"
	if code := run(strings.NewReader(cached), &out); code != 0 || !strings.Contains(out.String(), "ok  \texample.com/quick\t(cached)") ||
		!strings.Contains(out.String(), "all 1 packages with tests passed") {
		t.Errorf("all passed, from the cache: exit %d\n%s", code, out.String())
	}
}
