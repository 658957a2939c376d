package proxy

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/chacha20poly1305"
)

// A terminated connection's downloads. crypto/tls opens each of a host's records into a
// buffer of its own, copies the content out, copies it again into a record of the other
// side's and writes that record in a system call of its own: a 1 GiB download through two
// TLS stacks ran at half a tunnel's speed. When both of a connection's handshakes end in
// TLS 1.3, the proxy keeps the two directions a download takes itself — the host's records
// as they are read, and the sandbox side's as they are written — from the first record after
// the handshakes on, and a body whose length the answer's head gives passes where it lies:
// each record is opened with the host's key and sealed again, in place, with the sandbox
// side's (TLS 1.3 records of the two sides are the same size for the same content), and the
// records read in one call leave in one call, sealed and written on a second goroutine while
// the next are read and opened. The requests' two directions, and both handshakes, stay
// crypto/tls's. The keys come from each handshake's key log, kept in this connection's memory
// only: the proxy holds the content of these connections anyway. A host on TLS 1.2 is carried
// by crypto/tls both ways (batchConn, batchWriter).

const (
	recordHeaderLen  = 5
	maxPlaintext     = 16 << 10           // a TLS 1.3 record's content, at most
	maxCiphertext    = maxPlaintext + 256 // a TLS 1.3 record's protected part, at most
	aeadTagLen       = 16                 // every TLS 1.3 cipher suite's
	minCiphertext    = aeadTagLen + 1     // the tag and the content type
	maxPostHSBytes   = 64 << 10           // a post-handshake message (a session ticket), at most
	contentAlert     = 21
	contentHS        = 22
	contentAppData   = 23
	hsSessionTicket  = 4
	hsKeyUpdate      = 24
	alertCloseNotify = 0
)

// runBuffers hold what one read of the host's side takes in (runSize, and room for the rest
// of a record), and so one run of records passed in place, only while they hold something.
// A run of 512 KiB moved 1 GiB to the Go client at 1400 MiB/s where one of 256 KiB moved it
// at 1270 (BenchmarkStandIn1GiB, same minute); a download holds three at most.
const runSize = 512 << 10

var runBuffers = sync.Pool{New: func() any { b := make([]byte, 0, runSize+recordHeaderLen+maxCiphertext); return &b }}

// serverSecret keeps a handshake's server application traffic secret from its key log.
type serverSecret struct{ secret []byte }

func (s *serverSecret) Write(line []byte) (int, error) {
	// NSS key log format: LABEL <client random> <secret>, in hex.
	f := bytes.Fields(line)
	if len(f) == 3 && string(f[0]) == "SERVER_TRAFFIC_SECRET_0" {
		if b, err := hex.DecodeString(string(f[2])); err == nil {
			s.secret = b
		}
	}
	return len(line), nil
}

// trafficKeys protect one direction of a TLS 1.3 connection (RFC 8446 §7).
type trafficKeys struct {
	suite  uint16
	hash   func() hash.Hash
	keyLen int
	secret []byte
	aead   cipher.AEAD
	iv     [12]byte
	seq    uint64
}

func newTrafficKeys(suite uint16, secret []byte) (*trafficKeys, error) {
	k := &trafficKeys{suite: suite}
	switch suite {
	case tls.TLS_AES_128_GCM_SHA256:
		k.hash, k.keyLen = sha256.New, 16
	case tls.TLS_AES_256_GCM_SHA384:
		k.hash, k.keyLen = sha512.New384, 32
	case tls.TLS_CHACHA20_POLY1305_SHA256:
		k.hash, k.keyLen = sha256.New, chacha20poly1305.KeySize
	default:
		return nil, fmt.Errorf("cipher suite %s is not TLS 1.3's", tls.CipherSuiteName(suite))
	}
	if len(secret) != k.hash().Size() {
		return nil, errors.New("no traffic secret from the handshake")
	}
	return k, k.set(secret)
}

// set derives the key and IV of secret, from its first record on.
func (k *trafficKeys) set(secret []byte) error {
	key, err := expandLabel(k.hash, secret, "key", k.keyLen)
	if err != nil {
		return err
	}
	iv, err := expandLabel(k.hash, secret, "iv", len(k.iv))
	if err != nil {
		return err
	}
	if k.suite == tls.TLS_CHACHA20_POLY1305_SHA256 {
		k.aead, err = chacha20poly1305.New(key)
	} else {
		var b cipher.Block
		if b, err = aes.NewCipher(key); err == nil {
			k.aead, err = cipher.NewGCM(b)
		}
	}
	if err != nil {
		return err
	}
	copy(k.iv[:], iv)
	k.secret, k.seq = secret, 0
	return nil
}

// update moves to the next traffic secret, as a KeyUpdate asks.
func (k *trafficKeys) update() error {
	next, err := expandLabel(k.hash, k.secret, "traffic upd", k.hash().Size())
	if err != nil {
		return err
	}
	return k.set(next)
}

// expandLabel is HKDF-Expand-Label with an empty context.
func expandLabel(h func() hash.Hash, secret []byte, label string, n int) ([]byte, error) {
	label = "tls13 " + label
	info := append([]byte{byte(n >> 8), byte(n), byte(len(label))}, label...)
	info = append(info, 0)
	return hkdf.Expand(h, secret, string(info), n)
}

// nonce is the next record's: the IV with the sequence number in its last eight bytes.
func (k *trafficKeys) nonce() ([12]byte, error) {
	n := k.iv
	if k.seq == math.MaxUint64 {
		return n, errors.New("TLS sequence numbers are used up")
	}
	for i := range 8 {
		n[4+i] ^= byte(k.seq >> (56 - 8*i))
	}
	k.seq++
	return n, nil
}

// open decrypts a record in place (rec: its header and protected part) and returns its
// content type and content.
func (k *trafficKeys) open(rec []byte) (byte, []byte, error) {
	n, err := k.nonce()
	if err != nil {
		return 0, nil, err
	}
	inner, err := k.aead.Open(rec[recordHeaderLen:recordHeaderLen], n[:], rec[recordHeaderLen:], rec[:recordHeaderLen])
	if err != nil {
		return 0, nil, errors.New("a TLS record from the host did not decrypt")
	}
	if len(inner) > maxPlaintext+1 {
		return 0, nil, errors.New("a TLS record from the host is larger than TLS allows")
	}
	i := len(inner) - 1
	for i >= 0 && inner[i] == 0 { // padding
		i--
	}
	if i < 0 {
		return 0, nil, errors.New("a TLS record from the host has no content type")
	}
	return inner[i], inner[:i], nil
}

// seal encrypts in place a record whose protected part holds its plaintext (content, type
// and any padding) followed by room for the tag.
func (k *trafficKeys) seal(rec []byte) error {
	n, err := k.nonce()
	if err != nil {
		return err
	}
	inner := rec[recordHeaderLen : len(rec)-aeadTagLen]
	k.aead.Seal(inner[:0], n[:], inner, rec[:recordHeaderLen])
	return nil
}

// recordLen is the length of the record that begins b, once its header is there (0 before);
// a header no TLS 1.3 record after a handshake has is an error.
func recordLen(b []byte) (int, error) {
	if len(b) < recordHeaderLen {
		return 0, nil
	}
	n := int(binary.BigEndian.Uint16(b[3:]))
	if b[0] != contentAppData || b[1] != 3 || b[2] != 3 || n < minCiphertext || n > maxCiphertext {
		return 0, fmt.Errorf("the host sent a TLS record this connection does not carry (type %d, version %#x, %d bytes)", b[0], binary.BigEndian.Uint16(b[1:]), n)
	}
	return recordHeaderLen + n, nil
}

// recordAtATime gives a TLS stack the host's records no further than the end of the one it
// is reading: when its handshake ends it holds nothing of what follows, which hostRecords
// reads from r.
type recordAtATime struct {
	r    *bufio.Reader
	left int // of the record being read
}

func (a *recordAtATime) Read(p []byte) (int, error) {
	if a.left == 0 {
		hdr, err := a.r.Peek(recordHeaderLen)
		if err != nil {
			if len(hdr) > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		a.left = recordHeaderLen + int(binary.BigEndian.Uint16(hdr[3:]))
	}
	n, err := a.r.Read(p[:min(len(p), a.left)])
	a.left -= n
	return n, err
}

// hostRecords reads a host's side of a terminated connection after its handshake: its
// records, opened with the host's traffic keys.
type hostRecords struct {
	src   *bufio.Reader // the socket, with what the handshake read of it and did not use
	keys  *trafficKeys
	buf   *[]byte // what was read and not yet opened is (*buf)[r:w]; held only while it holds something
	r, w  int
	plain []byte // a record's content not yet read, within buf
	hs    []byte // post-handshake messages not yet whole
	err   error
}

func (h *hostRecords) Read(p []byte) (int, error) {
	for len(h.plain) == 0 {
		if h.err != nil {
			return 0, h.err
		}
		if err := h.next(); err != nil {
			h.err = err
			h.release()
		}
	}
	n := copy(p, h.plain)
	h.plain = h.plain[n:]
	h.release()
	return n, nil
}

// next opens the next record, reading it first if it is not all here: its content is left
// in plain; anything but content is handled.
func (h *hostRecords) next() error {
	rec, err := h.record()
	if err != nil {
		return err
	}
	h.r += len(rec)
	typ, content, err := h.keys.open(rec)
	if err != nil {
		return err
	}
	return h.took(typ, content)
}

// took handles an opened record: content is left in plain, the rest ends the connection or
// is done here.
func (h *hostRecords) took(typ byte, content []byte) error {
	switch typ {
	case contentAppData:
		h.plain = content
		return nil
	case contentAlert:
		if len(content) == 2 && content[1] == alertCloseNotify {
			return io.EOF
		}
		return fmt.Errorf("the host ended the TLS connection (alert %v)", content)
	case contentHS:
		return h.postHandshake(content)
	}
	return fmt.Errorf("the host sent a TLS record of type %d after the handshake", typ)
}

// postHandshake handles the messages a host may send after the handshake: a session ticket
// is of no use (the proxy resumes nothing), and a KeyUpdate moves to the host's next keys.
// When the host asks for an update of the proxy's own keys too, that is not done: that
// direction is crypto/tls's, which has no way to be asked, and the host's keys are new anyway.
func (h *hostRecords) postHandshake(content []byte) error {
	h.hs = append(h.hs, content...)
	for len(h.hs) >= 4 {
		n := int(h.hs[1])<<16 | int(h.hs[2])<<8 | int(h.hs[3])
		if n > maxPostHSBytes {
			return fmt.Errorf("the host sent a %d-byte message after the handshake", n)
		}
		if len(h.hs) < 4+n {
			break
		}
		switch h.hs[0] {
		case hsSessionTicket:
		case hsKeyUpdate:
			if n != 1 || len(h.hs) != 5 { // it ends its record (RFC 8446 §5.1)
				return errors.New("the host sent a malformed KeyUpdate")
			}
			if err := h.keys.update(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("the host sent a handshake message of type %d after the handshake", h.hs[0])
		}
		h.hs = h.hs[4+n:]
	}
	if len(h.hs) == 0 {
		h.hs = nil
	}
	return nil
}

// record is the next whole record in buf, read from src as needed.
func (h *hostRecords) record() ([]byte, error) {
	for {
		if rec, err := h.whole(); rec != nil || err != nil {
			return rec, err
		}
		if err := h.fill(); err != nil {
			return nil, err
		}
	}
}

// whole is the next record if all of it was read (nil if not), or the error its header is.
func (h *hostRecords) whole() ([]byte, error) {
	b := h.unread()
	n, err := recordLen(b)
	if err != nil || n == 0 || len(b) < n {
		return nil, err
	}
	return b[:n], nil
}

// unread is what was read of the socket and not yet opened.
func (h *hostRecords) unread() []byte {
	if h.buf == nil {
		return nil
	}
	return (*h.buf)[h.r:h.w:cap(*h.buf)]
}

// fill reads what the socket has into buf. An idle connection waits holding no buffer of its
// own. It is called only when no record's content waits in buf.
func (h *hostRecords) fill() error {
	if h.buf == nil {
		if _, err := h.src.Peek(1); err != nil {
			return err // io.EOF between records: a close without close_notify, which many hosts do and crypto/tls takes
		}
		h.buf = runBuffers.Get().(*[]byte)
		h.r, h.w = 0, 0
	}
	b := (*h.buf)[:cap(*h.buf)]
	if len(b)-h.w < recordHeaderLen+maxCiphertext {
		h.w = copy(b, b[h.r:h.w])
		h.r = 0
	}
	n, err := h.src.Read(b[h.w:])
	h.w += n
	if n > 0 {
		return nil
	}
	if err == io.EOF && h.r < h.w {
		err = io.ErrUnexpectedEOF // within a record
	}
	return err
}

// release gives buf back once nothing in it waits.
func (h *hostRecords) release() {
	if h.buf != nil && h.r == h.w && len(h.plain) == 0 {
		runBuffers.Put(h.buf)
		h.buf = nil
	}
}

// ready says whether a read would be answered without waiting on the socket.
func (h *hostRecords) ready() bool {
	if len(h.plain) > 0 {
		return true
	}
	rec, err := h.whole()
	return rec != nil || err != nil
}

// passBody passes the rest of an answer's body, which ends where end says, to the sandbox's
// side s: what is already open through s's records, and the records that hold nothing but
// body where they lie, opened and sealed again in place, each run of them in one write.
func (h *hostRecords) passBody(s *sandboxRecords, end bodyEnd) (err error) {
	var p *sealing
	defer func() {
		if ferr := p.finish(); err == nil {
			err = ferr
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the host ended before the body did
		}
	}()
	for !end.ended() {
		if len(h.plain) > 0 {
			if err := p.finish(); err != nil {
				return err
			}
			p = nil
			k, err := end.take(h.plain)
			if err != nil {
				h.err = err
				return err
			}
			if _, err := s.write(h.plain[:k]); err != nil {
				return err
			}
			h.plain = h.plain[k:]
			continue
		}
		if h.err != nil {
			return h.err
		}
		if p.failed() {
			err := p.finish()
			p = nil
			return err
		}
		if s.batch.asked.Load() {
			if err := p.finish(); err != nil {
				return err
			}
			p = nil
			if err := s.answerKeyUpdate(); err != nil {
				return err
			}
		}
		rec, err := h.record()
		if err != nil {
			h.err = err
			h.release()
			return err
		}
		start := h.r
		// endRun writes the run that ends before the record just opened (of n bytes), after
		// the runs given to p before it.
		endRun := func(n int) error {
			err := p.finish()
			p = nil
			if err == nil {
				err = s.writeRun((*h.buf)[start : h.r-n])
			}
			start = h.r
			return err
		}
		for rec != nil && !end.ended() {
			h.r += len(rec)
			typ, content, err := h.keys.open(rec)
			if err != nil {
				h.err = err
				return err
			}
			if typ == contentAppData {
				k, err := end.take(content)
				if err != nil {
					h.err = err
					return err
				}
				if k == len(content) {
					rec, _ = h.whole() // a bad header is met again by record()
					continue
				}
				// The body ends within this record: its part is sealed in a record of its
				// own, and the rest is left for the next answer, as a read leaves it.
				if err := endRun(len(rec)); err != nil {
					return err
				}
				if _, err := s.write(content[:k]); err != nil {
					return err
				}
				h.plain = content[k:]
				break
			}
			// Anything but content ends the run, which is written before the record is
			// taken as a read takes it.
			if err := endRun(len(rec)); err != nil {
				return err
			}
			if err := h.took(typ, content); err != nil {
				h.err = err
				return err
			}
			break
		}
		if start < h.r {
			// The run is sealed and written from this buffer on another goroutine while
			// the next is read and opened into another, which takes what is left of this.
			if p == nil {
				p = startSealing(s)
			}
			run, full := (*h.buf)[start:h.r], h.buf
			h.buf = runBuffers.Get().(*[]byte)
			h.w = copy((*h.buf)[:cap(*h.buf)], (*full)[h.r:h.w])
			h.r = 0
			p.runs <- sealRun{buf: full, recs: run}
		}
		h.release()
	}
	return nil
}

// sealing seals runs of opened records and writes them on a goroutine of its own: the
// host's side of a download and the sandbox's are each nearly a core's work.
type sealing struct {
	runs chan sealRun
	done chan error
	bad  atomic.Bool
}

type sealRun struct {
	buf  *[]byte // given back once written
	recs []byte
}

func startSealing(s *sandboxRecords) *sealing {
	// One run waits while one is written: three buffers at most, with the one being read.
	p := &sealing{runs: make(chan sealRun, 1), done: make(chan error, 1)}
	go func() {
		var err error
		for r := range p.runs {
			if err == nil {
				if err = s.writeRun(r.recs); err != nil {
					p.bad.Store(true)
				}
			}
			runBuffers.Put(r.buf)
		}
		p.done <- err
	}()
	return p
}

// failed says whether a run could not be written (the sandbox's side is gone).
func (p *sealing) failed() bool { return p != nil && p.bad.Load() }

// finish waits for the runs given to be written; nil does nothing.
func (p *sealing) finish() error {
	if p == nil {
		return nil
	}
	close(p.runs)
	return <-p.done
}

// sandboxRecords is the sandbox's side of a terminated connection after its handshake: read
// through its TLS stack (the embedded conn), written here, in records sealed with the
// sandbox side's traffic keys, as many as a write holds in one call.
type sandboxRecords struct {
	net.Conn          // the sandbox's TLS connection
	raw      net.Conn // its socket
	batch    *batchConn
	host     *hostRecords
	upBr     *bufio.Reader // the host's answers as read, over host
	mu       sync.Mutex    // the keys' sequence
	keys     *trafficKeys
	closed   bool
}

func (s *sandboxRecords) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write(p)
}

func (s *sandboxRecords) write(p []byte) (int, error) {
	if err := s.answerKeyUpdate(); err != nil {
		return 0, err
	}
	bp := batchBuffers.Get().(*[]byte)
	defer batchBuffers.Put(bp)
	buf := (*bp)[:0]
	written, sealed := 0, 0
	for written < len(p) {
		k := min(len(p)-sealed, maxPlaintext)
		off := len(buf)
		buf = appendRecord(buf, contentAppData, p[sealed:sealed+k], 0)
		if err := s.keys.seal(buf[off:]); err != nil {
			return written, err
		}
		sealed += k
		if sealed < len(p) && len(buf) < batchSize {
			continue
		}
		if _, err := s.raw.Write(buf); err != nil {
			return written, err
		}
		written, buf = sealed, buf[:0]
	}
	return written, nil
}

// appendRecord appends to buf a record of type typ holding content and pad bytes of padding,
// ready to be sealed.
func appendRecord(buf []byte, typ byte, content []byte, pad int) []byte {
	n := len(content) + 1 + pad + aeadTagLen
	buf = append(buf, contentAppData, 3, 3, byte(n>>8), byte(n))
	buf = append(buf, content...)
	buf = append(buf, typ)
	return append(buf, make([]byte, pad+aeadTagLen)...)
}

// answerKeyUpdate sends the KeyUpdate the program asked for, if it did (its TLS stack's own
// was not let through), and moves to the new keys: before the next content, as TLS 1.3 has it.
func (s *sandboxRecords) answerKeyUpdate() error {
	if !s.batch.asked.Swap(false) {
		return nil
	}
	rec := appendRecord(nil, contentHS, append(handshakeHeader(hsKeyUpdate, 1), 0), 0) // update_not_requested
	if err := s.keys.seal(rec); err != nil {
		return err
	}
	if _, err := s.raw.Write(rec); err != nil {
		return err
	}
	return s.keys.update()
}

// handshakeHeader begins a handshake message of type typ and n bytes.
func handshakeHeader(typ byte, n int) []byte {
	return []byte{typ, byte(n >> 16), byte(n >> 8), byte(n)}
}

// writeRun seals, in place, records opened from the host's side, and writes them in one call.
func (s *sandboxRecords) writeRun(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	for r := b; len(r) > 0; {
		n := recordHeaderLen + int(binary.BigEndian.Uint16(r[3:]))
		if err := s.keys.seal(r[:n]); err != nil {
			return err
		}
		r = r[n:]
	}
	_, err := s.raw.Write(b)
	return err
}

// ReadFrom is io.Copy's (a protocol switch's stream, a body that passes through Go's HTTP
// stack): what is read is written in as few calls as what waits allows.
func (s *sandboxRecords) ReadFrom(r io.Reader) (int64, error) {
	return gatherCopy(r, maxPlaintext, func() bool { return s.upBr.Buffered() > 0 || s.host.ready() }, s.Write)
}

// gatherCopy copies r to write, in batches: a read that would wait on the socket is made only
// when nothing is gathered (waiting says whether more is at hand), so what trickles (progress
// lines, a protocol switch's stream) is passed on as it comes; a batch ends when less than
// room is left.
func gatherCopy(r io.Reader, room int, waiting func() bool, write func([]byte) (int, error)) (int64, error) {
	bp := batchBuffers.Get().(*[]byte)
	defer batchBuffers.Put(bp)
	buf := (*bp)[:batchSize]
	var total int64
	for {
		n, err := r.Read(buf)
		for err == nil && n < len(buf)-room && waiting() {
			var k int
			k, err = r.Read(buf[n:])
			n += k
		}
		if n > 0 {
			if _, werr := write(buf[:n]); werr != nil {
				return total, werr
			}
			total += int64(n)
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// passAnswer passes an answer whose body has a length or is chunked as the host sent it:
// its head (resp, its hop-by-hop fields gone) as Go would write it, then its body, framing and
// all, record by record (hostRecords.passBody). false: the answer is not one of those, and
// nothing was written.
func (s *sandboxRecords) passAnswer(resp *http.Response) (bool, error) {
	var end bodyEnd
	var framing string
	switch {
	case resp.Body == http.NoBody:
		return false, nil
	case len(resp.TransferEncoding) == 0 && resp.ContentLength > 0:
		end, framing = &lengthEnd{left: resp.ContentLength}, "Content-Length: "+strconv.FormatInt(resp.ContentLength, 10)
	case len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked":
		end, framing = &chunkedEnd{}, "Transfer-Encoding: chunked"
	default:
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	head := answerHead(resp, framing)
	// The head and what the answer's reader holds of the body already leave together.
	k := min(s.upBr.Buffered(), MaxResponseHeadBytes)
	b, _ := s.upBr.Peek(k)
	k, err := end.take(b)
	if err != nil {
		return true, err
	}
	if _, err := s.write(append(head, b[:k]...)); err != nil {
		return true, err
	}
	s.upBr.Discard(k)
	if end.ended() {
		return true, nil
	}
	return true, s.host.passBody(s, end)
}

// answerHead is the head of resp as Go's Response.Write writes it, with framing (its
// Content-Length or Transfer-Encoding field) for the body.
func answerHead(resp *http.Response, framing string) []byte {
	text := strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode)+" ")
	if text == "" {
		text = http.StatusText(resp.StatusCode)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/%d.%d %03d %s\r\n", resp.ProtoMajor, resp.ProtoMinor, resp.StatusCode, text)
	if resp.Close {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString(framing + "\r\n")
	if len(resp.Trailer) > 0 {
		names := slices.Sorted(maps.Keys(resp.Trailer))
		b.WriteString("Trailer: " + strings.Join(names, ", ") + "\r\n")
	}
	resp.Header.WriteSubset(&b, map[string]bool{"Content-Length": true, "Transfer-Encoding": true, "Trailer": true})
	b.WriteString("\r\n")
	return b.Bytes()
}

// Close ends the sandbox's side with TLS's close_notify, then its socket.
func (s *sandboxRecords) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		rec := appendRecord(nil, contentAlert, []byte{1, alertCloseNotify}, 0) // warning
		if s.keys.seal(rec) == nil {
			s.raw.Write(rec)
		}
	}
	s.mu.Unlock()
	return s.Conn.Close()
}

// takeOver readies a terminated connection's two downloading directions to be carried by
// hostRecords and sandboxRecords, when both handshakes ended in TLS 1.3 with keys this code
// knows (the host's answers are then read through the result's upBr); false: crypto/tls
// carries all four.
func takeOver(inside *tls.Conn, batch *batchConn, inSecret *serverSecret, outside *tls.Conn, raw *bufio.Reader, handshake *recordAtATime, upSecret *serverSecret) (*sandboxRecords, bool) {
	in, out := inside.ConnectionState(), outside.ConnectionState()
	if in.Version != tls.VersionTLS13 || out.Version != tls.VersionTLS13 || handshake.left != 0 {
		return nil, false
	}
	inKeys, err := newTrafficKeys(in.CipherSuite, inSecret.secret)
	if err != nil {
		return nil, false
	}
	upKeys, err := newTrafficKeys(out.CipherSuite, upSecret.secret)
	if err != nil {
		return nil, false
	}
	batch.sealed = true // the sandbox's TLS stack writes nothing more
	host := &hostRecords{src: raw, keys: upKeys}
	s := &sandboxRecords{Conn: inside, raw: batch.Conn, batch: batch, host: host, keys: inKeys,
		upBr: bufio.NewReaderSize(host, MaxResponseHeadBytes)}
	return s, true
}
