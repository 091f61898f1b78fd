package gemm

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/kernels"
	"github.com/detgemm/detgemm/nvrtc"
)

// Engine runs the triad's products on one device and one stream.
type Engine struct {
	device         // the GPU, its kernels, the stream, the workspace (device.go)
	owns   bool    // the stream was created here
	mods   *loaded // the modules, maybe shared with other engines on ctx
	report BuildReport
	mu     sync.Mutex // serialises launches (args and the workspace are shared)
	closed bool
	key    shareKey // where mods is registered
}

// Option configures New.
type Option func(*config)

type config struct {
	stream    *cudaload.Stream
	buildOpts []kernels.BuildOption
	mode      kernels.Mode
	modeSet   bool
}

// WithStream makes the engine enqueue on s (which it does not close) instead
// of a stream of its own.
func WithStream(s *cudaload.Stream) Option { return func(c *config) { c.stream = s } }

// WithBuildOptions passes options to kernels.Build (compiler, cache). An
// engine given any does not share its modules with other engines.
func WithBuildOptions(opts ...kernels.BuildOption) Option {
	return func(c *config) { c.buildOpts = append(c.buildOpts, opts...) }
}

// WithKernels says where the kernels come from, overriding the
// DETGEMM_KERNELS environment variable: kernels.ModeAuto (the default)
// loads the CUBINs embedded in the binary where it has them for the device
// and compiles with NVRTC otherwise; kernels.ModeEmbedded fails
// (kernels.ErrNotEmbedded) rather than compile; kernels.ModeNVRTC always
// compiles (and caches), for development.
func WithKernels(m kernels.Mode) Option {
	return func(c *config) { c.mode, c.modeSet = m, true }
}

// New loads the kernels for ctx's device and returns an engine. On an
// architecture in the embedded set (kernels.EmbeddedArchs) it needs no
// NVRTC and no cache directory; elsewhere it compiles the families it can
// dispatch with NVRTC, in parallel, through the disk cache (WithKernels
// chooses otherwise). Engines on one context share the loaded modules:
// only the first loads them, the last Close unloads them. BuildReport says
// where the kernels came from. A GPU older than Ampere (sm_80) gets ErrArch.
func New(ctx *cudaload.Context, opts ...Option) (*Engine, error) {
	start := time.Now()
	var cfg config
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if ctx == nil {
		return nil, argErr("New", "ctx", ErrNilPointer, "no CUDA context")
	}
	major, minor := ctx.Device().ComputeCapability()
	if major < 8 {
		return nil, fmt.Errorf("gemm.New: %s has compute capability %d.%d: %w; detgemm needs Ampere (sm_80) or newer",
			ctx.Device().Name(), major, minor, ErrArch)
	}
	buildOpts := cfg.buildOpts
	if cfg.modeSet {
		buildOpts = append(slices.Clip(buildOpts), kernels.WithMode(cfg.mode))
	}
	mode, err := kernels.ResolveMode(buildOpts...)
	if err != nil {
		return nil, fmt.Errorf("gemm.New: %w", err)
	}
	mmOff, mmForce, err := mmFusedSetting(os.Getenv(EnvMatmulFused))
	if err != nil {
		return nil, fmt.Errorf("gemm.New: %w", err)
	}
	key := shareKey{ctx: ctx, mode: mode}
	if len(cfg.buildOpts) > 0 {
		key.private = new(byte) // options the key cannot see: never shared
	}
	e := &Engine{device: device{ctx: ctx, sms: ctx.Device().SMCount(), tcShared: tcSharedLimit(ctx.Device().MaxSharedMemoryPerBlockOptin()),
		tmEnc: ctx.NewTiledEncoder()}}
	perSM, err := ctx.Device().Attribute(cudaload.DevAttrMaxSharedMemoryPerMultiprocessor)
	if err != nil {
		return nil, fmt.Errorf("gemm.New: %w", err)
	}
	e.smemPerSM, e.loneShared = uint32(perSM), loneShared(perSM, ctx.Device().MaxSharedMemoryPerBlockOptin())

	l, reused, err := acquire(key, func() (*loaded, error) {
		return buildAndLoad(ctx, major, minor, mode, buildOpts, e.loneShared)
	})
	if err != nil {
		return nil, err
	}
	e.mods, e.fns, e.arch, e.hasWG = l, l.fns, l.arch, wgArch(l.arch)
	e.mmUnfused, e.mmForce = mmOff, mmForce
	e.report = l.report
	e.report.Shared = reused
	if cfg.stream != nil {
		e.stream = cfg.stream
	} else {
		if e.stream, err = ctx.NewStream(); err != nil {
			_ = release(key, l)
			return nil, fmt.Errorf("gemm.New: %w", err)
		}
		e.owns = true
	}
	e.key = key
	e.report.Elapsed = time.Since(start)
	return e, nil
}

// buildAndLoad gets the families the engine dispatches on this device
// (engineFamilies) and loads them into ctx.
func buildAndLoad(ctx *cudaload.Context, major, minor int, mode kernels.Mode, buildOpts []kernels.BuildOption, lone uint32) (*loaded, error) {
	t0 := time.Now()
	// Hopper's embedded set is sm_90a; it needs no NVRTC to choose. The
	// driver's version picks the embedded variant (the caller's options
	// come after, so they may override it).
	arch := kernels.ArchFor(major, minor, 12)
	buildOpts = append([]kernels.BuildOption{kernels.WithDriverVersion(ctx.Driver().Version())}, buildOpts...)
	embedded := kernels.EmbeddedFor(arch, append(slices.Clip(buildOpts), kernels.WithFamilies(engineFamilies(arch)...))...)
	if mode == kernels.ModeNVRTC || mode == kernels.ModeAuto && !embedded {
		comp, err := nvrtc.Open()
		if err != nil {
			return nil, fmt.Errorf("gemm.New: kernels for %s must be compiled (this binary embeds %v; mode %s) and NVRTC is missing: %w; "+
				"install libnvrtc (CUDA 12 or newer) or point %s at it", arch, kernels.EmbeddedArchs(), mode, err, nvrtc.EnvLibrary)
		}
		nvMajor, _ := comp.Version()
		arch = kernels.ArchFor(major, minor, nvMajor)
		buildOpts = append([]kernels.BuildOption{kernels.WithCompiler(comp)}, buildOpts...)
	}
	buildOpts = append(slices.Clip(buildOpts), kernels.WithFamilies(engineFamilies(arch)...))
	bundle, err := kernels.Build(arch, buildOpts...)
	if err != nil {
		if errors.Is(err, kernels.ErrUnsupportedArch) {
			return nil, fmt.Errorf("gemm.New: %w: %w", ErrArch, err)
		}
		return nil, fmt.Errorf("gemm.New: building kernels for %s: %w", arch, err)
	}
	t1 := time.Now()
	mods, fns, err := loadModules(ctx, bundle, lone)
	if err != nil {
		_ = closeAll(mods)
		return nil, err
	}
	rep := reportOf(bundle)
	rep.BuildTime, rep.LoadTime = t1.Sub(t0), time.Since(t1)
	return &loaded{mods: mods, fns: fns, arch: arch, report: rep}, nil
}

// Arch is the architecture the kernels were built for.
func (e *Engine) Arch() kernels.Arch { return e.arch }

// Stream is the stream calls are enqueued on.
func (e *Engine) Stream() *cudaload.Stream { return e.stream }

// Synchronize waits until every queued call has finished, and returns the
// first error the device reported.
func (e *Engine) Synchronize() error {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return e.stream.Synchronize()
}

// Close waits for queued work, then releases the workspace, the modules and
// the engine's own stream. It is safe to call twice.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	err := e.stream.Synchronize()
	err = errors.Join(err, e.ws.release(e.ctx.MemFree))
	if e.owns {
		err = errors.Join(err, e.stream.Close())
	}
	return errors.Join(err, release(e.key, e.mods))
}

// Forward enqueues Y = X @ W (+ bias).
func (e *Engine) Forward(a ForwardArgs) error {
	p, err := a.build(true)
	if err != nil {
		return err
	}
	return e.run(p, filter{})
}

// DW enqueues dW += Xᵀ @ dY.
func (e *Engine) DW(a DWArgs) error {
	p, err := a.build(true)
	if err != nil {
		return err
	}
	return e.run(p, filter{})
}

// DX enqueues dX = dY @ Wᵀ.
func (e *Engine) DX(a DXArgs) error {
	p, err := a.build(true)
	if err != nil {
		return err
	}
	return e.run(p, filter{})
}

// run plans a validated call and enqueues its kernels: one for the tiled
// strategy, partials then fold for the others. f narrows the plan (tests);
// every public call passes the zero filter. Nothing is allocated unless
// the workspace must grow (see Presize).
func (e *Engine) run(p problem, f filter) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runLocked(p, f)
}

// runLocked is run with e.mu held.
func (e *Engine) runLocked(p problem, f filter) error {
	if e.closed {
		return ErrClosed
	}
	pl, err := e.choose(p, &f)
	if err != nil {
		return err
	}
	if err := e.ws.ensure(p.op, pl.ws, e.stream.IsCapturing, e.ctx.MemAlloc); err != nil {
		return err
	}
	if err := e.ws.ensureCounters(p.op, pl.ctrs, e.stream.IsCapturing, e.ctx.MemAlloc, e.zero); err != nil {
		return err
	}
	return launcher{e: &e.device, serial: f.serial}.plan(&p, &pl)
}

// Explain says what c would run on this engine, without launching anything
// or allocating: the strategy, the plan's slabs, the workspace and each
// kernel launch (entry point, grid, block, shared memory). It makes the
// decision the call itself makes — the same planner, fed the same problem
// — and runs the call's own launch code with a recorder in place of the
// launches, so a call with these arguments on this engine runs exactly
// these launches.
//
// The pointers matter where set: alignment picks the load path of some
// kernels (16-byte copies or element-wise), so Explain validates them as
// the call does. With every pointer of c left zero it reads the tier,
// types and shape only and assumes buffers as MemAlloc returns them
// (256-byte aligned), like Strategy and WorkspaceBytes.
func (e *Engine) Explain(c Call) (Explanation, error) {
	set, err := pointersSet(c)
	if err != nil {
		return Explanation{}, err
	}
	p, err := c.build(set)
	if err != nil {
		return Explanation{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	pl, err := e.choose(p, &filter{})
	if err != nil {
		return Explanation{}, err
	}
	x := Explanation{Op: p.op, Tier: p.tier, In: p.in, Out: p.out, Strategy: pl.strategy, Slabs: pl.slabs,
		WorkspaceBytes: pl.ws + pl.ctrs}
	switch p.layout {
	case layoutNN:
		x.M, x.K, x.N = int(p.rows), int(p.red), int(p.cols)
	case layoutTN:
		x.M, x.K, x.N = int(p.red), int(p.rows), int(p.cols)
	default:
		x.M, x.K, x.N = int(p.rows), int(p.cols), int(p.red)
	}
	if p.tier != TierTensorCore {
		switch {
		case pl.strategy == StrategySplitSlab:
			x.SlabsPerBlock = pl.perBlock
		case pl.strategy == StrategyTiled && pl.tailRow > 0:
			x.SlabsPerBlock = pl.tailG
		}
	}
	if err := (launcher{e: &e.device, rec: &x}).plan(&p, &pl); err != nil {
		return Explanation{}, err
	}
	return x, nil
}

// pointersSet reports whether c sets any device pointer; a nil *Args is an
// error, as a nil Call is.
func pointersSet(c Call) (bool, error) {
	nilArgs := func() (bool, error) {
		return false, argErr("Explain", "call", ErrNilPointer, "nil Call")
	}
	switch a := c.(type) {
	case nil:
		return nilArgs()
	case ForwardArgs:
		return a.X != 0 || a.W != 0 || a.Y != 0 || a.Bias != 0, nil
	case *ForwardArgs:
		if a == nil {
			return nilArgs()
		}
		return pointersSet(*a)
	case DWArgs:
		return a.X != 0 || a.DY != 0 || a.DW != 0, nil
	case *DWArgs:
		if a == nil {
			return nilArgs()
		}
		return pointersSet(*a)
	case DXArgs:
		return a.DY != 0 || a.W != 0 || a.DX != 0, nil
	case *DXArgs:
		if a == nil {
			return nilArgs()
		}
		return pointersSet(*a)
	}
	return true, nil
}

// BuildReport returns how this engine got its kernels.
func (e *Engine) BuildReport() BuildReport {
	r := e.report
	r.Families = slices.Clone(r.Families)
	r.Warnings = slices.Clone(r.Warnings)
	return r
}
