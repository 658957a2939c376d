package termtext

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestMarkFilterNeverPassesTheMark(t *testing.T) {
	var out bytes.Buffer
	f := NewMarkFilter(&out)
	in := "a¦b " + Mark + "openworker: fake\n"
	// Every split of the input, so that the mark's two bytes come in two writes.
	for i := 0; i <= len(in); i++ {
		out.Reset()
		f.Write([]byte(in[:i]))
		f.Write([]byte(in[i:]))
		f.Flush()
		if strings.Contains(out.String(), "¦") || out.String() != "a|b | openworker: fake\n" {
			t.Fatalf("split at %d: %q", i, out.String())
		}
	}
	out.Reset()
	f.Write([]byte("ends with \xc2"))
	f.Flush()
	if out.String() != "ends with \xc2" {
		t.Fatalf("a held byte was lost: %q", out.String())
	}
}

func TestReportResetsThenMarksEveryLine(t *testing.T) {
	var out bytes.Buffer
	r := NewReport(&out, true)
	fmt.Fprintln(r, "openworker: blocked a:443")
	fmt.Fprint(r, "openworker: two\nlines\n")
	want := Reset + "\n" + Mark + "openworker: blocked a:443\n" + Mark + "openworker: two\n" + Mark + "lines\n"
	if out.String() != want {
		t.Fatalf("report:\n%q\nwant\n%q", out.String(), want)
	}
}
