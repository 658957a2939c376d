package proxy

import "net"

// The kernel memory a session's connections make the daemon hold is bounded by sizing each
// socket's buffers (SO_SNDBUF and SO_RCVBUF, which also stop the kernel's autotuning from
// growing a receive buffer to tcp_rmem's maximum, 32 MiB on some machines) and by reading an
// origin only as fast as the sandbox drains it (a tunnel's relay does not read while its
// write waits). The sandbox's side is loopback, where small buffers cost nothing in speed.
// The origin's side needs a buffer the size of its bandwidth-delay product to be fast over a
// long path, so a few connections at once get a large one and the rest a small one.
const (
	// SandboxSideBuffer is each buffer of a connection's sandbox side.
	SandboxSideBuffer = 64 << 10
	// OriginBuffer is each buffer of a connection's origin side; FullOriginBuffer that of
	// a tunnel while its session has one of MaxFullBuffers to spare, and the daemon one of
	// DaemonFullBuffers, and FullSandboxSideBuffer that tunnel's sandbox side: with 64 KiB
	// there, 1 GiB through the relay moved at 57-71 % of a direct loopback connection's
	// speed, with 256 KiB at 89-98 % (BenchmarkRelay1GiB, same minute).
	OriginBuffer          = 64 << 10
	FullOriginBuffer      = 1 << 20
	FullSandboxSideBuffer = 256 << 10
	// FullTerminatedSandboxSide is the sandbox side's of a terminated connection given full
	// buffers: the proxy writes a read's worth of records (~280 KiB) at once, which a
	// buffer of 256 KiB made wait on the program; 1 GiB with the Go client: 1200 MiB/s with
	// 256 KiB, 1290-1300 with 1 MiB (BenchmarkStandIn1GiB, same minute).
	FullTerminatedSandboxSide = 1 << 20
	MaxFullBuffers            = 8
	DaemonFullBuffers         = 64
	// daemonLarge is how many large copy buffers (4 MiB, Linux) all the proxies sharing a
	// ConnLimit hold at once.
	daemonLarge = 16
)

// bufferSizer is a connection whose socket buffers can be sized (*net.TCPConn).
type bufferSizer interface {
	SetReadBuffer(int) error
	SetWriteBuffer(int) error
}

// sizeBuffers sets both of c's socket buffers to n bytes (the kernel doubles it for its own
// bookkeeping).
func sizeBuffers(c net.Conn, n int) {
	if s, ok := c.(bufferSizer); ok {
		s.SetReadBuffer(n)
		s.SetWriteBuffer(n)
	}
}

// sizeConn gives a new connection's two sides their buffers.
func sizeConn(client, up net.Conn) {
	sizeBuffers(client, SandboxSideBuffer)
	sizeBuffers(up, OriginBuffer)
}

// growFull gives a tunnel's sides full buffers, sandboxSide bytes on the sandbox's, if its
// session and the daemon have one to spare; the function it returns gives it back.
func (p *Proxy) growFull(client, up net.Conn, sandboxSide int) func() {
	if p.full.Add(1) > MaxFullBuffers {
		p.full.Add(-1)
		return func() {}
	}
	sh := p.opts.Shared
	if sh != nil && !sh.takeFull() {
		p.full.Add(-1)
		return func() {}
	}
	sizeBuffers(up, FullOriginBuffer)
	sizeBuffers(client, sandboxSide)
	return func() {
		p.full.Add(-1)
		if sh != nil {
			sh.giveFull()
		}
	}
}
