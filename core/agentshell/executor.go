package agentshell

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/openworker/openworker/core/codexexec"
)

// ExecutorFlag starts the shell as Codex's executor for a configuration a person keeps
// (~/.codex/environments.toml names this program with it, and the codex program after it):
// it starts that codex's exec-server in the host's session and passes its messages both
// ways, as openworker agent's bridge does over its WebSocket.
const ExecutorFlag = "--codex-executor"

// runExecutor is the shell as Codex's executor.
func runExecutor(o Options, c *client, id, program, dir string) int {
	if !filepath.IsAbs(program) {
		fmt.Fprintf(o.Stderr, "openworker: %s needs the codex program's absolute path after it\n", ExecutorFlag)
		return 126
	}
	s := codexexec.NewStream(nil)
	in, feed := io.Pipe()
	go func() {
		var lines codexexec.Lines
		buf := make([]byte, 64<<10)
		for {
			n, err := o.Stdin.Read(buf)
			for _, line := range lines.Add(buf[:n]) {
				s.FromHost(line)
				if _, werr := feed.Write(append(line, '\n')); werr != nil {
					return
				}
			}
			if err != nil {
				feed.Close()
				return
			}
		}
	}()
	var lines codexexec.Lines
	res, err := c.exec(id, execRequest{Argv: []string{program, "exec-server", "--listen", "stdio"}, Dir: dir, Apart: true, Tag: newTag()}, in,
		func(stream string, data []byte) {
			if stream != "stdout" {
				_, _ = o.Stderr.Write(data)
				return
			}
			for _, line := range lines.Add(data) {
				for _, msg := range s.FromExecutor(line) {
					_, _ = o.Stdout.Write(append(msg, '\n'))
				}
			}
		})
	if err != nil {
		fmt.Fprintf(o.Stderr, "openworker: Codex's executor in the sandbox stopped: %v\n", err)
		return 126
	}
	return res.ExitCode
}
