module github.com/openworker/openworker

go 1.26.8

require (
	github.com/fsnotify/fsnotify v1.10.1
	github.com/landlock-lsm/go-landlock v0.11.2
	github.com/modelcontextprotocol/go-sdk v1.8.0
	github.com/pelletier/go-toml/v2 v2.4.3
	go.uber.org/goleak v1.3.0
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.50.0
)

require (
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/crypto v0.58.0
)

require (
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)

require (
	github.com/progrium/darwinkit v0.5.0
	golang.org/x/text v0.43.0 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.78
)

require (
	github.com/google/nftables v0.3.0
	github.com/mdlayher/netlink v1.7.3-0.20250113171957-fbb4dce95f42
)

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/mdlayher/socket v0.5.0 // indirect
)
