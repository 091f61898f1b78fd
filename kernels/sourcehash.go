package kernels

import (
	"crypto/sha256"
	"encoding/hex"
)

// SourceHash returns the hex SHA-256 of everything that goes into
// compiling family for arch except the compiler: the family's source, the
// shared headers it includes (includedHeaders), the flags (Flags) and the
// architecture. The embedded set
// records it per CUBIN, so a set built from other sources is detected (and
// never loaded) without comparing CUBIN bytes, which NVRTC does not
// reproduce exactly from one compile to the next.
func SourceHash(family string, arch Arch) (string, error) {
	src, err := Source(family)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	field := lengthPrefixed(h)
	field("detgemm kernels source")
	compileInputs(field, family, src, includedHeaders(src), Flags(arch), arch)
	return hex.EncodeToString(h.Sum(nil)), nil
}
