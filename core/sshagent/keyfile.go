package sshagent

import (
	"bytes"
	"crypto/x509"
	"encoding/asn1"
	"io"
	"unicode/utf8"
)

// privateKeyMarks are what text holding a private key says somewhere, in every format ssh,
// OpenSSL, PuTTY and the commercial SSH write: a PEM block's "-----BEGIN … PRIVATE KEY-----"
// (OpenSSH, PKCS#1, PKCS#8, SEC1, encrypted or not), "---- BEGIN SSH2 ENCRYPTED PRIVATE
// KEY ----", and PuTTY's header.
var privateKeyMarks = [][]byte{[]byte("PRIVATE KEY"), []byte("PuTTY-User-Key-File")}

// scanChunk is how much of a file ScanKeyFile holds at once.
const scanChunk = 64 << 10

// ScanKeyFile reads r to its end and says why a file with its contents must stay out of a
// sandbox whose SSH keys stay outside, or "" for text that holds no private key. Every byte is
// looked at, a chunk at a time: a client certificate bundle puts its chain first and its key
// last (OpenSSH, which reads such a file, finds the key anywhere in it). A file that is not
// text (a NUL byte, or bytes that are not UTF-8) stays out too, as DER and PKCS#12 keys are
// binary and a key in them cannot be told from other data; the reason names the format when
// the file begins with a key or a PKCS#12 bundle. err is a read error: the file cannot be
// classified, and stays out.
func ScanKeyFile(r io.Reader) (why string, err error) {
	longest := 0
	for _, m := range privateKeyMarks {
		longest = max(longest, len(m))
	}
	buf := make([]byte, longest-1+scanChunk)
	carry := 0   // bytes kept from the last chunk, so that a mark across two is seen
	partial := 0 // of those, an incomplete UTF-8 sequence at the end of the last chunk
	first := true
	for {
		n, rerr := io.ReadFull(r, buf[carry:])
		if n > 0 {
			data := buf[:carry+n]
			if first {
				if why := binaryKind(data); why != "" {
					return why, nil
				}
				first = false
			}
			// The new bytes, with the incomplete character the last chunk ended with.
			text := data[carry-partial:]
			cut := len(text)
			for i := len(text) - 1; i >= 0 && i >= len(text)-utf8.UTFMax; i-- {
				if utf8.RuneStart(text[i]) {
					if !utf8.FullRune(text[i:]) {
						cut = i
					}
					break
				}
			}
			if bytes.IndexByte(text, 0) >= 0 || !utf8.Valid(text[:cut]) {
				return notText, nil
			}
			for _, m := range privateKeyMarks {
				if bytes.Contains(data, m) {
					if m[0] == 'P' && m[1] == 'u' {
						return "holds a PuTTY private key", nil
					}
					return "holds a private key", nil
				}
			}
			keep := min(len(data), longest-1)
			partial = min(len(text)-cut, keep)
			copy(buf, data[len(data)-keep:])
			carry = keep
		}
		switch {
		case rerr == io.EOF || rerr == io.ErrUnexpectedEOF:
			if partial > 0 {
				return notText, nil // it ends inside a character
			}
			return "", nil
		case rerr != nil:
			return "", rerr
		}
	}
}

// notText is why a file that is not text stays out.
const notText = "is not text, and a private key in a binary form (DER, PKCS#12) cannot be told from other data in it"

// binaryKind names the binary key format a file begins with: a PKCS#12 bundle, or a private
// key in DER (PKCS#8, PKCS#1, SEC1), alone or after other DER objects (a certificate chain)
// in b. "" otherwise.
func binaryKind(b []byte) string {
	if len(b) == 0 || b[0] != 0x30 {
		return ""
	}
	if looksPKCS12(b) {
		return "is a PKCS#12 bundle, which holds private keys"
	}
	for len(b) > 0 {
		var raw asn1.RawValue
		rest, err := asn1.Unmarshal(b, &raw)
		if err != nil {
			return ""
		}
		for _, p := range []struct {
			form  string
			parse func([]byte) error
		}{
			{"PKCS#8", func(d []byte) error { _, err := x509.ParsePKCS8PrivateKey(d); return err }},
			{"PKCS#1", func(d []byte) error { _, err := x509.ParsePKCS1PrivateKey(d); return err }},
			{"SEC1", func(d []byte) error { _, err := x509.ParseECPrivateKey(d); return err }},
		} {
			if p.parse(raw.FullBytes) == nil {
				return "holds a private key (DER, " + p.form + ")"
			}
		}
		b = rest
	}
	return ""
}

// looksPKCS12 says whether b begins as a PKCS#12 PFX does (RFC 7292 §4): a SEQUENCE, the
// version 3, and a ContentInfo of PKCS#7 data or signed data. Only the headers are read: the
// whole bundle need not be at hand.
func looksPKCS12(b []byte) bool {
	rest, ok := enter(b, 0x30)
	if !ok || !bytes.HasPrefix(rest, []byte{0x02, 0x01, 0x03}) {
		return false
	}
	rest, ok = enter(rest[3:], 0x30)
	if !ok {
		return false
	}
	const pkcs7 = "\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x07" // OID 1.2.840.113549.1.7.
	return len(rest) > len(pkcs7) && string(rest[:len(pkcs7)]) == pkcs7 && (rest[len(pkcs7)] == 1 || rest[len(pkcs7)] == 2)
}

// enter reads a DER header of tag at the start of b and returns what follows it (the
// contents, which may run past b's end).
func enter(b []byte, tag byte) ([]byte, bool) {
	if len(b) < 2 || b[0] != tag {
		return nil, false
	}
	switch l := b[1]; {
	case l < 0x80:
		return b[2:], true
	case l == 0x80 || l > 0x84 || len(b) < 2+int(l&0x7f):
		return nil, false
	default:
		return b[2+int(l&0x7f):], true
	}
}
