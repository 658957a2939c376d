// Command testprogress prints the stream of `go test -json` as a line per package as each
// finishes, in the order they finish: go test's own output waits for the packages listed
// before, so the end-to-end package, which runs for minutes and is listed first, would keep
// every other line back. A package that fails is printed as go test prints it without -v
// (its failed tests' output and its own) before its line; a package that does not build, as
// go test says it. It exits 1 when one failed.
// It is the project's check (build.sh check), not part of OpenWorker.
//
// Usage:
//
//	go test -json ./... 2>&1 | go run ./app/testprogress
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// event is one line of test2json's stream.
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64
	Output     string
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	start := time.Now()
	// What a package printed that belongs to no test, and each of its tests' output until the
	// test ends: a test that passed is let go, one that failed kept for the package's end.
	own := map[string]*strings.Builder{}
	tests := map[string]map[string]*strings.Builder{}
	failedTests := map[string]*strings.Builder{}
	buf := func(m map[string]*strings.Builder, key string) *strings.Builder {
		b := m[key]
		if b == nil {
			b = &strings.Builder{}
			m[key] = b
		}
		return b
	}
	forget := func(pkg string) { delete(own, pkg); delete(tests, pkg); delete(failedTests, pkg) }
	// printFailed prints a failed package as go test does without -v: the output of its
	// failed tests and its own, without go test's summary lines, which its line stands for.
	printFailed := func(pkg string) {
		if b := failedTests[pkg]; b != nil {
			fmt.Fprint(out, b.String())
		}
		if b := own[pkg]; b != nil {
			for _, l := range strings.SplitAfter(b.String(), "\n") {
				if l == "PASS\n" || l == "FAIL\n" || strings.HasPrefix(l, "FAIL\t") || strings.HasPrefix(l, "ok  \t") {
					continue
				}
				fmt.Fprint(out, l)
			}
		}
	}
	failed, passed := 0, 0
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// go test's own words (a package that does not build, with an older go).
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		pkg := e.Package
		if pkg == "" {
			pkg = e.ImportPath
		}
		switch {
		case (e.Action == "output" || e.Action == "build-output") && e.Test != "":
			if tests[pkg] == nil {
				tests[pkg] = map[string]*strings.Builder{}
			}
			buf(tests[pkg], e.Test).WriteString(e.Output)
		case e.Action == "output" || e.Action == "build-output":
			buf(own, pkg).WriteString(e.Output)
		case e.Action == "build-fail":
			failed++
			printFailed(pkg)
			fmt.Fprintf(out, "FAIL\t%s [build failed]\n", pkg)
			forget(pkg)
		case e.Test != "" && (e.Action == "pass" || e.Action == "skip" || e.Action == "fail"):
			if b := tests[pkg][e.Test]; b != nil && e.Action == "fail" {
				buf(failedTests, pkg).WriteString(b.String())
			}
			delete(tests[pkg], e.Test)
		case e.Test != "":
		case e.Action == "pass":
			passed++
			took := fmt.Sprintf("%.1fs", e.Elapsed)
			if b := own[pkg]; b != nil && strings.Contains(b.String(), "(cached)") {
				took = "(cached)" // as go test says it: the result of an earlier run
			}
			fmt.Fprintf(out, "ok  \t%s\t%s\t(%s since the start)\n", pkg, took, time.Since(start).Round(time.Second))
			forget(pkg)
		case e.Action == "skip":
			fmt.Fprintf(out, "?   \t%s\t[no test files]\n", pkg)
			forget(pkg)
		case e.Action == "fail":
			failed++
			printFailed(pkg)
			fmt.Fprintf(out, "FAIL\t%s\t%.1fs\n", pkg, e.Elapsed)
			forget(pkg)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "testprogress: reading go test's output:", err)
		return 1
	}
	if failed > 0 {
		fmt.Fprintf(out, "%d package(s) failed, %d passed, in %s\n", failed, passed, time.Since(start).Round(time.Second))
		return 1
	}
	fmt.Fprintf(out, "all %d packages with tests passed, in %s\n", passed, time.Since(start).Round(time.Second))
	return 0
}
