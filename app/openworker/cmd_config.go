package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/openworker/openworker/core/config"
)

func cmdConfig(args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		fmt.Print(`Usage:
  openworker config path          print where the machine's settings file is
  openworker config check [FILE]  check a settings file (default: the machine's); problems as FILE:LINE:COL: message
  openworker config show          print the settings in force
`)
		return nil
	}
	switch args[0] {
	case "path":
		p, err := config.Path()
		if err != nil {
			return err
		}
		fmt.Println(p)
		return nil
	case "check":
		var path string
		if len(args) > 1 {
			path = args[1]
		} else {
			p, err := config.Path()
			if err != nil {
				return err
			}
			path = p
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) && len(args) == 1 {
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
	case "show":
		e, err := loadEnv()
		if err != nil {
			return err
		}
		fmt.Printf("# the settings in force, from %s\n", e.settingsPath)
		os.Stdout.Write(e.settings.TOML())
		fmt.Printf("\n# state folder: %s\n", e.stateDir)
		return nil
	}
	return fmt.Errorf("unknown config command %q; use path, check or show", args[0])
}
