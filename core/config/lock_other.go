//go:build !unix

package config

import "errors"

// lockFile: write-back needs flock, which OpenWorker's platforms (macOS, Linux) have.
func lockFile(path string) (unlock func(), err error) {
	return nil, errors.New("changing the settings file is supported on macOS and Linux only")
}
