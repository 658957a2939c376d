package main

// folderBound says why what a session adds to its writable folders has no size bound on a
// Mac: APFS bounds volumes, not a folder's tree, and a session's folders are the person's own.
func folderBound() []string {
	return []string{"no size bound: a session may fill the disk its writable folders are on",
		"APFS has quotas for volumes only, not for one folder's tree, so there is none to give a session"}
}
