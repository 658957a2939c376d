package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

const dialProbeTimeout = 300 * time.Millisecond

// probe runs the wall check's probes from inside. Each Check says whether the wall behaved
// as it must; the core, outside, decides what a failure means.
func probe(ctx context.Context, a *ProbeArgs) []Check {
	var out []Check
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := ".openworker-probe-" + hex.EncodeToString(b[:])
	for _, dir := range a.Writable {
		c := Check{Name: "writable", Target: dir}
		p := filepath.Join(dir, name)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			c.Detail = "cannot create a file: " + errText(err)
		} else {
			_, werr := f.Write([]byte("probe"))
			f.Close()
			rerr := os.Remove(p)
			switch {
			case werr != nil:
				c.Detail = "cannot write a file: " + errText(werr)
			case rerr != nil:
				c.Detail = "cannot remove the probe file: " + errText(rerr)
			default:
				c.OK = true
			}
		}
		out = append(out, c)
	}
	for _, dir := range a.ReadOnly {
		c := Check{Name: "read-only", Target: dir}
		if _, err := os.ReadDir(dir); err != nil {
			c.Detail = "cannot be read: " + errText(err)
		} else if f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			f.Close()
			_ = os.Remove(filepath.Join(dir, name))
			c.Detail = "can be written"
		} else {
			c.OK = true
		}
		out = append(out, c)
	}
	if a.Home != "" {
		c := Check{Name: "home hidden", Target: a.Home}
		if des, err := os.ReadDir(a.Home); err == nil {
			c.Detail = "can be listed (" + strconv.Itoa(len(des)) + " entries)"
		} else if fi, err := os.Stat(a.Home); err == nil && !fi.IsDir() {
			c.Detail = "exists as a file"
		} else {
			c.OK = true
			c.Detail = errText(err)
		}
		out = append(out, c)
	}
	for _, addr := range a.Unreachable {
		c := Check{Name: "canary unreachable", Target: addr}
		conn, err := (&net.Dialer{Timeout: dialProbeTimeout}).DialContext(ctx, "tcp", addr)
		if err == nil {
			conn.Close()
			c.Detail = "accepted a connection"
		} else {
			c.OK = true
			c.Detail = errText(err)
		}
		out = append(out, c)
	}
	for _, addr := range a.Reachable {
		c := Check{Name: "proxy reachable", Target: addr}
		conn, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", addr)
		if err != nil {
			c.Detail = errText(err)
		} else {
			conn.Close()
			c.OK = true
		}
		out = append(out, c)
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err.Error()
	}
	return err.Error()
}
