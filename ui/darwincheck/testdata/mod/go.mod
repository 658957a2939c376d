// A module the darwincheck tests type-check for darwin/arm64 with cgo: it
// uses the same darwinkit release as the app.
module example.com/darwincheckdata

go 1.26

require github.com/progrium/darwinkit v0.5.0
