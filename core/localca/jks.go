package localca

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"strconv"
	"time"
	"unicode/utf16"
)

// JavaTrustStorePassword is the password of the trust stores JavaTrustStore makes: the one
// every JDK's own store has, which Java programs are set up to open it with.
const JavaTrustStorePassword = "changeit"

// JavaTrustStore makes a Java key store (JKS) of trusted certificates from a PEM bundle,
// for Java programs, which read their roots from such a store rather than from a bundle.
// Its integrity is sealed with JavaTrustStorePassword, as Java checks it.
func JavaTrustStore(bundle []byte, now time.Time) ([]byte, error) {
	var ders [][]byte
	for rest := bundle; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			ders = append(ders, b.Bytes)
		}
	}
	if len(ders) == 0 {
		return nil, errors.New("no certificate to put in a Java trust store")
	}
	var out bytes.Buffer
	u32 := func(v uint32) { binary.Write(&out, binary.BigEndian, v) }
	utf := func(s string) { binary.Write(&out, binary.BigEndian, uint16(len(s))); out.WriteString(s) }
	u32(0xFEEDFEED) // the JKS magic
	u32(2)          // its version
	u32(uint32(len(ders)))
	for i, der := range ders {
		u32(2) // a trusted certificate
		utf("root-" + strconv.Itoa(i))
		binary.Write(&out, binary.BigEndian, uint64(now.UnixMilli()))
		utf("X.509")
		u32(uint32(len(der)))
		out.Write(der)
	}
	// The seal: SHA-1 of the password (UTF-16, big-endian), a fixed phrase, and the store.
	h := sha1.New()
	for _, r := range utf16.Encode([]rune(JavaTrustStorePassword)) {
		h.Write([]byte{byte(r >> 8), byte(r)})
	}
	h.Write([]byte("Mighty Aphrodite"))
	h.Write(out.Bytes())
	out.Write(h.Sum(nil))
	return out.Bytes(), nil
}
