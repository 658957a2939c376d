//go:build !darwin

package seatbelt

import (
	"context"
	"errors"
)

// StartFollower fails: denials are read from the macOS unified log, which only macOS has.
func StartFollower(context.Context, string) (*Follower, error) {
	return nil, errors.New("seatbelt: denials are read from the macOS unified log, which this OS does not have")
}
