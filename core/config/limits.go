package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// The limit keys, exactly as written in config.toml.
const (
	KeyMaxProcesses             = "sandbox_max_processes"
	KeyMaxMemory                = "sandbox_max_memory"
	KeyCPUWeight                = "sandbox_cpu_weight"
	KeyMaxTmp                   = "sandbox_max_tmp"
	KeyMaxProxyConnections      = "sandbox_max_proxy_connections"
	KeyMaxProxyConnectionsTotal = "sandbox_max_proxy_connections_total"
)

// Limits bound what one session's sandbox may take from the machine. Default gives the
// values a machine without a settings file uses; the README says why each is what it is.
type Limits struct {
	// MaxProcesses caps the processes and threads alive in one sandbox.
	MaxProcesses int
	// MaxMemory caps one sandbox's memory (its private tmp's files included, where that is
	// kept in memory).
	MaxMemory Size
	// CPUWeight is one sandbox's share of busy CPUs, 1 to 10000; 100 is a normal program's.
	// 0 (not set) is 100 for each of the machine's CPUs.
	CPUWeight int
	// MaxTmp caps one sandbox's private tmp, its home inside.
	MaxTmp Size
	// MaxProxyConnections caps one session's open connections through its proxy.
	MaxProxyConnections int
	// MaxProxyConnectionsTotal caps the connections of all the daemon's sessions together.
	MaxProxyConnectionsTotal int
}

// Size is an amount of memory: Bytes, or Percent of the machine's memory.
type Size struct {
	Bytes   int64
	Percent int
}

// String is the size as the settings file writes it: "8GiB" or "50%".
func (s Size) String() string {
	if s.Percent > 0 {
		return strconv.Itoa(s.Percent) + "%"
	}
	units := []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range units {
		if s.Bytes >= u.size && s.Bytes%u.size == 0 {
			return strconv.FormatInt(s.Bytes/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(s.Bytes, 10) + "B"
}

func defaultLimits() Limits {
	return Limits{
		MaxProcesses:             4096,
		MaxMemory:                Size{Percent: 50},
		MaxTmp:                   Size{Percent: 25},
		MaxProxyConnections:      256,
		MaxProxyConnectionsTotal: 1024,
	}
}

// limitKV decodes one limit key; it says false when key is not one.
func (d *decoder) limitKV(v *unstable.Node, vi *valueIndex, key string) bool {
	l := &d.settings.Limits
	switch key {
	case KeyMaxProcesses:
		// The wall's own first process and the runner take a few; below 32 a build
		// would fail for want of processes.
		d.intIn(v, vi, key, 32, 4194304, &l.MaxProcesses)
	case KeyCPUWeight:
		d.intIn(v, vi, key, 1, 10000, &l.CPUWeight)
	case KeyMaxProxyConnections:
		d.intIn(v, vi, key, 1, 65536, &l.MaxProxyConnections)
	case KeyMaxProxyConnectionsTotal:
		d.intIn(v, vi, key, 1, 1<<20, &l.MaxProxyConnectionsTotal)
	case KeyMaxMemory:
		d.size(v, vi, key, 64<<20, &l.MaxMemory)
	case KeyMaxTmp:
		d.size(v, vi, key, 16<<20, &l.MaxTmp)
	default:
		return false
	}
	return true
}

// intIn checks that a value is a whole number from lo to hi.
func (d *decoder) intIn(v *unstable.Node, vi *valueIndex, key string, lo, hi int64, out *int) {
	if v.Kind != unstable.Integer {
		d.problem(vi.value.start, "%s must be a whole number from %d to %d, not %s", key, lo, hi, kindName(v.Kind))
		return
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(string(v.Data), "_", ""), 0, 64)
	if err != nil || n < lo || n > hi {
		d.problem(vi.value.start, "%s = %s is out of range; use a whole number from %d to %d", key, v.Data, lo, hi)
		return
	}
	*out = int(n)
}

// size checks a value written as a size with a binary unit ("8GiB") or a share of the
// machine's memory ("50%"), at least lo bytes.
func (d *decoder) size(v *unstable.Node, vi *valueIndex, key string, lo int64, out *Size) {
	if v.Kind != unstable.String {
		d.problem(vi.value.start, `%s must be a string such as "8GiB" or "50%%", not %s`, key, kindName(v.Kind))
		return
	}
	s, err := parseSize(string(v.Data), lo)
	if err != nil {
		d.problem(vi.value.start, "%s %q %v", key, v.Data, err)
		return
	}
	*out = s
}

func parseSize(text string, lo int64) (Size, error) {
	if p, ok := strings.CutSuffix(text, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 100 || p != strconv.Itoa(n) {
			return Size{}, fmt.Errorf("is not a share of the machine's memory; write a whole percent from 1%% to 100%%, such as \"50%%\"")
		}
		return Size{Percent: n}, nil
	}
	units := []struct {
		name  string
		shift uint
	}{{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}}
	for _, u := range units {
		num, ok := strings.CutSuffix(text, u.name)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n < 1 || num != strconv.FormatInt(n, 10) || n > (1<<62)>>u.shift {
			return Size{}, errNotASize
		}
		if b := n << u.shift; b < lo {
			return Size{}, fmt.Errorf("is too small; the least is %s", Size{Bytes: lo})
		}
		return Size{Bytes: n << u.shift}, nil
	}
	return Size{}, errNotASize
}

// diskSize checks a value written as a size on disk with a binary unit ("10GiB"), or "0".
func (d *decoder) diskSize(v *unstable.Node, vi *valueIndex, key string, out *int64) {
	if v.Kind != unstable.String {
		d.problem(vi.value.start, `%s must be a string such as "10GiB" or "0", not %s`, key, kindName(v.Kind))
		return
	}
	if string(v.Data) == "0" {
		*out = 0
		return
	}
	s, err := parseSize(string(v.Data), 1)
	if err == nil && s.Percent > 0 {
		err = errors.New(`is a share of the machine's memory; a size on disk is written with a unit, such as "10GiB", or "0" to keep none`)
	}
	if err != nil {
		d.problem(vi.value.start, "%s %q %v", key, v.Data, err)
		return
	}
	*out = s.Bytes
}

var errNotASize = errors.New(`is not a size; write a whole number and a unit (KiB, MiB, GiB or TiB), such as "8GiB", or a share of the machine's memory, such as "50%"`)

// limitsTOML writes the limit keys as show prints them.
func (l Limits) toml(b *strings.Builder) {
	fmt.Fprintf(b, "%s = %d\n", KeyMaxProcesses, l.MaxProcesses)
	fmt.Fprintf(b, "%s = %s\n", KeyMaxMemory, tomlString(l.MaxMemory.String()))
	if l.CPUWeight == 0 {
		// The default depends on the machine, which a settings file does not.
		fmt.Fprintf(b, "# %s is not set: 100 for each of the machine's CPUs\n", KeyCPUWeight)
	} else {
		fmt.Fprintf(b, "%s = %d\n", KeyCPUWeight, l.CPUWeight)
	}
	fmt.Fprintf(b, "%s = %s\n", KeyMaxTmp, tomlString(l.MaxTmp.String()))
	fmt.Fprintf(b, "%s = %d\n", KeyMaxProxyConnections, l.MaxProxyConnections)
	fmt.Fprintf(b, "%s = %d\n", KeyMaxProxyConnectionsTotal, l.MaxProxyConnectionsTotal)
}
