module github.com/openworker/openworker

go 1.26.8

require (
	github.com/fsnotify/fsnotify v1.10.1
	github.com/landlock-lsm/go-landlock v0.11.2
	github.com/pelletier/go-toml/v2 v2.4.3
	go.uber.org/goleak v1.3.0
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/progrium/darwinkit v0.5.0
	golang.org/x/text v0.43.0 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.78
)
