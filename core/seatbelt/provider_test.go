//go:build !darwin

package seatbelt

import (
	"context"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/sandbox"
)

func TestProviderOffMacOS(t *testing.T) {
	var pr Provider
	if pr.Name() != sandbox.Seatbelt {
		t.Errorf("Name = %q", pr.Name())
	}
	st := pr.Status(context.Background())
	if st.OK || !strings.Contains(st.Reason, "only on macOS") || st.Provider != sandbox.Seatbelt {
		t.Errorf("Status = %+v", st)
	}
	if st := pr.Check(context.Background()); st.OK {
		t.Errorf("Check = %+v", st)
	}
	if _, err := pr.Start(context.Background(), macPolicy(), sandbox.RunnerSpec{}); err == nil || !strings.Contains(err.Error(), "only on macOS") {
		t.Errorf("Start err = %v", err)
	}
	if _, err := pr.FollowDenials(context.Background(), testMarker, nil); err == nil || !strings.HasPrefix(err.Error(), "Seatbelt's denials are not reported for this run: ") {
		t.Errorf("FollowDenials off macOS: %v", err)
	}
}
