package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/openworker/openworker/core/config"
)

const configUsage = `Usage:
  openworker config path          print where the machine's settings file is
  openworker config check [FILE]  check a settings file (default: the machine's); problems as FILE:LINE:COL: message
  openworker config show          print the settings in force

Example:
  openworker config check && openworker config show
`

var configGroup = group{name: "config", usage: configUsage, subs: "path, check or show"}

var (
	configPathCommand  = command{name: "config path", synopsis: "config path", about: "Prints where the machine's settings file is ($OPENWORKER_CONFIG overrides).", example: "$EDITOR \"$(openworker config path)\""}
	configCheckCommand = command{name: "config check", synopsis: "config check [FILE]", about: "Checks a settings file (default: the machine's) and prints each problem as FILE:LINE:COL: message; exits 1 when there is one.", example: "openworker config check ~/new-config.toml", maxArgs: 1}
	configShowCommand  = command{name: "config show", synopsis: "config show", about: "Prints the settings in force. While the file has problems, those are the last good settings, and it says so.", example: "openworker config show"}
)

func cmdConfig(args []string) error {
	if ok, err := configGroup.help(args); !ok {
		return err
	}
	switch args[0] {
	case "path":
		if _, _, err := parse(newFlags(configPathCommand), configPathCommand, args[1:]); err != nil {
			return err
		}
		p, err := config.Path()
		if err != nil {
			return err
		}
		fmt.Println(p)
		return nil
	case "check":
		return configCheck(args[1:])
	case "show":
		if _, _, err := parse(newFlags(configShowCommand), configShowCommand, args[1:]); err != nil {
			return err
		}
		e, err := loadEnv()
		if err != nil {
			return err
		}
		if msg := e.inForce.Describe(e.settingsPath); msg != "" {
			fmt.Printf("# %s\n", strings.ReplaceAll(msg, "\n", "\n# "))
			fmt.Printf("# the settings in force meanwhile:\n")
		} else {
			fmt.Printf("# the settings in force, from %s\n", e.settingsPath)
		}
		os.Stdout.Write(e.settings.TOML())
		fmt.Printf("\n# state folder: %s\n", e.stateDir)
		return nil
	}
	return configGroup.unknown(args[0])
}

func configCheck(args []string) error {
	pos, _, err := parse(newFlags(configCheckCommand), configCheckCommand, args)
	if err != nil {
		return err
	}
	var path string
	if len(pos) > 0 {
		path = pos[0]
	} else if path, err = config.Path(); err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && len(pos) == 0 {
		fmt.Printf("%s: no settings file; the defaults are in force\n", path)
		return nil
	}
	if err != nil {
		return err
	}
	_, problems := config.Parse(path, data, runtime.GOOS)
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		return exitError{1}
	}
	fmt.Printf("%s: ok\n", path)
	return nil
}
