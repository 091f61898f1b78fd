package kernels

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/detgemm/detgemm/nvrtc"
)

// Environment variables that configure the cache.
const (
	// EnvCacheDir overrides the cache directory.
	EnvCacheDir = "DETGEMM_CACHE_DIR"
	// EnvCache set to "off" (or 0, false, no) disables the cache.
	EnvCache = "DETGEMM_CACHE"
)

// cacheFormat is the entry format's version. Bump it when the entry layout,
// the key's contents or anything else that makes old entries wrong changes;
// it is part of both the key and the header.
const cacheFormat = 1

// entryMagic starts every cache entry.
var entryMagic = [8]byte{'D', 'G', 'C', 'U', 'B', 'I', 'N', 0}

// Entry layout, little-endian:
//
//	magic        [8]byte   "DGCUBIN\x00"
//	format       uint32    cacheFormat
//	reserved     uint32    0
//	key          [32]byte  the entry's key, so a misplaced file is caught
//	payloadLen   uint64
//	payloadSum   [32]byte  SHA-256 of the payload
//	payload:
//	  cubinLen   uint64
//	  cubin      [cubinLen]byte
//	  log        the rest
const entryHeaderLen = 8 + 4 + 4 + 32 + 8 + 32

// errCorrupt is wrapped by every reason decodeEntry rejects an entry.
var errCorrupt = errors.New("corrupt cache entry")

// cacheKey is the SHA-256 of everything that determines a module's CUBIN.
// Each field is length-prefixed so that no two different inputs can encode
// to the same bytes.
func cacheKey(family, source string, hdrs []nvrtc.Header, flags []string, arch Arch, nvrtcVersion string) [32]byte {
	h := sha256.New()
	field := lengthPrefixed(h)
	field("detgemm kernels cache")
	field(fmt.Sprint(cacheFormat))
	compileInputs(field, family, source, hdrs, flags, arch)
	field(nvrtcVersion)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// lengthPrefixed returns a writer of fields into h, each preceded by its
// length, so that no two different inputs encode to the same bytes.
func lengthPrefixed(h hash.Hash) func(string) {
	return func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
}

// compileInputs writes what a compile of family for arch reads, except the
// compiler: the cache key and SourceHash both hash it.
func compileInputs(field func(string), family, source string, hdrs []nvrtc.Header, flags []string, arch Arch) {
	field(family)
	field(source)
	field(fmt.Sprint(len(hdrs)))
	for _, hd := range hdrs {
		field(hd.Name)
		field(hd.Source)
	}
	field(fmt.Sprint(len(flags)))
	for _, f := range flags {
		field(f)
	}
	field(arch.String())
}

// entryName is the file name of an entry: readable prefix, then the key.
func entryName(family string, arch Arch, key [32]byte) string {
	return fmt.Sprintf("%s-%s-%s.cubin", family, arch, hex.EncodeToString(key[:]))
}

func encodeEntry(key [32]byte, cubin []byte, log string) []byte {
	payloadLen := 8 + len(cubin) + len(log)
	buf := make([]byte, entryHeaderLen+payloadLen)
	p := buf[entryHeaderLen:]
	binary.LittleEndian.PutUint64(p, uint64(len(cubin)))
	copy(p[8:], cubin)
	copy(p[8+len(cubin):], log)

	copy(buf[0:8], entryMagic[:])
	binary.LittleEndian.PutUint32(buf[8:], cacheFormat)
	copy(buf[16:48], key[:])
	binary.LittleEndian.PutUint64(buf[48:], uint64(payloadLen))
	sum := sha256.Sum256(p)
	copy(buf[56:88], sum[:])
	return buf
}

// decodeEntry checks everything it can before trusting a byte: magic,
// format, key, exact length and checksum, and that the CUBIN is an ELF
// image.
func decodeEntry(key [32]byte, b []byte) (cubin []byte, log string, err error) {
	if len(b) < entryHeaderLen {
		return nil, "", fmt.Errorf("%w: %d bytes, shorter than the header", errCorrupt, len(b))
	}
	if !bytes.Equal(b[0:8], entryMagic[:]) {
		return nil, "", fmt.Errorf("%w: bad magic", errCorrupt)
	}
	if f := binary.LittleEndian.Uint32(b[8:]); f != cacheFormat {
		return nil, "", fmt.Errorf("%w: format %d, want %d", errCorrupt, f, cacheFormat)
	}
	if r := binary.LittleEndian.Uint32(b[12:]); r != 0 {
		return nil, "", fmt.Errorf("%w: reserved field is %#x", errCorrupt, r)
	}
	if !bytes.Equal(b[16:48], key[:]) {
		return nil, "", fmt.Errorf("%w: entry is for another key", errCorrupt)
	}
	payload := b[entryHeaderLen:]
	if n := binary.LittleEndian.Uint64(b[48:]); n != uint64(len(payload)) {
		return nil, "", fmt.Errorf("%w: payload is %d bytes, header says %d", errCorrupt, len(payload), n)
	}
	if sum := sha256.Sum256(payload); !bytes.Equal(sum[:], b[56:88]) {
		return nil, "", fmt.Errorf("%w: checksum mismatch", errCorrupt)
	}
	if len(payload) < 8 {
		return nil, "", fmt.Errorf("%w: payload too short", errCorrupt)
	}
	n := binary.LittleEndian.Uint64(payload)
	if n > uint64(len(payload)-8) {
		return nil, "", fmt.Errorf("%w: CUBIN length %d exceeds payload", errCorrupt, n)
	}
	cubin = payload[8 : 8+n]
	if !isELF(cubin) {
		return nil, "", fmt.Errorf("%w: CUBIN is not an ELF image", errCorrupt)
	}
	return bytes.Clone(cubin), string(payload[8+n:]), nil
}

func isELF(b []byte) bool {
	return len(b) >= 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F'
}

// diskCache is one cache directory; the zero dir means disabled.
type diskCache struct {
	dir string
}

// load returns a valid entry, or ok == false. A missing entry is a plain
// miss; anything else (unreadable, corrupt) is a miss with a warning.
func (c diskCache) load(name string, key [32]byte) (cubin []byte, log string, ok bool, warning string) {
	if c.dir == "" {
		return nil, "", false, ""
	}
	path := filepath.Join(c.dir, name)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", false, ""
	}
	if err != nil {
		return nil, "", false, fmt.Sprintf("cache: cannot read %s: %v; rebuilt", path, err)
	}
	cubin, log, err = decodeEntry(key, b)
	if err != nil {
		return nil, "", false, fmt.Sprintf("cache: %s: %v; rebuilt and replaced", path, err)
	}
	return cubin, log, true, ""
}

// store writes an entry atomically: a temporary file in the same directory
// (so the rename never crosses file systems), synced, then renamed over the
// entry. Concurrent writers of one key each rename a complete file; the
// last one wins and both succeed. It returns a warning instead of failing.
func (c diskCache) store(name string, key [32]byte, cubin []byte, log string) (warning string) {
	if c.dir == "" {
		return ""
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Sprintf("cache: cannot create %s: %v; not cached", c.dir, err)
	}
	tmp, err := os.CreateTemp(c.dir, ".tmp-"+strings.TrimSuffix(name, ".cubin")+"-*")
	if err != nil {
		return fmt.Sprintf("cache: cannot write in %s: %v; not cached", c.dir, err)
	}
	tmpName := tmp.Name()
	fail := func(err error) string {
		tmp.Close()
		os.Remove(tmpName)
		return fmt.Sprintf("cache: cannot write %s: %v; not cached", filepath.Join(c.dir, name), err)
	}
	if _, err := tmp.Write(encodeEntry(key, cubin, log)); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmpName, filepath.Join(c.dir, name)); err != nil {
		os.Remove(tmpName)
		return fmt.Sprintf("cache: cannot write %s: %v; not cached", filepath.Join(c.dir, name), err)
	}
	return ""
}

// cacheDirFor resolves where the cache lives: options first, then the
// environment, then the user cache directory. An empty dir means disabled;
// the warning says why when that was not asked for.
func cacheDirFor(cfg buildConfig, getenv func(string) string) (dir, warning string) {
	enabled := true
	switch {
	case cfg.cacheSet:
		enabled = cfg.cacheOn
	case isOff(getenv(EnvCache)):
		enabled = false
	}
	if !enabled {
		return "", ""
	}
	if cfg.cacheDir != "" {
		return cfg.cacheDir, ""
	}
	if d := getenv(EnvCacheDir); d != "" {
		return d, ""
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Sprintf("cache: disabled: no user cache directory (%v); set %s", err, EnvCacheDir)
	}
	return filepath.Join(base, "detgemm"), ""
}

func isOff(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "off", "0", "false", "no":
		return true
	}
	return false
}
