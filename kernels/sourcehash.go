package kernels

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// SourceHash returns the hex SHA-256 of everything that goes into
// compiling family for arch except the compiler: the family's source, every
// shared header, the flags (Flags) and the architecture. The embedded set
// records it per CUBIN, so a set built from other sources is detected (and
// never loaded) without comparing CUBIN bytes, which NVRTC does not
// reproduce exactly from one compile to the next.
func SourceHash(family string, arch Arch) (string, error) {
	src, err := Source(family)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field("detgemm kernels source")
	field(family)
	field(src)
	hdrs := headers()
	field(fmt.Sprint(len(hdrs)))
	for _, hd := range hdrs {
		field(hd.Name)
		field(hd.Source)
	}
	flags := Flags(arch)
	field(fmt.Sprint(len(flags)))
	for _, f := range flags {
		field(f)
	}
	field(arch.String())
	return hex.EncodeToString(h.Sum(nil)), nil
}
