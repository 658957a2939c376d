//go:build linux && !amd64 && !arm64

package linux

// No filter on other architectures: the builder then always makes a user namespace of its
// own, which forbids nested ones.
const (
	seccompArch = 0
	seccompX32  = 0
)

var seccompLegacyRules []sysRule
