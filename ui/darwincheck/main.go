// Command darwincheck type-checks Go packages as they would be compiled for
// macOS on Apple silicon with cgo enabled, from any operating system.
//
// The Cocoa shell only builds with cgo on a Mac, so neither `go vet` nor a
// cross-compile on Linux ever sees it. darwincheck asks the go command which
// files a darwin/arm64 cgo build would use (go list -deps with GOOS=darwin,
// GOARCH=arm64, CGO_ENABLED=1), then type-checks every package from source
// with go/types, treating `import "C"` as an opaque package (FakeImportC).
// That catches a darwinkit method that does not exist or an argument of the
// wrong type; it does not compile C, link, or prove anything about what the
// C side of a cgo call does.
//
// Then, in the packages named (not their dependencies), it checks what
// type-checking cannot see:
//   - every selector, class and protocol name given as a string (objc.Sel,
//     objc.GetClass, `objc:"…"` struct tags, objc.GetProtocol,
//     objc.WrapAsProtocol) is one darwinkit's generated bindings use, read
//     from the darwinkit module's source;
//   - a selector sent with objc.Call or PerformSelector… has one argument per
//     colon;
//   - objc.Retain is only given the address of a package-level variable: it
//     releases the object when the variable it points to is collected;
//   - a go statement's function (and one given to time.AfterFunc or
//     sync.WaitGroup.Go) makes no AppKit call except inside a
//     dispatch.MainQueue() block, following calls into the package's own
//     functions (not into other packages).
//
// Usage:
//
//	go run ./ui/darwincheck [packages]
//
// The packages default to ./... . Every problem is printed as
// file:line:col: message, and the exit status is 1 if there was any, 2 if the
// check could not run at all.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, "", os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command with its surroundings passed in, so tests can run
// it in-process against a module in testdata. dir is where the go command runs
// ("" means the current directory).
func run(ctx context.Context, dir string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("darwincheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: darwincheck [packages]\n\n"+
			"Type-checks the packages (default ./...) as a darwin/arm64 cgo build would\n"+
			"compile them, and prints each problem as file:line:col: message.\n"+
			"Exit status: 0 clean, 1 problems found, 2 the check could not run.\n\n")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}

	diags, err := check(ctx, options{Dir: dir, Patterns: patterns})
	if err != nil {
		fmt.Fprintf(stderr, "darwincheck: %v\n", err)
		return 2
	}
	for _, d := range diags {
		fmt.Fprintln(stdout, d)
	}
	if len(diags) > 0 {
		fmt.Fprintf(stderr, "darwincheck: %d problem(s) in the darwin/arm64 cgo build\n", len(diags))
		return 1
	}
	return 0
}
