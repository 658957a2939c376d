package agentshell

// ancestors are pid's parent, its parent's, and so on up to init, nearest first.
func ancestors(pid int) []int {
	var out []int
	for p := parentOf(pid); p > 1 && len(out) < 64; p = parentOf(p) {
		out = append(out, p)
	}
	return out
}

// ownedSession picks, of the sessions, the one owned by the nearest of the ancestors.
func ownedSession(sessions []sessionInfo, ancestors []int) (string, bool) {
	for _, a := range ancestors {
		for _, s := range sessions {
			if s.Owner == a {
				return s.ID, true
			}
		}
	}
	return "", false
}
