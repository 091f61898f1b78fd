package gemm

import (
	"errors"
	"fmt"
	"sync"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/kernels"
	"github.com/detgemm/detgemm/nvrtc"
)

// simtFamily is the kernel family of the IEEE tiers; simtSharedBytes is its
// dynamic shared memory per block (two staged k-tiles plus the slab totals;
// gemm_simt.cu asserts the same number).
const (
	simtFamily      = "gemm_simt"
	simtThreads     = 256
	simtSharedBytes = 98304
)

// Engine runs the triad's products on one device and one stream.
type Engine struct {
	ctx    *cudaload.Context
	stream *cudaload.Stream
	owns   bool // the stream was created here
	arch   kernels.Arch
	module *cudaload.Module
	fns    map[kernelKey]*cudaload.Function

	mu     sync.Mutex // serialises launches (args is reused)
	args   cudaload.Args
	closed bool
}

type kernelKey struct {
	layout  layout
	in, out DType
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
	mod, ok := bundle.Modules[simtFamily]
	if !ok {
		return nil, fmt.Errorf("gemm.New: kernel family %s missing from the build", simtFamily)
	}
	e := &Engine{ctx: ctx, arch: arch, fns: map[kernelKey]*cudaload.Function{}}
	if e.module, err = ctx.LoadModule(mod.CUBIN); err != nil {
		return nil, fmt.Errorf("gemm.New: loading %s: %w", simtFamily, err)
	}
	if err := e.loadSIMT(); err != nil {
		e.module.Close()
		return nil, err
	}
	if cfg.stream != nil {
		e.stream = cfg.stream
	} else {
		if e.stream, err = ctx.NewStream(); err != nil {
			e.module.Close()
			return nil, fmt.Errorf("gemm.New: %w", err)
		}
		e.owns = true
	}
	return e, nil
}

// simtKernels is every SIMT entry point: layout, input, output type.
var simtKernels = []kernelKey{
	{layoutNN, F32, F32}, {layoutNN, BF16, BF16}, {layoutNN, BF16, F32}, {layoutNN, F16, F16}, {layoutNN, F16, F32},
	{layoutNT, F32, F32}, {layoutNT, BF16, BF16}, {layoutNT, BF16, F32}, {layoutNT, F16, F16}, {layoutNT, F16, F32},
	{layoutTN, F32, F32}, {layoutTN, BF16, F32}, {layoutTN, F16, F32},
}

func (k kernelKey) simtName() string {
	return fmt.Sprintf("detgemm_simt_%v_%v_%v", k.layout, k.in, k.out)
}

func (e *Engine) loadSIMT() error {
	for _, k := range simtKernels {
		fn, err := e.module.Function(k.simtName())
		if err != nil {
			return fmt.Errorf("gemm.New: %w", err)
		}
		if err := fn.SetMaxDynamicSharedMemory(simtSharedBytes); err != nil {
			return fmt.Errorf("gemm.New: %s needs %d bytes of shared memory per block: %w", k.simtName(), simtSharedBytes, err)
		}
		e.fns[k] = fn
	}
	return nil
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

// Close waits for queued work, then releases the module and the engine's
// own stream. It is safe to call twice.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	err := e.stream.Synchronize()
	if e.owns {
		err = errors.Join(err, e.stream.Close())
	}
	return errors.Join(err, e.module.Close())
}

// Forward enqueues Y = X @ W (+ bias).
func (e *Engine) Forward(a ForwardArgs) error { return e.run(a.problem()) }

// DW enqueues dW += Xᵀ @ dY.
func (e *Engine) DW(a DWArgs) error { return e.run(a.problem()) }

// DX enqueues dX = dY @ Wᵀ.
func (e *Engine) DX(a DXArgs) error { return e.run(a.problem()) }

func (e *Engine) run(p problem, err error) error {
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	fn := e.fns[kernelKey{p.layout, p.in, p.out}]
	if fn == nil {
		// Validation admits only combinations in simtKernels.
		return fmt.Errorf("gemm.%s: no kernel for %v %v→%v", p.op, p.layout, p.in, p.out)
	}
	e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(cudaload.DevicePtr(p.c)).Ptr(cudaload.DevicePtr(p.bias)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb).Int64(p.ldc)
	cfg := cudaload.LaunchConfig{
		Grid:           cudaload.Dim3{X: uint32((p.rows + tileRows - 1) / tileRows), Y: uint32((p.cols + tileCols - 1) / tileCols), Z: 1},
		Block:          cudaload.Dim3{X: simtThreads, Y: 1, Z: 1},
		SharedMemBytes: simtSharedBytes,
		Stream:         e.stream,
	}
	if err := fn.Launch(cfg, &e.args); err != nil {
		return fmt.Errorf("gemm.%s: %w", p.op, err)
	}
	return nil
}
