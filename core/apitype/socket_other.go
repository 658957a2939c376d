//go:build !linux

package apitype

// maxSocketPath is sun_path's size less its terminating NUL (104 on macOS and the BSDs).
const maxSocketPath = 103

const moveStateDir = "the state folder is in the home folder's Library/Application Support/OpenWorker: a shorter HOME moves it"
