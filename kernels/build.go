package kernels

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/detgemm/detgemm/nvrtc"
)

// ErrAppendFlags is matched when NVRTC_APPEND_FLAGS is set: NVRTC would add
// those options to every compile, behind Flags' back (it could turn FMA
// contraction on), so Build refuses rather than break the contract quietly.
var ErrAppendFlags = errors.New("kernels: NVRTC_APPEND_FLAGS is set; unset it: " +
	"detgemm compiles with a fixed set of flags and cannot allow NVRTC to add others")

// envAppendFlags is read by libnvrtc itself on every compile.
const envAppendFlags = "NVRTC_APPEND_FLAGS"

// Module is one kernel family compiled for one architecture.
type Module struct {
	Family    string
	CUBIN     []byte
	Log       string     // the NVRTC log, including the ptxas report
	Resources []Resource // parsed from Log, sorted by kernel name
	Cached    bool       // loaded from the disk cache rather than compiled
	Origin    Origin     // where the CUBIN came from
	// Variant is the embedded variant ("base", "cuda13") of an
	// OriginEmbedded module; empty otherwise.
	Variant string
	// NVRTC is the NVRTC version that built the CUBIN ("13.0").
	NVRTC string
}

// Origin says where a module's CUBIN came from.
type Origin int

const (
	// OriginCompiled: compiled by NVRTC in this build.
	OriginCompiled Origin = iota
	// OriginCache: read from the disk cache (compiled by an earlier build).
	OriginCache
	// OriginEmbedded: the CUBIN shipped in the binary (go generate).
	OriginEmbedded
)

// String returns "compiled", "cache" or "embedded".
func (o Origin) String() string {
	switch o {
	case OriginCompiled:
		return "compiled"
	case OriginCache:
		return "cache"
	case OriginEmbedded:
		return "embedded"
	}
	return fmt.Sprintf("Origin(%d)", int(o))
}

// Resource returns the report for one kernel.
func (m *Module) Resource(kernel string) (Resource, bool) {
	for _, r := range m.Resources {
		if r.Kernel == kernel {
			return r, true
		}
	}
	return Resource{}, false
}

// Bundle is every kernel family compiled for one architecture.
type Bundle struct {
	Arch         Arch
	Mode         Mode               // where the modules were asked from
	NVRTCVersion string             // "12.4"; empty when NVRTC was not needed
	Modules      map[string]*Module // by family
	Embedded     int                // modules from the embedded set
	Hits, Misses int                // cache entries used / compiled
	Rebuilt      int                // cache entries present but unusable (corrupt, unreadable), compiled again
	// EmbeddedNVRTC is the NVRTC version that built the embedded modules
	// ("13.0"; several, newest first, if variants were mixed); empty when
	// none was used.
	EmbeddedNVRTC string
	// EmbeddedVariant is the variant the embedded modules came from
	// ("cuda13"; "base+cuda13" if mixed); empty when none was used.
	EmbeddedVariant string
	// DriverVersion is the driver version the variant was chosen for
	// (WithDriverVersion); 0 unknown.
	DriverVersion int
	Elapsed       time.Duration // wall time of the whole build
	CacheDir      string        // the cache used; empty when disabled or not needed
	Warnings      []string      // cache or embedded-set problems; the build still succeeded

	builder *Builder // for Fallback
	sel     selector
}

// Cold reports whether any module had to be compiled by NVRTC.
func (b *Bundle) Cold() bool { return b.Misses > 0 }

// BuildOption configures Build and NewBuilder.
type BuildOption func(*buildConfig)

type buildConfig struct {
	compiler *nvrtc.Compiler
	cacheDir string
	cacheSet bool // WithCache was given
	cacheOn  bool
	families []string // nil: every family
	mode     Mode
	modeSet  bool // WithMode was given
	driver   int  // WithDriverVersion
	// variant: WithEmbeddedVariant's; variantSet: it was given.
	variant    string
	variantSet bool
}

// WithFamilies limits the build to the named families (each must exist), so
// a caller compiles only what it launches: a first run's cold build is then
// shorter, and the cache holds the rest for later.
func WithFamilies(names ...string) BuildOption {
	return func(b *buildConfig) { b.families = append(b.families, names...) }
}

// WithCompiler makes Build use this NVRTC instead of nvrtc.Open().
func WithCompiler(c *nvrtc.Compiler) BuildOption {
	return func(b *buildConfig) { b.compiler = c }
}

// WithCacheDir puts the cache in dir, overriding DETGEMM_CACHE_DIR.
func WithCacheDir(dir string) BuildOption {
	return func(b *buildConfig) { b.cacheDir = dir }
}

// WithCache turns the disk cache on or off, overriding DETGEMM_CACHE.
func WithCache(enabled bool) BuildOption {
	return func(b *buildConfig) { b.cacheSet, b.cacheOn = true, enabled }
}

// Builder compiles the kernel families with one NVRTC. It is safe for
// concurrent use.
type Builder struct {
	compiler *nvrtc.Compiler
	// open finds NVRTC when a family has to be compiled and compiler is
	// nil (package Build: nvrtc.Open), so a build served by the embedded
	// set never looks for it.
	open func() (*nvrtc.Compiler, error)
	cfg  buildConfig
}

// NewBuilder returns a Builder using compiler; a WithCompiler option is
// ignored in favour of the argument.
func NewBuilder(compiler *nvrtc.Compiler, opts ...BuildOption) *Builder {
	var cfg buildConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return &Builder{compiler: compiler, cfg: cfg}
}

// Build returns every family for arch (FamiliesFor), or those WithFamilies
// names: from the embedded set where it has them (ModeAuto, the default),
// else compiled with the NVRTC from WithCompiler, or else nvrtc.Open(),
// which is looked for only when some family has to be compiled.
func Build(arch Arch, opts ...BuildOption) (*Bundle, error) {
	if err := arch.check(); err != nil {
		return nil, err // before looking for NVRTC: the answer does not depend on it
	}
	b := NewBuilder(nil, opts...)
	b.compiler = b.cfg.compiler
	b.open = func() (*nvrtc.Compiler, error) {
		c, err := nvrtc.Open()
		if err != nil {
			return nil, fmt.Errorf("kernels: %w", err)
		}
		return c, nil
	}
	return b.Build(arch)
}

// ResolveMode returns the Mode a build with opts uses: WithMode's, else
// DETGEMM_KERNELS' (ErrBadMode when it names none).
func ResolveMode(opts ...BuildOption) (Mode, error) {
	var cfg buildConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return resolveMode(cfg, os.Getenv)
}

// Build returns every family for arch: from the embedded set where the
// mode allows and the set has it, the rest compiled concurrently, each from
// the cache when a valid entry exists. It fails only when a family cannot
// be had; cache problems become Bundle.Warnings.
func (b *Builder) Build(arch Arch) (*Bundle, error) {
	start := time.Now()
	if err := arch.check(); err != nil {
		return nil, err
	}
	mode, err := resolveMode(b.cfg, os.Getenv)
	if err != nil {
		return nil, err
	}
	families, err := b.familiesFor(arch)
	if err != nil {
		return nil, err
	}
	sel, err := resolveSelector(b.cfg, os.Getenv)
	if err != nil {
		return nil, err
	}
	bundle := &Bundle{Arch: arch, Mode: mode, Modules: map[string]*Module{}, DriverVersion: b.cfg.driver, builder: b, sel: sel}

	need := families
	if mode != ModeNVRTC {
		need = nil
		// Decompressing is the whole cost of an embedded start: one
		// goroutine a family bounds it by the largest.
		mods, whys := make([]*Module, len(families)), make([]string, len(families))
		quiet, warns := make([]bool, len(families)), make([]string, len(families))
		var wg sync.WaitGroup
		for i, f := range families {
			wg.Go(func() { mods[i], whys[i], quiet[i], warns[i] = loadEmbedded(f, arch, sel, math.MaxInt) })
		}
		wg.Wait()
		for i, f := range families {
			m, why := mods[i], whys[i]
			if warns[i] != "" {
				bundle.Warnings = append(bundle.Warnings, warns[i])
			}
			if m != nil {
				bundle.Modules[f] = m
				bundle.Embedded++
				continue
			}
			if mode == ModeEmbedded {
				return nil, fmt.Errorf("%w: %s for %s: %s (embedded architectures: %v; set %s=auto to compile with NVRTC)",
					ErrNotEmbedded, f, arch, why, EmbeddedArchs(), EnvKernels)
			}
			if !quiet[i] {
				bundle.Warnings = append(bundle.Warnings, fmt.Sprintf("embedded %s for %s: %s; compiled with NVRTC instead", f, arch, why))
			}
			need = append(need, f)
		}
		bundle.summariseEmbedded()
	}
	if len(need) > 0 {
		if err := b.compile(arch, need, bundle); err != nil {
			return nil, err
		}
	}
	bundle.Elapsed = time.Since(start)
	return bundle, nil
}

// familiesFor is FamiliesFor(arch), or the WithFamilies list checked
// against it.
func (b *Builder) familiesFor(arch Arch) ([]string, error) {
	if b.cfg.families == nil {
		return FamiliesFor(arch), nil
	}
	var families []string
	for _, f := range b.cfg.families {
		ok, err := familyBuildsFor(f, arch)
		if err != nil {
			return nil, err
		}
		if !ok {
			targets, _ := FamilyTargets(f)
			return nil, fmt.Errorf("%w: %s is built only for %v, not %s", ErrFamilyArch, f, targets, arch)
		}
		if !slices.Contains(families, f) {
			families = append(families, f)
		}
	}
	return families, nil
}

// compile builds families with NVRTC, one goroutine each (NVRTC is
// thread-safe for separate programs), through the disk cache.
func (b *Builder) compile(arch Arch, families []string, bundle *Bundle) error {
	if os.Getenv(envAppendFlags) != "" {
		return ErrAppendFlags
	}
	if b.compiler == nil {
		if b.open == nil {
			return errors.New("kernels: Builder has no NVRTC compiler")
		}
		c, err := b.open()
		if err != nil {
			return err
		}
		b.compiler = c
	}
	major, minor := b.compiler.Version()
	if err := checkNVRTCArch(b.compiler, arch); err != nil {
		return err
	}
	bundle.NVRTCVersion = fmt.Sprintf("%d.%d", major, minor)
	dir, warning := cacheDirFor(b.cfg, os.Getenv)
	bundle.CacheDir = dir
	if warning != "" {
		bundle.Warnings = append(bundle.Warnings, warning)
	}
	cache := diskCache{dir: dir}

	results := make([]familyResult, len(families))
	var wg sync.WaitGroup
	for i, f := range families {
		wg.Go(func() {
			results[i] = b.buildFamily(f, arch, bundle.NVRTCVersion, cache)
		})
	}
	wg.Wait()

	for i, r := range results {
		if r.err != nil {
			return fmt.Errorf("kernels: building %s for %s: %w", families[i], arch, r.err)
		}
		bundle.Modules[r.module.Family] = r.module
		if r.module.Cached {
			bundle.Hits++
		} else {
			bundle.Misses++
		}
		if r.rebuilt {
			bundle.Rebuilt++
		}
		bundle.Warnings = append(bundle.Warnings, r.warnings...)
	}
	return nil
}

type familyResult struct {
	module   *Module
	warnings []string
	rebuilt  bool // a cache entry was there but unusable
	err      error
}

func (b *Builder) buildFamily(family string, arch Arch, nvrtcVersion string, cache diskCache) familyResult {
	src, err := Source(family)
	if err != nil {
		return familyResult{err: err}
	}
	hdrs := includedHeaders(src)
	flags := Flags(arch)
	key := cacheKey(family, src, hdrs, flags, arch, nvrtcVersion)
	name := entryName(family, arch, key)

	var res familyResult
	cubin, log, ok, warning := cache.load(name, key)
	if warning != "" {
		// load warns only about an entry that exists and cannot be used.
		res.warnings = append(res.warnings, warning)
		res.rebuilt = true
	}
	if ok {
		res.module = &Module{Family: family, CUBIN: cubin, Log: log, Resources: ParseResources(log), Cached: true, Origin: OriginCache, NVRTC: nvrtcVersion}
		return res
	}
	out, err := b.compiler.Compile(src, family+familySuffix, flags, hdrs...)
	if err != nil {
		return familyResult{err: err}
	}
	if w := cache.store(name, key, out.CUBIN, out.Log); w != "" {
		res.warnings = append(res.warnings, w)
	}
	res.module = &Module{Family: family, CUBIN: out.CUBIN, Log: out.Log, Resources: ParseResources(out.Log), Origin: OriginCompiled, NVRTC: nvrtcVersion}
	return res
}

// checkNVRTCArch reports an architecture this NVRTC cannot target with an
// error naming what it can, instead of NVRTC's bare "invalid option".
func checkNVRTCArch(c *nvrtc.Compiler, arch Arch) error {
	major, minor := c.Version()
	if arch.Specific && major < 12 {
		return fmt.Errorf("%w: %s needs NVRTC 12 or newer, have %d.%d", ErrArchNotInNVRTC, arch, major, minor)
	}
	archs, err := c.SupportedArchs()
	if err != nil || len(archs) == 0 {
		return nil // cannot tell; let NVRTC decide
	}
	for _, n := range archs {
		if n == arch.number() {
			return nil
		}
	}
	return fmt.Errorf("%w: NVRTC %d.%d cannot target %s (it supports sm_%d to sm_%d); use a newer NVRTC",
		ErrArchNotInNVRTC, major, minor, arch, archs[0], archs[len(archs)-1])
}
