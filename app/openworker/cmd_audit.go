package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/config"
)

func cmdAudit(args []string) error {
	fs := newFlags("audit", "openworker audit [--follow]")
	follow := fs.Bool("follow", false, "keep printing new events as they happen")
	if err := parse(fs, args); err != nil {
		return err
	}
	state, err := config.StateDir()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return audit.Show(ctx, state+"/audit.jsonl", os.Stdout, *follow)
}
