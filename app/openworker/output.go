package main

import (
	"io"
	"os"
	"sync"

	"github.com/openworker/openworker/core/termtext"
)

// commandOutput carries a command's output to this process's standard output and error,
// and then OpenWorker's own report after it. On a terminal the command's output is passed
// through as it is but for termtext.Mark's character, and the report comes on standard
// error after termtext.Reset, each line marked: so a command can neither hide the report
// (an unfinished escape string, conceal mode) nor print a line that passes for one of it.
// Written elsewhere (a pipe, a file), both are as they are.
type commandOutput struct {
	mu             sync.Mutex
	stdout, stderr io.Writer
	filters        []*termtext.MarkFilter
	tty            bool // standard error is a terminal
	midLine        bool // the last byte written was not a newline
	rep            io.Writer
}

func newCommandOutput() *commandOutput {
	o := &commandOutput{stdout: os.Stdout, stderr: os.Stderr, tty: isTerminal(os.Stderr.Fd())}
	if isTerminal(os.Stdout.Fd()) {
		f := termtext.NewMarkFilter(os.Stdout)
		o.stdout, o.filters = f, append(o.filters, f)
	}
	if o.tty {
		f := termtext.NewMarkFilter(os.Stderr)
		o.stderr, o.filters = f, append(o.filters, f)
	}
	return o
}

// write is the command's output: stream is "stdout" or "stderr".
func (o *commandOutput) write(stream string, data []byte) {
	if len(data) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if stream == "stderr" {
		o.stderr.Write(data)
	} else {
		o.stdout.Write(data)
	}
	o.midLine = data[len(data)-1] != '\n'
}

// report is where OpenWorker's own lines go once the command's output has ended.
func (o *commandOutput) report() io.Writer {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.rep != nil {
		return o.rep
	}
	for _, f := range o.filters {
		f.Flush()
	}
	o.rep = os.Stderr
	if o.tty {
		o.rep = termtext.NewReport(os.Stderr, o.midLine)
	}
	return o.rep
}

// note says one of OpenWorker's lines while the command runs (a port published for a server
// it started), marked as the report is: on a terminal after a reset, on a line of its own.
func (o *commandOutput) note(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.rep != nil {
		o.rep.Write([]byte(line))
		return
	}
	for _, f := range o.filters {
		f.Flush()
	}
	var w io.Writer = os.Stderr
	if o.tty {
		w = termtext.NewReport(os.Stderr, o.midLine)
	}
	w.Write([]byte(line))
	o.midLine = false
}
