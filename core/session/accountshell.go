package session

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// dsclShell is the shell in `dscl . -read /Users/NAME UserShell`'s answer ("UserShell:
// /bin/zsh"), or "".
func dsclShell(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "UserShell:"); ok {
			if v = strings.TrimSpace(v); filepath.IsAbs(v) {
				return v
			}
		}
	}
	return ""
}

// passwdShell is the login shell of user uid in a passwd file, or "".
func passwdShell(file string, uid int) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) == 7 && fields[2] == strconv.Itoa(uid) && filepath.IsAbs(fields[6]) {
			return fields[6]
		}
	}
	return ""
}
