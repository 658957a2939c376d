package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/apiclient"
	"github.com/openworker/openworker/core/sandbox"
)

var machineStatusCommand = command{
	name:     "machine sandbox status",
	synopsis: "machine sandbox status",
	about:    "Says which sandbox this machine's sessions get, per entry point, whether it can be used here and why not, what the settings file says, and the daemon's sessions.",
	example:  "openworker machine sandbox status",
}

var machineGroup = group{name: "machine", subs: "sandbox status", usage: `Usage:
  openworker machine sandbox status   the machine's provider, whether sessions can run and why not

Example:
  openworker machine sandbox status
`}

func cmdMachine(args []string) error {
	if ok, err := machineGroup.help(args); !ok {
		return err
	}
	if args[0] != "sandbox" {
		return machineGroup.unknown(args[0])
	}
	// machine sandbox is a group of one.
	if ok, err := machineGroup.help(args[1:]); !ok {
		return err
	}
	if args[1] != "status" {
		return machineGroup.unknown("sandbox " + args[1])
	}
	if _, _, err := parse(newFlags(machineStatusCommand), machineStatusCommand, args[2:]); err != nil {
		return err
	}
	e, err := loadEnv()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fmt.Printf("Settings:      %s\n", e.settingsPath)
	if msg := e.inForce.Describe(e.settingsPath); msg != "" {
		fmt.Printf("               %s\n", strings.ReplaceAll(msg, "\n", "\n               "))
	}
	fmt.Printf("Provider:      %s (sandbox_provider)\n", e.settings.Provider)
	fmt.Printf("Network:       %s (sandbox_network_profile), %d site(s) allowed\n", e.settings.NetworkProfile, len(e.settings.NetworkHosts))
	for i, line := range e.machine().Rule() {
		label := ""
		if i == 0 {
			label = "Sessions:"
		}
		fmt.Printf("%-14s %s\n", label, line)
	}
	if p := nativeProvider(); p != nil {
		st := proveLimits(ctx, p, e.settings.Limits)
		label := "Sandbox:"
		if st.OK {
			fmt.Printf("%-14s %s\n", label, st.Tier)
		} else {
			fmt.Printf("%-14s cannot be used: %s\n", label, st.Reason)
			if e.settings.Provider != string(sandbox.Direct) {
				fmt.Printf("               Sessions on this machine are refused: the machine is set to the sandbox and it cannot be used\n")
			}
		}
		for _, d := range st.Details {
			fmt.Printf("               %s\n", d)
		}
		if st.OK {
			fmt.Printf("               sessions can run behind the wall here\n")
		}
		fmt.Printf("Limits:        %s (sandbox_max_*, sandbox_cpu_weight)\n", limitsLine(e.settings.Limits))
		if !saysLimits(st.Details) {
			fmt.Printf("               no limits in force: the %s sandbox sets none\n", p.Name())
		}
	} else {
		fmt.Printf("Sandbox:       none on %s\n", runtime.GOOS)
	}
	for i, line := range folderBound() {
		label := ""
		if i == 0 {
			label = "Folders:"
		}
		fmt.Printf("%-14s %s\n", label, line)
	}
	for i, line := range cachesStatus(e) {
		label := ""
		if i == 0 {
			label = "Caches:"
		}
		fmt.Printf("%-14s %s\n", label, line)
	}
	fmt.Printf("State folder:  %s\n", e.stateDir)
	c := apiclient.New(api.SocketPath(e.stateDir))
	if ss, err := c.Sessions(ctx); err == nil {
		fmt.Printf("Daemon:        running, %d session(s)\n", len(ss))
		for _, s := range ss {
			fmt.Printf("               %s  (%s)  %v  proxy 127.0.0.1:%d\n", s.ID, wallWords(s.Enforcement, s.Network), s.Writable, s.ProxyPort)
		}
	} else {
		fmt.Printf("Daemon:        not running (openworker serve)\n")
	}
	return nil
}
