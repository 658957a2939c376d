package apitype

// maxSocketPath is sun_path's size less its terminating NUL.
const maxSocketPath = 107

const moveStateDir = "set XDG_STATE_HOME to a shorter absolute folder (the state folder is $XDG_STATE_HOME/openworker)"
