// Command testprogress prints the stream of `go test -json` as a line per package as each
// finishes, in the order they finish: go test's own output waits for the packages listed
// before, so the end-to-end package, which runs for minutes and is listed first, would keep
// every other line back. A package that fails is printed whole (its tests' output) before
// its line; a package that does not build, as go test says it. It exits 1 when one failed.
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
	output := map[string]*strings.Builder{} // each package's output until it ends
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
		b := output[pkg]
		if b == nil {
			b = &strings.Builder{}
			output[pkg] = b
		}
		switch {
		case e.Action == "output" || e.Action == "build-output":
			b.WriteString(e.Output)
		case e.Action == "build-fail":
			failed++
			fmt.Fprint(out, b.String())
			fmt.Fprintf(out, "FAIL\t%s [build failed]\n", pkg)
			delete(output, pkg)
		case e.Test != "":
			// A test's own end: its package's line says how it went.
		case e.Action == "pass":
			passed++
			fmt.Fprintf(out, "ok  \t%s\t%.1fs\t(%s since the start)\n", pkg, e.Elapsed, time.Since(start).Round(time.Second))
			delete(output, pkg)
		case e.Action == "skip":
			fmt.Fprintf(out, "?   \t%s\t[no test files]\n", pkg)
			delete(output, pkg)
		case e.Action == "fail":
			failed++
			fmt.Fprint(out, b.String())
			fmt.Fprintf(out, "FAIL\t%s\t%.1fs\n", pkg, e.Elapsed)
			delete(output, pkg)
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
