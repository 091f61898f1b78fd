package kernels

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"sync"
)

// The embedded set (embedfs.go, zembedded.go): every family compiled
// ahead of time by go generate for the architectures users have.
// Each file is gzip of: uint64 CUBIN length (little-endian), the CUBIN,
// then the NVRTC log (which holds the ptxas resource report).
const embeddedDir = "embedded"

// EmbeddedArchs returns the architectures the embedded set was built for.
func EmbeddedArchs() []Arch {
	out := make([]Arch, 0, len(embeddedArchs))
	for _, s := range embeddedArchs {
		if a, err := ParseArch(s); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// EmbeddedNVRTCVersion is the NVRTC version ("12.4") that compiled the
// embedded set.
func EmbeddedNVRTCVersion() string { return embeddedNVRTC }

// Embedded reports whether the embedded set can serve every named family
// for arch (every family FamiliesFor(arch) lists when none is named):
// each is in the set and was built from the sources and flags of this
// build. Build in ModeAuto then opens no NVRTC.
func Embedded(arch Arch, families ...string) bool {
	if len(families) == 0 {
		families = FamiliesFor(arch)
	}
	for _, f := range families {
		if _, why := embeddedRowFor(f, arch); why != "" {
			return false
		}
	}
	return len(families) > 0
}

// hashes memoises SourceHash: the sources are embedded, so it cannot change
// within a process.
var hashes sync.Map // family+"/"+arch -> string

func sourceHashCached(family string, arch Arch) (string, error) {
	k := family + "/" + arch.String()
	if h, ok := hashes.Load(k); ok {
		return h.(string), nil
	}
	h, err := SourceHash(family, arch)
	if err != nil {
		return "", err
	}
	hashes.Store(k, h)
	return h, nil
}

// embeddedRowFor finds the row of family/arch; why is empty when the set
// holds it built from the current sources, else says why not.
func embeddedRowFor(family string, arch Arch) (row embeddedRow, why string) {
	for _, r := range embeddedTable {
		if r.family != family || r.arch != arch.String() {
			continue
		}
		h, err := sourceHashCached(family, arch)
		if err != nil {
			return r, err.Error()
		}
		if h != r.sourceHash {
			return r, "stale: the embedded CUBIN was built from other sources or flags (run go generate ./kernels)"
		}
		return r, ""
	}
	return embeddedRow{}, "absent"
}

// loadEmbedded returns family's module for arch from the embedded set,
// or nil and the reason it cannot (absent, stale, damaged).
func loadEmbedded(family string, arch Arch) (*Module, string) {
	row, why := embeddedRowFor(family, arch)
	if why != "" {
		return nil, why
	}
	cubin, log, err := decodeEmbedded(row)
	if err != nil {
		return nil, err.Error()
	}
	return &Module{Family: family, CUBIN: cubin, Log: log, Resources: ParseResources(log), Origin: OriginEmbedded}, ""
}

// decodeEmbedded reads and checks one file of the set: length, checksum
// and ELF header, like a cache entry.
func decodeEmbedded(row embeddedRow) (cubin []byte, log string, err error) {
	name := path.Join(embeddedDir, row.arch, row.family+".gz")
	f, err := embeddedFS.Open(name)
	if err != nil {
		return nil, "", fmt.Errorf("embedded %s: %w", name, err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, "", fmt.Errorf("embedded %s: %w", name, err)
	}
	var raw bytes.Buffer
	raw.Grow(row.size + 64<<10)
	if _, err := io.Copy(&raw, z); err != nil {
		return nil, "", fmt.Errorf("embedded %s: %w", name, err)
	}
	b := raw.Bytes()
	if len(b) < 8 {
		return nil, "", fmt.Errorf("embedded %s: %w: too short", name, errCorrupt)
	}
	n := binary.LittleEndian.Uint64(b)
	if n != uint64(row.size) || n > uint64(len(b)-8) {
		return nil, "", fmt.Errorf("embedded %s: %w: CUBIN length %d, table says %d", name, errCorrupt, n, row.size)
	}
	cubin = b[8 : 8+n]
	if sum := sha256.Sum256(cubin); hex.EncodeToString(sum[:]) != row.cubinSHA256 {
		return nil, "", fmt.Errorf("embedded %s: %w: checksum mismatch", name, errCorrupt)
	}
	if !isELF(cubin) {
		return nil, "", fmt.Errorf("embedded %s: %w: CUBIN is not an ELF image", name, errCorrupt)
	}
	return cubin, string(b[8+n:]), nil
}
