package kernels

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
)

// The embedded set (embedfs.go, zembedded.go): every family compiled
// ahead of time by go generate for the architectures users have, in one or
// more variants per architecture. The base variant (NVRTC 12.x, the old
// CUDA ELF ABI) loads on every driver detgemm supports; a newer variant
// ("cuda13": NVRTC 13.x, the new ABI, faster tensor-core code on Hopper)
// needs a driver reporting at least its minDriver. Each file is gzip of:
// uint64 CUBIN length (little-endian), the CUBIN, then the NVRTC log (which
// holds the ptxas resource report); its gzip header carries the metadata
// zembedded.go is generated from.
const embeddedDir = "embedded"

// baseVariant is the variant that needs no particular driver.
const baseVariant = "base"

// EnvEmbeddedVariant, when set, restricts the embedded set to one variant
// ("base" or "cuda13") when no WithEmbeddedVariant option is given: for
// comparing variants, or for a driver that reports a version whose CUBINs
// it then fails to load.
const EnvEmbeddedVariant = "DETGEMM_EMBEDDED_VARIANT"

// ErrBadVariant is matched when DETGEMM_EMBEDDED_VARIANT (or
// WithEmbeddedVariant) names no variant of the embedded set.
var ErrBadVariant = errors.New("kernels: unknown embedded variant")

// ErrEmbeddedLoad is matched when the driver refused to load an embedded
// CUBIN and the mode (ModeEmbedded) allows no other source.
var ErrEmbeddedLoad = errors.New("kernels: the CUDA driver could not load an embedded CUBIN")

// WithDriverVersion tells Build the CUDA driver's version
// (cuDriverGetVersion, e.g. 13000), which decides the embedded variant: the
// newest one the driver can load. 0, the default, means unknown: only the
// base variant is used.
func WithDriverVersion(v int) BuildOption {
	return func(b *buildConfig) { b.driver = v }
}

// WithEmbeddedVariant restricts the embedded set to the named variant,
// overriding DETGEMM_EMBEDDED_VARIANT; "" takes the newest the driver can
// load.
func WithEmbeddedVariant(name string) BuildOption {
	return func(b *buildConfig) { b.variant, b.variantSet = name, true }
}

// EmbeddedVariant describes one variant of the embedded set.
type EmbeddedVariant struct {
	Name      string // "base", "cuda13"
	NVRTC     string // the NVRTC version that built it, "12.4"
	MinDriver int    // the cuDriverGetVersion it needs; 0 for base
	Archs     []Arch // the architectures it holds
}

// EmbeddedVariants lists the variants of the embedded set, base first.
func EmbeddedVariants() []EmbeddedVariant {
	var out []EmbeddedVariant
	for _, r := range embeddedTable {
		i := slices.IndexFunc(out, func(v EmbeddedVariant) bool { return v.Name == r.variant })
		if i < 0 {
			out = append(out, EmbeddedVariant{Name: r.variant, NVRTC: r.nvrtc, MinDriver: r.minDriver})
			i = len(out) - 1
		}
		if a, err := ParseArch(r.arch); err == nil && !slices.Contains(out[i].Archs, a) {
			out[i].Archs = append(out[i].Archs, a)
		}
	}
	slices.SortStableFunc(out, func(a, b EmbeddedVariant) int { return a.MinDriver - b.MinDriver })
	return out
}

// EmbeddedArchs returns the architectures the embedded set holds, in any
// variant (some need a recent driver: EmbeddedVariants, EmbeddedFor).
func EmbeddedArchs() []Arch {
	var out []Arch
	for _, r := range embeddedTable {
		if a, err := ParseArch(r.arch); err == nil && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// EmbeddedNVRTCVersion is the NVRTC version ("12.4") that compiled the
// base variant of the embedded set.
func EmbeddedNVRTCVersion() string {
	for _, r := range embeddedTable {
		if r.variant == baseVariant {
			return r.nvrtc
		}
	}
	return ""
}

// Embedded reports whether the embedded set can serve every named family
// for arch (every family FamiliesFor(arch) lists when none is named) given
// a driver new enough for every variant: each is in the set and was built
// from the sources and flags of this build. EmbeddedFor answers for a
// given driver.
func Embedded(arch Arch, families ...string) bool {
	return embeddedFor(arch, selector{driver: math.MaxInt}, families)
}

// EmbeddedFor reports whether Build with opts (WithDriverVersion,
// WithEmbeddedVariant, WithFamilies; DETGEMM_EMBEDDED_VARIANT) would take
// every family for arch from the embedded set, opening no NVRTC.
func EmbeddedFor(arch Arch, opts ...BuildOption) bool {
	var cfg buildConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	sel, err := resolveSelector(cfg, os.Getenv)
	if err != nil {
		return false
	}
	return embeddedFor(arch, sel, cfg.families)
}

func embeddedFor(arch Arch, sel selector, families []string) bool {
	if len(families) == 0 {
		families = FamiliesFor(arch)
	}
	for _, f := range families {
		if _, why, _ := embeddedRowFor(f, arch, sel, math.MaxInt); why != "" {
			return false
		}
	}
	return len(families) > 0
}

// selector picks the variants a build may use.
type selector struct {
	driver int    // cuDriverGetVersion; 0 unknown
	only   string // a forced variant; "" any
}

func (s selector) eligible(r embeddedRow) bool {
	if s.only != "" && r.variant != s.only {
		return false
	}
	if s.driver <= 0 {
		return r.minDriver == 0
	}
	return r.minDriver <= s.driver
}

// resolveSelector applies WithEmbeddedVariant, else DETGEMM_EMBEDDED_VARIANT.
func resolveSelector(cfg buildConfig, getenv func(string) string) (selector, error) {
	s := selector{driver: cfg.driver, only: strings.TrimSpace(cfg.variant)}
	src := "WithEmbeddedVariant"
	if !cfg.variantSet {
		s.only, src = strings.ToLower(strings.TrimSpace(getenv(EnvEmbeddedVariant))), EnvEmbeddedVariant
	}
	if s.only == "" || s.only == baseVariant || slices.ContainsFunc(embeddedTable, func(r embeddedRow) bool { return r.variant == s.only }) {
		return s, nil
	}
	var names []string
	for _, v := range EmbeddedVariants() {
		names = append(names, v.Name)
	}
	return s, fmt.Errorf("%w: %s=%q (this binary embeds %v; empty takes the newest the driver loads)", ErrBadVariant, src, s.only, names)
}

// driverString renders a cuDriverGetVersion number as "13.0".
func driverString(v int) string {
	if v <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
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

// embeddedRowFor finds the row of family/arch to load: of the variants sel
// allows whose minDriver is below below, the newest built from the current
// sources. why is empty when there is one, else says why not; quiet is
// true when the set simply has nothing for this driver (no warning
// needed).
func embeddedRowFor(family string, arch Arch, sel selector, below int) (row embeddedRow, why string, quiet bool) {
	var cands []embeddedRow
	var needDriver []string
	for _, r := range embeddedTable {
		if r.family != family || r.arch != arch.String() || r.minDriver >= below {
			continue
		}
		if !sel.eligible(r) {
			if sel.only == "" || r.variant == sel.only {
				needDriver = append(needDriver, fmt.Sprintf("variant %s needs a CUDA %s driver (this one: %s)", r.variant, driverString(r.minDriver), driverString(sel.driver)))
			}
			continue
		}
		cands = append(cands, r)
	}
	if len(cands) == 0 {
		if len(needDriver) > 0 {
			return embeddedRow{}, strings.Join(needDriver, "; "), true
		}
		if sel.only != "" {
			return embeddedRow{}, "absent from variant " + sel.only, true
		}
		return embeddedRow{}, "absent", true
	}
	slices.SortStableFunc(cands, func(a, b embeddedRow) int { return b.minDriver - a.minDriver })
	h, err := sourceHashCached(family, arch)
	if err != nil {
		return cands[0], err.Error(), false
	}
	var stale []string
	for _, r := range cands {
		if h == r.sourceHash {
			return r, "", false // loadEmbedded warns about stale newer ones (staleNewer)
		}
		stale = append(stale, r.variant)
	}
	return cands[0], fmt.Sprintf("stale: the embedded CUBIN (variant %s) was built from other sources or flags (run go generate ./kernels)",
		strings.Join(stale, ", ")), false
}

// staleNewer names the variants newer than row that hold family/arch built
// from other sources (passed over), for a warning.
func staleNewer(row embeddedRow, sel selector) []string {
	var out []string
	for _, r := range embeddedTable {
		if r.family == row.family && r.arch == row.arch && r.minDriver > row.minDriver && sel.eligible(r) && r.sourceHash != row.sourceHash {
			out = append(out, r.variant)
		}
	}
	return out
}

// loadEmbedded returns family's module for arch from the embedded set (the
// newest variant sel allows below the given minDriver), or nil and the
// reason it cannot (absent, stale, damaged; quiet when the set has nothing
// for this driver), and a warning when a newer variant was passed over.
func loadEmbedded(family string, arch Arch, sel selector, below int) (m *Module, why string, quiet bool, warning string) {
	row, why, quiet := embeddedRowFor(family, arch, sel, below)
	if why != "" {
		return nil, why, quiet, ""
	}
	cubin, log, err := decodeEmbedded(row)
	if err != nil {
		return nil, err.Error(), false, ""
	}
	if s := staleNewer(row, sel); len(s) > 0 {
		warning = fmt.Sprintf("embedded %s for %s: variant %s is stale (built from other sources); using variant %s",
			family, arch, strings.Join(s, ", "), row.variant)
	}
	return &Module{Family: family, CUBIN: cubin, Log: log, Resources: ParseResources(log), Origin: OriginEmbedded,
		Variant: row.variant, NVRTC: row.nvrtc}, "", false, warning
}

// embeddedPath is the file of row under embeddedFS.
func embeddedPath(row embeddedRow) string {
	dir := row.arch
	if row.variant != baseVariant {
		dir += "+" + row.variant
	}
	return path.Join(embeddedDir, dir, row.family+".gz")
}

// decodeEmbedded reads and checks one file of the set: length, checksum
// and ELF header, like a cache entry.
func decodeEmbedded(row embeddedRow) (cubin []byte, log string, err error) {
	name := embeddedPath(row)
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

// loadAdvice says what to do when the driver refuses m.
func loadAdvice(m *Module) string {
	if m.Variant != baseVariant {
		return fmt.Sprintf("update the NVIDIA driver (the %s variant is built for CUDA 13 drivers, R580 or newer), "+
			"or set %s=base, or set %s=auto to fall back to older variants and NVRTC", m.Variant, EnvEmbeddedVariant, EnvKernels)
	}
	return fmt.Sprintf("set %s=auto to compile with NVRTC instead", EnvKernels)
}

// Fallback replaces family's embedded module after the driver refused to
// load it (cause): in ModeAuto with the same family from the next older
// embedded variant the driver may load, else compiled with NVRTC (through
// the cache), recording a warning; in ModeEmbedded it returns an
// ErrEmbeddedLoad error naming the driver version and what to do. The
// caller loads the returned module, and calls Fallback again if that fails
// too.
func (b *Bundle) Fallback(family string, cause error) (*Module, error) {
	m := b.Modules[family]
	if m == nil || m.Origin != OriginEmbedded {
		return nil, fmt.Errorf("kernels: %s for %s: no embedded module to fall back from: %w", family, b.Arch, cause)
	}
	if b.Mode == ModeEmbedded || b.builder == nil {
		return nil, fmt.Errorf("%w: %s for %s (variant %s, NVRTC %s) with driver %s: %w; %s",
			ErrEmbeddedLoad, family, b.Arch, m.Variant, m.NVRTC, driverString(b.DriverVersion), cause, loadAdvice(m))
	}
	below := 0
	for _, r := range embeddedTable {
		if r.family == family && r.arch == b.Arch.String() && r.variant == m.Variant {
			below = r.minDriver
		}
	}
	warn := fmt.Sprintf("embedded %s for %s (variant %s, NVRTC %s) did not load with driver %s: %v", family, b.Arch, m.Variant, m.NVRTC, driverString(b.DriverVersion), cause)
	if next, why, _, w := loadEmbedded(family, b.Arch, b.sel, below); why == "" {
		b.Warnings = append(b.Warnings, warn+"; using variant "+next.Variant+" (NVRTC "+next.NVRTC+")")
		if w != "" {
			b.Warnings = append(b.Warnings, w)
		}
		b.Modules[family] = next
		b.summariseEmbedded()
		return next, nil
	}
	b.Warnings = append(b.Warnings, warn+"; compiled with NVRTC instead")
	delete(b.Modules, family)
	b.Embedded--
	if err := b.builder.compile(b.Arch, []string{family}, b); err != nil {
		return nil, err
	}
	b.summariseEmbedded()
	return b.Modules[family], nil
}

// summariseEmbedded sets EmbeddedNVRTC and EmbeddedVariant from the
// embedded modules: one value, or several joined newest first.
func (b *Bundle) summariseEmbedded() {
	var vs, nv []string
	for _, m := range b.Modules {
		if m.Origin != OriginEmbedded {
			continue
		}
		if !slices.Contains(vs, m.Variant) {
			vs = append(vs, m.Variant)
		}
		if !slices.Contains(nv, m.NVRTC) {
			nv = append(nv, m.NVRTC)
		}
	}
	slices.Sort(vs)
	slices.Sort(nv)
	slices.Reverse(nv)
	b.EmbeddedVariant, b.EmbeddedNVRTC = strings.Join(vs, "+"), strings.Join(nv, ", ")
}
