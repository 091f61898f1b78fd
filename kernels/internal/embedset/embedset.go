// Package embedset reads and writes the files of kernels' embedded CUBIN
// set and generates its table (kernels/zembedded.go) from them.
//
// Each file, embedded/<dir>/<family>.gz, is gzip of: uint64 CUBIN length
// (little-endian), the CUBIN, then the NVRTC log. The gzip header's comment
// carries the file's metadata (Meta), so the table is always derived from
// the files present and never kept by hand. <dir> is the architecture for
// the base variant ("sm_90a") and <arch>+<variant> for the others
// ("sm_90a+cuda13").
package embedset

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"go/format"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Variant is one build of the set: which NVRTC major version makes it and
// the oldest driver (cuDriverGetVersion) that loads its CUBINs.
type Variant struct {
	Name       string
	NVRTCMajor int
	// MinDriver is 0 for the base variant: it loads on every driver
	// detgemm runs on (CUDA 12.0, driver 525, and newer).
	MinDriver int
	// Archs are the architectures gencubin builds for it by default.
	Archs []string
}

// Base is the variant every shipped architecture has.
const Base = "base"

// Variants are the known variants, oldest first.
var Variants = []Variant{
	{Name: Base, NVRTCMajor: 12, MinDriver: 0, Archs: []string{"sm_80", "sm_86", "sm_89", "sm_90a"}},
	// NVRTC 13 writes the new CUDA ELF ABI (EI_ABIVERSION 8), which CUDA
	// 12 drivers are not guaranteed to load.
	// sm_120 is left out by default to keep the set's size down.
	{Name: "cuda13", NVRTCMajor: 13, MinDriver: 13000, Archs: []string{"sm_90a", "sm_100a"}},
}

// ErrBadFile is matched when a file of the set is damaged or its metadata
// disagrees with its place or its contents.
var ErrBadFile = errors.New("embedset: bad embedded CUBIN file")

// LookupVariant returns the named variant.
func LookupVariant(name string) (Variant, error) {
	for _, v := range Variants {
		if v.Name == name {
			return v, nil
		}
	}
	names := make([]string, len(Variants))
	for i, v := range Variants {
		names[i] = v.Name
	}
	return Variant{}, fmt.Errorf("embedset: unknown variant %q (want one of %s)", name, strings.Join(names, ", "))
}

func variantRank(name string) int {
	return slices.IndexFunc(Variants, func(v Variant) bool { return v.Name == name })
}

// Dir is the directory (under embedded/) of arch's files of variant.
func Dir(arch, variant string) string {
	if variant == Base {
		return arch
	}
	return arch + "+" + variant
}

// Meta describes one file of the set.
type Meta struct {
	Family, Arch, Variant string
	NVRTC                 string // "13.0"
	MinDriver             int
	SourceHash            string // kernels.SourceHash(Family, Arch)
	CUBINSHA256           string
	Size                  int // CUBIN bytes
}

const magic = "detgemm-cubin/1"

// comment renders m for the gzip header.
func (m Meta) comment() string {
	return fmt.Sprintf("%s family=%s arch=%s variant=%s nvrtc=%s min-driver=%d source-sha256=%s cubin-sha256=%s cubin-size=%d",
		magic, m.Family, m.Arch, m.Variant, m.NVRTC, m.MinDriver, m.SourceHash, m.CUBINSHA256, m.Size)
}

func parseComment(c string) (Meta, error) {
	f := strings.Fields(c)
	if len(f) == 0 || f[0] != magic {
		return Meta{}, fmt.Errorf("%w: no %s metadata in the gzip header (rewrap it with gencubin -import)", ErrBadFile, magic)
	}
	kv := map[string]string{}
	for _, p := range f[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return Meta{}, fmt.Errorf("%w: metadata field %q", ErrBadFile, p)
		}
		kv[k] = v
	}
	m := Meta{Family: kv["family"], Arch: kv["arch"], Variant: kv["variant"], NVRTC: kv["nvrtc"],
		SourceHash: kv["source-sha256"], CUBINSHA256: kv["cubin-sha256"]}
	var err1, err2 error
	m.MinDriver, err1 = strconv.Atoi(kv["min-driver"])
	m.Size, err2 = strconv.Atoi(kv["cubin-size"])
	if err := errors.Join(err1, err2); err != nil || m.Family == "" || m.Arch == "" || m.Variant == "" || m.NVRTC == "" ||
		len(m.SourceHash) != 64 || len(m.CUBINSHA256) != 64 {
		return Meta{}, fmt.Errorf("%w: incomplete metadata %q", ErrBadFile, c)
	}
	return m, nil
}

// Check reports metadata that disagrees with its variant's rules.
func (m Meta) Check() error {
	v, err := LookupVariant(m.Variant)
	if err != nil {
		return err
	}
	major, _, _ := strings.Cut(m.NVRTC, ".")
	if n, err := strconv.Atoi(major); err != nil || n != v.NVRTCMajor {
		return fmt.Errorf("%w: %s/%s: variant %s is built by NVRTC %d.x, the file says NVRTC %s",
			ErrBadFile, m.Arch, m.Family, v.Name, v.NVRTCMajor, m.NVRTC)
	}
	if m.MinDriver != v.MinDriver {
		return fmt.Errorf("%w: %s/%s: variant %s needs driver %d, the file says %d", ErrBadFile, m.Arch, m.Family, v.Name, v.MinDriver, m.MinDriver)
	}
	return nil
}

// NewMeta fills the CUBIN's checksum and size into a Meta.
func NewMeta(family, arch, variant, nvrtc, sourceHash string, cubin []byte) (Meta, error) {
	v, err := LookupVariant(variant)
	if err != nil {
		return Meta{}, err
	}
	sum := sha256.Sum256(cubin)
	m := Meta{Family: family, Arch: arch, Variant: variant, NVRTC: nvrtc, MinDriver: v.MinDriver,
		SourceHash: sourceHash, CUBINSHA256: hex.EncodeToString(sum[:]), Size: len(cubin)}
	return m, m.Check()
}

// Pack writes one file: the payload gzipped, m in the header. The output
// depends only on its inputs (no time stamp).
func Pack(m Meta, cubin []byte, log string) ([]byte, error) {
	var raw bytes.Buffer
	_ = binary.Write(&raw, binary.LittleEndian, uint64(len(cubin)))
	raw.Write(cubin)
	raw.WriteString(log)
	var z bytes.Buffer
	w, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	w.Comment = m.comment()
	if _, err := w.Write(raw.Bytes()); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return z.Bytes(), nil
}

// Unpack reads one file. legacy, when non-nil, is used for a file written
// before the header carried metadata (then the header must have none);
// otherwise the header's is returned. The CUBIN is checked against the
// metadata's length and checksum.
func Unpack(data []byte, legacy *Meta) (m Meta, cubin []byte, log string, err error) {
	z, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return Meta{}, nil, "", fmt.Errorf("%w: %w", ErrBadFile, err)
	}
	if legacy != nil {
		m = *legacy
	} else if m, err = parseComment(z.Comment); err != nil {
		return Meta{}, nil, "", err
	}
	b, err := io.ReadAll(z)
	if err != nil {
		return Meta{}, nil, "", fmt.Errorf("%w: %w", ErrBadFile, err)
	}
	if len(b) < 8 {
		return Meta{}, nil, "", fmt.Errorf("%w: too short", ErrBadFile)
	}
	n := binary.LittleEndian.Uint64(b)
	if n != uint64(m.Size) || n > uint64(len(b)-8) {
		return Meta{}, nil, "", fmt.Errorf("%w: CUBIN length %d, metadata says %d", ErrBadFile, n, m.Size)
	}
	cubin = b[8 : 8+n]
	if sum := sha256.Sum256(cubin); hex.EncodeToString(sum[:]) != m.CUBINSHA256 {
		return Meta{}, nil, "", fmt.Errorf("%w: CUBIN checksum mismatch", ErrBadFile)
	}
	if len(cubin) < 4 || string(cubin[:4]) != "\x7fELF" {
		return Meta{}, nil, "", fmt.Errorf("%w: CUBIN is not an ELF image", ErrBadFile)
	}
	return m, cubin, string(b[8+n:]), nil
}

// Entry is one file of the set as read from disk.
type Entry struct {
	Meta
	Packed int // compressed bytes
}

// ReadSet reads every file under fsys (the embedded/ directory) and checks
// each: metadata present and consistent with its directory, name and
// variant; payload matching it. The entries are sorted as the table lists
// them: by architecture number, variant (oldest first), family.
func ReadSet(fsys fs.FS) ([]Entry, error) {
	var out []Entry
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if path.Ext(p) != ".gz" || strings.Count(p, "/") != 1 {
			if path.Base(p) == "README.md" {
				return nil
			}
			return fmt.Errorf("%w: %s: not <dir>/<family>.gz", ErrBadFile, p)
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		m, _, _, err := Unpack(data, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if err := m.Check(); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if want := path.Join(Dir(m.Arch, m.Variant), m.Family+".gz"); want != p {
			return fmt.Errorf("%w: %s holds %s for %s, variant %s (belongs in %s)", ErrBadFile, p, m.Family, m.Arch, m.Variant, want)
		}
		out = append(out, Entry{Meta: m, Packed: len(data)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	Sort(out)
	return out, nil
}

// archNumber orders "sm_90a" as 90 (then the suffix).
func archNumber(a string) (int, string) {
	s := strings.TrimPrefix(a, "sm_")
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, _ := strconv.Atoi(s[:i])
	return n, s[i:]
}

// Sort puts entries in table order.
func Sort(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int {
		an, as := archNumber(a.Arch)
		bn, bs := archNumber(b.Arch)
		if an != bn {
			return an - bn
		}
		if c := strings.Compare(as, bs); c != 0 {
			return c
		}
		if c := variantRank(a.Variant) - variantRank(b.Variant); c != 0 {
			return c
		}
		return strings.Compare(a.Family, b.Family)
	})
}

// TableSource is kernels/zembedded.go for the entries, gofmt'd.
func TableSource(es []Entry) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by kernels/internal/gencubin from the files under kernels/embedded; DO NOT EDIT.\n\n")
	fmt.Fprintf(&b, "//go:build !detgemm_noembed\n\n")
	fmt.Fprintf(&b, "package kernels\n\n")
	fmt.Fprintf(&b, "// embeddedTable has one row per CUBIN in embedded/<arch>/<family>.gz (the\n")
	fmt.Fprintf(&b, "// base variant) or embedded/<arch>+<variant>/<family>.gz, as its gzip\n")
	fmt.Fprintf(&b, "// header describes it.\n")
	fmt.Fprintf(&b, "var embeddedTable = []embeddedRow{\n")
	for _, e := range es {
		fmt.Fprintf(&b, "\t{family: %q, arch: %q, variant: %q, nvrtc: %q, minDriver: %d, sourceHash: %q, cubinSHA256: %q, size: %d, packed: %d},\n",
			e.Family, e.Arch, e.Variant, e.NVRTC, e.MinDriver, e.SourceHash, e.CUBINSHA256, e.Size, e.Packed)
	}
	fmt.Fprintf(&b, "}\n")
	return format.Source(b.Bytes())
}
