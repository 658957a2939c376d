package session

import (
	"context"
	"os/exec"
	"os/user"
	"time"
)

// AccountShell is this user's login shell from the account record (Directory Services), for
// an app or daemon whose environment has no SHELL; "" when it cannot be read.
func AccountShell() string {
	u, err := user.Current()
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/bin/dscl", ".", "-read", "/Users/"+u.Username, "UserShell").Output()
	if err != nil {
		return ""
	}
	return dsclShell(string(out))
}
