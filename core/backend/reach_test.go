package backend

import (
	"strings"
	"testing"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/sandbox"
)

// TestRuleSaysWhatOpenModeReaches: on Linux the status says open mode shares this machine's
// network, unless the provider gives open mode a network of its own.
func TestRuleSaysWhatOpenModeReaches(t *testing.T) {
	in := &config.InForce{Settings: config.Default()}
	shared := strings.Join(Machine{Settings: in, Native: sandbox.Linux, GOOS: "linux"}.Rule(), "\n")
	if !strings.Contains(shared, "shares this machine's network") {
		t.Errorf("without a network of its own:\n%s", shared)
	}
	own := strings.Join(Machine{Settings: in, Native: sandbox.Linux, GOOS: "linux", OpenOwnNetwork: true}.Rule(), "\n")
	if strings.Contains(own, "shares this machine's network") || !strings.Contains(own, "loopback and private services stay out of reach") {
		t.Errorf("with a network of its own:\n%s", own)
	}
	if mac := strings.Join(Machine{Settings: in, Native: sandbox.Seatbelt, GOOS: "darwin"}.Rule(), "\n"); strings.Contains(mac, "network open") {
		t.Errorf("on a Mac:\n%s", mac)
	}
}
