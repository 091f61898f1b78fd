package gemm

import (
	"errors"
	"fmt"
	"sync"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/kernels"
	"github.com/detgemm/detgemm/nvrtc"
)

// Engine runs the triad's products on one device and one stream.
type Engine struct {
	ctx     *cudaload.Context
	stream  *cudaload.Stream
	owns    bool // the stream was created here
	arch    kernels.Arch
	sms     int // multiprocessors: the dispatcher's only device input
	modules []*cudaload.Module
	fns     functions

	mu    sync.Mutex // serialises launches (args and the workspace are shared)
	args  cudaload.Args
	ws    workspace
	force force // tests: run every call with this strategy
	// tcForce: tests run every TierTensorCore call with this kernel.
	tcForce  tcForce
	tcShared uint32 // shared memory a gemm_tc block may use (tc.go)
	// smemPerSM: shared memory per multiprocessor; loneShared: the dynamic
	// shared memory that keeps a tiled block alone on its SM (launch.go's
	// tail launches), 0 where the device cannot give it.
	smemPerSM, loneShared uint32
	// gemm_wgmma (sm_90a): whether it is loaded, and the per-call TMA maps
	// (encoded under mu, without allocating).
	hasWG    bool
	tmEnc    *cudaload.TiledEncoder
	tmA, tmB cudaload.TensorMap
	closed   bool
}

// Option configures New.
type Option func(*config)

type config struct {
	stream    *cudaload.Stream
	buildOpts []kernels.BuildOption
}

// WithStream makes the engine enqueue on s (which it does not close) instead
// of a stream of its own.
func WithStream(s *cudaload.Stream) Option { return func(c *config) { c.stream = s } }

// WithBuildOptions passes options to kernels.Build (compiler, cache).
func WithBuildOptions(opts ...kernels.BuildOption) Option {
	return func(c *config) { c.buildOpts = append(c.buildOpts, opts...) }
}

// New builds (or loads from the cache) the kernels for ctx's device and
// returns an engine. A GPU older than Ampere (sm_80) gets ErrArch.
func New(ctx *cudaload.Context, opts ...Option) (*Engine, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if ctx == nil {
		return nil, argErr("New", "ctx", ErrNilPointer, "no CUDA context")
	}
	major, minor := ctx.Device().ComputeCapability()
	if major < 8 {
		return nil, fmt.Errorf("gemm.New: %s has compute capability %d.%d: %w; detgemm needs Ampere (sm_80) or newer",
			ctx.Device().Name(), major, minor, ErrArch)
	}
	comp, err := nvrtc.Open()
	if err != nil {
		return nil, fmt.Errorf("gemm.New: the kernels are compiled at run time and NVRTC is missing: %w", err)
	}
	nvMajor, _ := comp.Version()
	arch := kernels.ArchFor(major, minor, nvMajor)
	bundle, err := kernels.Build(arch, append([]kernels.BuildOption{kernels.WithCompiler(comp)}, cfg.buildOpts...)...)
	if err != nil {
		if errors.Is(err, kernels.ErrUnsupportedArch) {
			return nil, fmt.Errorf("gemm.New: %w: %w", ErrArch, err)
		}
		return nil, fmt.Errorf("gemm.New: building kernels for %s: %w", arch, err)
	}
	e := &Engine{ctx: ctx, arch: arch, sms: ctx.Device().SMCount(), tcShared: tcSharedLimit(ctx.Device().MaxSharedMemoryPerBlockOptin()),
		hasWG: wgArch(arch), tmEnc: ctx.NewTiledEncoder()}
	perSM, err := ctx.Device().Attribute(cudaload.DevAttrMaxSharedMemoryPerMultiprocessor)
	if err != nil {
		return nil, fmt.Errorf("gemm.New: %w", err)
	}
	e.smemPerSM, e.loneShared = uint32(perSM), loneShared(perSM, ctx.Device().MaxSharedMemoryPerBlockOptin())
	mods, fns, err := loadModules(ctx, bundle, e.loneShared)
	e.modules, e.fns = mods, fns
	if err != nil {
		_ = e.closeModules()
		return nil, err
	}
	if cfg.stream != nil {
		e.stream = cfg.stream
	} else {
		if e.stream, err = ctx.NewStream(); err != nil {
			_ = e.closeModules()
			return nil, fmt.Errorf("gemm.New: %w", err)
		}
		e.owns = true
	}
	return e, nil
}

func (e *Engine) closeModules() error {
	var errs []error
	for _, m := range e.modules {
		errs = append(errs, m.Close())
	}
	e.modules = nil
	return errors.Join(errs...)
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
	return errors.Join(err, e.closeModules())
}

// Forward enqueues Y = X @ W (+ bias).
func (e *Engine) Forward(a ForwardArgs) error { return e.run(a.problem()) }

// DW enqueues dW += Xᵀ @ dY.
func (e *Engine) DW(a DWArgs) error { return e.run(a.problem()) }

// DX enqueues dX = dY @ Wᵀ.
func (e *Engine) DX(a DXArgs) error { return e.run(a.problem()) }
