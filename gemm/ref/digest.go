package ref

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
)

// Digest returns the SHA-256, in lowercase hex, of the little-endian bytes of
// bits: 4 bytes per float32 (its IEEE bit pattern, so -0 and NaN payloads
// count), 2 per uint16 (a bf16 or f16 pattern). It is the fingerprint that
// golden files record for output bits, independent of the host's byte order.
func Digest[T float32 | uint16](bits []T) string {
	h := sha256.New()
	var buf []byte
	switch s := any(bits).(type) {
	case []float32:
		buf = make([]byte, 0, 4*len(s))
		for _, v := range s {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
	case []uint16:
		buf = make([]byte, 0, 2*len(s))
		for _, v := range s {
			buf = binary.LittleEndian.AppendUint16(buf, v)
		}
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}
