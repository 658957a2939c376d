package main
import (
 _ "github.com/pelletier/go-toml/v2"
 _ "github.com/fsnotify/fsnotify"
 _ "golang.org/x/sys/unix"
 _ "github.com/landlock-lsm/go-landlock/landlock"
 _ "go.uber.org/goleak"
 _ "golang.org/x/net/idna"
)
func main(){}
