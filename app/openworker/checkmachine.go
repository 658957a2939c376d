package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/openworker/openworker/core/wallcheck"
)

// machineCheck is what the app's Check this Mac… shows: the check's lines, its verdict, and
// the report a person sends.
type machineCheck struct {
	Programs   []wallcheck.Result
	Holds, OK  bool
	Report     string
	ReportPath string
}

// runMachineCheck runs exe's `sandbox check --json --report reportPath`, as a person would in
// a terminal (a process of its own, which cleans up after itself whatever happens to the
// app), with env as its environment (nil: this process's), and reads what it found. An error
// says why the check could not run; what it wrote is returned with it.
func runMachineCheck(ctx context.Context, exe, reportPath string, env []string) (machineCheck, error) {
	mc := machineCheck{ReportPath: reportPath}
	cmd := exec.CommandContext(ctx, exe, "sandbox", "check", "--json", "--report", reportPath)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	if b, err := os.ReadFile(reportPath); err == nil {
		mc.Report = string(b)
	}
	var got struct {
		OK        bool               `json:"ok"`
		WallHolds bool               `json:"wall_holds"`
		Reason    string             `json:"reason"`
		Programs  []wallcheck.Result `json:"programs"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		why := strings.TrimSpace(errb.String())
		if why == "" && runErr != nil {
			why = runErr.Error()
		}
		if why == "" {
			why = "it printed no result"
		}
		return mc, fmt.Errorf("openworker sandbox check: %s", why)
	}
	mc.Programs, mc.Holds, mc.OK = got.Programs, got.WallHolds, got.OK
	if got.Reason != "" {
		return mc, errors.New("the sandbox cannot run here: " + got.Reason)
	}
	return mc, nil
}

// summary is the check's verdict in a sentence.
func (mc machineCheck) summary() string {
	broken := 0
	for _, p := range mc.Programs {
		if !p.OK {
			broken++
		}
	}
	switch {
	case !mc.Holds:
		return "The wall let an escape through, or a command could not run: do not run sessions until it is fixed, and send the report."
	case broken == 0:
		return "The wall held, and every program did as it must."
	case broken == 1:
		return "The wall held. 1 program fails behind it: send the report, it says why."
	}
	return fmt.Sprintf("The wall held. %d programs fail behind it: send the report, it says why.", broken)
}
