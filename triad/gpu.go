package triad

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/kernels"
)

// triadFamily is the kernel family of the elementwise operations.
const triadFamily = "triad"

// Launch shape of the kernels: blocks of 256 threads; elementwise kernels
// are grid-stride loops, so the grid is capped without changing a result.
const (
	gpuThreads   = 256
	gpuMaxBlocks = 1 << 16
	lossThreads  = 256 // DG_TRIAD_LOSS_THREADS in triad.cu
)

// GPU is the Backend on one CUDA device: the products on the gemm engine,
// the rest on the triad kernels (kernels/cuda/triad.cu), all queued on one
// stream. Nothing is copied back to the host until Read, Digest or
// MLP.Loss asks; so a training step is a sequence of launches only, and it
// can be captured in a CUDA graph.
type GPU struct {
	ctx        *cudaload.Context
	ownsCtx    bool
	stream     *cudaload.Stream
	ownsStream bool
	eng        *gemm.Engine
	ownsEng    bool
	mod        *cudaload.Module
	fns        map[string]*cudaload.Function
	args       cudaload.Args
	live       map[*Tensor]struct{}
	// plans are the fused Matmuls' plans by description: made once (Plan
	// validates, picks the kernels and sizes the workspace), then only
	// run, so a captured step allocates nothing.
	plans map[gemm.MatmulDesc]*gemm.MatmulPlan
	// splans are the 2:4 sparse forwards' plans, kept likewise.
	splans map[gemm.Sparse24Desc]*gemm.Sparse24Plan
	// fplans are the fp8 products' plans, kept likewise.
	fplans map[gemm.FP8Desc]*gemm.FP8Plan
	closed bool
}

// GPUOption configures NewGPU and OpenGPU.
type GPUOption func(*gpuConfig)

type gpuConfig struct {
	eng     *gemm.Engine
	engSet  bool // WithEngine was given (maybe with nil)
	engOpts []gemm.Option
}

// WithEngine runs the products on e, the caller's engine, instead of an
// engine NewGPU makes with gemm.New. e must run on the context NewGPU is
// given (OpenGPU: the device's primary context). The backend queues
// everything on e's stream, so the triad's kernels and the products stay in
// order; Close leaves e and its stream open. Several backends, or a backend
// and the caller's own calls, may share one engine: the engine serialises
// its launches.
func WithEngine(e *gemm.Engine) GPUOption {
	return func(c *gpuConfig) { c.eng, c.engSet = e, true }
}

// WithEngineOptions passes options to gemm.New when NewGPU makes the engine:
// gemm.WithKernels, gemm.WithBuildOptions. The engine always runs on the
// backend's stream (a gemm.WithStream here is overridden). It cannot be
// combined with WithEngine (ErrConfig): that engine is already made.
func WithEngineOptions(opts ...gemm.Option) GPUOption {
	return func(c *gpuConfig) { c.engOpts = append(c.engOpts, opts...) }
}

// OpenGPU loads the CUDA driver, takes the primary context of device
// ordinal and returns a GPU backend that releases the context on Close.
// Without a usable GPU the error is the loader's, which says why (and
// matches cudaload.ErrDriverNotFound, cudaload.ErrNoDevice, ...).
func OpenGPU(ordinal int, opts ...GPUOption) (*GPU, error) {
	drv, err := cudaload.Open()
	if err != nil {
		return nil, err
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("triad: %w", cudaload.ErrNoDevice)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("triad: device %d: %w (the driver sees %d)", ordinal, cudaload.ErrInvalidDevice, n)
	}
	dev, err := drv.Device(ordinal)
	if err != nil {
		return nil, err
	}
	ctx, err := dev.PrimaryContext()
	if err != nil {
		return nil, err
	}
	g, err := NewGPU(ctx, opts...)
	if err != nil {
		return nil, errors.Join(err, ctx.Close())
	}
	g.ownsCtx = true
	return g, nil
}

// NewGPU returns a backend on ctx (which stays the caller's). The products
// run on a gemm engine: by default one made here with gemm.New on a stream
// of the backend's own (WithEngineOptions configures it), or the caller's
// (WithEngine). The triad's kernel family is then taken the way the engine
// took its kernels: for the engine's architecture, in its kernels mode
// (BuildReport.Mode), from the embedded set where it has the family, else
// compiled by NVRTC through the engine's cache directory.
func NewGPU(ctx *cudaload.Context, opts ...GPUOption) (*GPU, error) {
	var cfg gpuConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	switch {
	case cfg.engSet && cfg.eng == nil:
		return nil, argErr("NewGPU", "WithEngine", ErrConfig, "nil engine")
	case cfg.engSet && len(cfg.engOpts) > 0:
		return nil, argErr("NewGPU", "WithEngineOptions", ErrConfig, "engine options given with WithEngine's engine, which is already made")
	case ctx == nil:
		return nil, argErr("NewGPU", "ctx", ErrConfig, "no CUDA context")
	}
	g := &GPU{ctx: ctx, fns: map[string]*cudaload.Function{}, live: map[*Tensor]struct{}{}, plans: map[gemm.MatmulDesc]*gemm.MatmulPlan{},
		splans: map[gemm.Sparse24Desc]*gemm.Sparse24Plan{}, fplans: map[gemm.FP8Desc]*gemm.FP8Plan{}}
	fail := func(err error) (*GPU, error) {
		return nil, errors.Join(fmt.Errorf("triad.NewGPU: %w", err), g.release())
	}
	if cfg.eng != nil {
		g.eng, g.stream = cfg.eng, cfg.eng.Stream()
	} else {
		var err error
		if g.stream, err = ctx.NewStream(); err != nil {
			return nil, fmt.Errorf("triad.NewGPU: %w", err)
		}
		g.ownsStream = true
		// The backend's stream last: the products must queue where the
		// triad's kernels do.
		if g.eng, err = gemm.New(ctx, append(slices.Clip(cfg.engOpts), gemm.WithStream(g.stream))...); err != nil {
			return fail(err)
		}
		g.ownsEng = true
	}
	if err := g.loadKernels(); err != nil {
		return fail(err)
	}
	return g, nil
}

// loadKernels loads the triad family the way the engine got its kernels:
// its architecture, its mode and cache directory, and the driver version
// that picks the embedded variant.
func (g *GPU) loadKernels() error {
	rep := g.eng.BuildReport()
	opts := []kernels.BuildOption{kernels.WithFamilies(triadFamily), kernels.WithMode(rep.Mode),
		kernels.WithDriverVersion(g.ctx.Driver().Version())}
	if rep.CacheDir != "" {
		opts = append(opts, kernels.WithCacheDir(rep.CacheDir))
	}
	bundle, err := kernels.Build(g.eng.Arch(), opts...)
	if err != nil {
		return fmt.Errorf("building kernels: %w", err)
	}
	m, ok := bundle.Modules[triadFamily]
	if !ok {
		return fmt.Errorf("kernel family %s missing from the build", triadFamily)
	}
	if g.mod, err = g.ctx.LoadModule(m.CUBIN); err != nil {
		return fmt.Errorf("loading %s: %w", triadFamily, err)
	}
	for _, name := range gpuKernelNames() {
		fn, err := g.mod.Function(name)
		if err != nil {
			return err
		}
		g.fns[name] = fn
	}
	return nil
}

func gpuKernelNames() []string {
	var out []string
	for _, d := range []string{"f32", "bf16", "f16"} {
		for _, k := range []string{"relu", "relu_grad", "bias_grad", "mse_loss", "mse_grad"} {
			out = append(out, "detgemm_triad_"+k+"_"+d)
		}
	}
	return append(out, "detgemm_triad_sgd", "detgemm_triad_sgd_bf16", "detgemm_triad_sgd_f16")
}

// Name is "gpu".
func (g *GPU) Name() string { return "gpu" }

// Context is the CUDA context the backend runs in.
func (g *GPU) Context() *cudaload.Context { return g.ctx }

// Engine is the GEMM engine the products run on.
func (g *GPU) Engine() *gemm.Engine { return g.eng }

// Stream is the stream every operation is queued on.
func (g *GPU) Stream() *cudaload.Stream { return g.stream }

func (g *GPU) usable(op string) error {
	if g.closed {
		return argErr(op, "backend", ErrClosed, "the gpu backend is closed")
	}
	return nil
}

// Alloc returns a zeroed tensor in device memory (the zeroing is queued on
// the backend's stream).
func (g *GPU) Alloc(d DType, rows, cols int) (*Tensor, error) {
	if err := g.usable("Alloc"); err != nil {
		return nil, err
	}
	if err := checkAlloc(d, rows, cols); err != nil {
		return nil, err
	}
	return g.alloc(&Tensor{be: g, dtype: d, rows: rows, cols: cols})
}

func (g *GPU) allocMask(rows, cols int) (*Tensor, error) {
	if err := g.usable("Alloc"); err != nil {
		return nil, err
	}
	if err := checkAlloc(F32, rows, cols); err != nil {
		return nil, err
	}
	return g.alloc(&Tensor{be: g, rows: rows, cols: cols, mask: true})
}

// alloc gives t zeroed device memory.
func (g *GPU) alloc(t *Tensor) (*Tensor, error) {
	bytes := g.bytes(t)
	// Round the allocation up to whole 32-bit words so zero can use one
	// memset for every dtype.
	p, err := g.ctx.MemAlloc((bytes + 3) &^ 3)
	if err != nil {
		what := t.dtype.String()
		if t.mask {
			what = "mask"
		}
		return nil, fmt.Errorf("triad.Alloc: %d×%d %s: %w", t.rows, t.cols, what, err)
	}
	t.dev = p
	g.live[t] = struct{}{}
	if err := g.stream.MemsetD32Async(p, 0, (bytes+3)/4); err != nil {
		return nil, errors.Join(fmt.Errorf("triad.Alloc: %w", err), t.Free())
	}
	return t, nil
}

func (g *GPU) bytes(t *Tensor) uint64 { return uint64(t.Len()) * uint64(t.elemSize()) }

// Write copies values to t through the stream and waits, so the host slice
// may be reused at once.
func (g *GPU) Write(t *Tensor, values []float32) error {
	if err := g.usable("Write"); err != nil {
		return err
	}
	if err := check("Write", "t", g, t, 0, -1, -1); err != nil {
		return err
	}
	if len(values) != t.Len() {
		return argErr("Write", "values", ErrShape, "%d values for a %d×%d tensor", len(values), t.rows, t.cols)
	}
	var bits []uint16
	src := unsafe.Pointer(unsafe.SliceData(values))
	if t.dtype != F32 {
		bits = make([]uint16, len(values))
		for i, v := range values {
			bits[i] = t.dtype.FromF32(v)
		}
		src = unsafe.Pointer(unsafe.SliceData(bits))
	}
	err := g.stream.MemcpyHtoDAsync(t.dev, src, g.bytes(t))
	if err == nil {
		err = g.Synchronize()
	}
	// The driver may read the host memory until the stream is synchronised.
	runtime.KeepAlive(values)
	runtime.KeepAlive(bits)
	if err != nil {
		return fmt.Errorf("triad.Write: %w", err)
	}
	return nil
}

// Read waits for queued work and copies t back, widened exactly.
func (g *GPU) Read(t *Tensor) ([]float32, error) {
	f, u, err := g.readRaw(t)
	if err != nil {
		return nil, err
	}
	return widen(t.dtype, f, u), nil
}

func (g *GPU) readRaw(t *Tensor) ([]float32, []uint16, error) {
	if err := g.usable("Read"); err != nil {
		return nil, nil, err
	}
	if err := check("Read", "t", g, t, 0, -1, -1); err != nil {
		return nil, nil, err
	}
	var f []float32
	var u []uint16
	var dst unsafe.Pointer
	if t.dtype == F32 {
		f = make([]float32, t.Len())
		dst = unsafe.Pointer(unsafe.SliceData(f))
	} else {
		u = make([]uint16, t.Len())
		dst = unsafe.Pointer(unsafe.SliceData(u))
	}
	if err := g.stream.MemcpyDtoHAsync(dst, t.dev, g.bytes(t)); err != nil {
		return nil, nil, fmt.Errorf("triad.Read: %w", err)
	}
	if err := g.Synchronize(); err != nil {
		return nil, nil, err
	}
	return f, u, nil
}

// Synchronize waits for everything queued on the stream.
func (g *GPU) Synchronize() error {
	if err := g.usable("Synchronize"); err != nil {
		return err
	}
	return g.stream.Synchronize()
}

// Close waits for queued work, frees every tensor, and releases the module,
// the engine and stream it made (not WithEngine's) and (for OpenGPU) the
// context. It is idempotent.
func (g *GPU) Close() error {
	if g.closed {
		return nil
	}
	err := g.stream.Synchronize()
	g.closed = true
	return errors.Join(err, g.release())
}

func (g *GPU) release() error {
	var err error
	for t := range g.live {
		t.freed = true
		err = errors.Join(err, g.ctx.MemFree(t.dev))
	}
	clear(g.live)
	if g.ownsEng {
		err = errors.Join(err, g.eng.Close())
	}
	if g.mod != nil {
		err = errors.Join(err, g.mod.Close())
	}
	if g.ownsStream {
		err = errors.Join(err, g.stream.Close())
	}
	if g.ownsCtx {
		err = errors.Join(err, g.ctx.Close())
	}
	return err
}

func (g *GPU) free(t *Tensor) error {
	if _, ok := g.live[t]; !ok {
		return nil
	}
	delete(g.live, t)
	// The memory may still be in use by queued work.
	if err := g.stream.Synchronize(); err != nil {
		return err
	}
	return g.ctx.MemFree(t.dev)
}

func (g *GPU) zero(t *Tensor) error {
	if t.dtype == F32 {
		return g.stream.MemsetD32Async(t.dev, 0, uint64(t.Len()))
	}
	// Only f32 tensors (gradients, velocities, the loss) are ever zeroed.
	return fmt.Errorf("triad: zero: %v tensors are not zeroed in place", t.dtype)
}

func (g *GPU) forward(tier gemm.Tier, x, w, b, y *Tensor) error {
	a := forwardCallOf(tier, x, w)
	a.X, a.W, a.Y = x.dev, w.dev, y.dev
	if b != nil {
		a.Bias = b.dev
	}
	return g.eng.Forward(a)
}

func (g *GPU) dw(tier gemm.Tier, x, dy, dw *Tensor) error {
	a := dwCallOf(tier, x, dy)
	a.X, a.DY, a.DW = x.dev, dy.dev, dw.dev
	return g.eng.DW(a)
}

func (g *GPU) dx(tier gemm.Tier, dy, w, dx *Tensor) error {
	a := dxCallOf(tier, dy, w)
	a.DY, a.W, a.DX = dy.dev, w.dev, dx.dev
	return g.eng.DX(a)
}

// plan returns the kept plan of d, making it the first time. The kept
// plans are dropped when there are maxPlans of them (a network asked for
// many batch sizes), which only costs re-planning.
func (g *GPU) plan(d gemm.MatmulDesc) (*gemm.MatmulPlan, error) {
	if p := g.plans[d]; p != nil {
		return p, nil
	}
	p, err := g.eng.Plan(d)
	if err != nil {
		return nil, err
	}
	if len(g.plans) >= maxPlans {
		clear(g.plans)
	}
	g.plans[d] = p
	return p, nil
}

// maxPlans bounds the kept plans; an MLP uses two per hidden layer and
// batch size.
const maxPlans = 256

func (g *GPU) forwardAct(tier gemm.Tier, act Act, x, w, b, y, aux *Tensor) error {
	p, err := g.plan(forwardActDescOf(tier, act, x, w))
	if err != nil {
		return err
	}
	return p.Run(gemm.MatmulArgs{A: x.dev, B: w.dev, D: y.dev, Bias: b.dev, Aux: aux.dev})
}

func (g *GPU) dxAct(tier gemm.Tier, act Act, dy, w, aux, dx, db *Tensor) error {
	p, err := g.plan(dxActDescOf(tier, act, dy, w))
	if err != nil {
		return err
	}
	a := gemm.MatmulArgs{A: dy.dev, B: w.dev, D: dx.dev, Aux: aux.dev}
	if db != nil { // nil for a gated epilogue, which sums no bias gradient
		a.BiasGrad = db.dev
	}
	return p.Run(a)
}

// launch queues kernel name+"_"+dtype (or name alone for d == 0) over
// threads threads with the arguments set by pack.
func (g *GPU) launch(name string, d DType, grid, block uint32, pack func(a *cudaload.Args)) error {
	if d != 0 {
		name += "_" + d.String()
	}
	fn := g.fns[name]
	if fn == nil {
		return fmt.Errorf("triad: kernel %s not loaded", name)
	}
	pack(g.args.Reset())
	cfg := cudaload.LaunchConfig{Grid: cudaload.Dim3{X: grid, Y: 1, Z: 1}, Block: cudaload.Dim3{X: block, Y: 1, Z: 1}, Stream: g.stream}
	if err := fn.Launch(cfg, &g.args); err != nil {
		return fmt.Errorf("triad: %w", err)
	}
	return nil
}

// gridFor covers n elements with blocks of gpuThreads, capped.
func gridFor(n int) uint32 {
	return uint32(min((n+gpuThreads-1)/gpuThreads, gpuMaxBlocks))
}

func (g *GPU) biasGrad(dy, db *Tensor) error {
	return g.launch("detgemm_triad_bias_grad", dy.dtype, gridFor(dy.cols), gpuThreads, func(a *cudaload.Args) {
		a.Ptr(dy.dev).Ptr(db.dev).Uint64(uint64(dy.rows)).Uint64(uint64(dy.cols))
	})
}

func (g *GPU) relu(x, y *Tensor) error {
	return g.launch("detgemm_triad_relu", x.dtype, gridFor(x.Len()), gpuThreads, func(a *cudaload.Args) {
		a.Ptr(x.dev).Ptr(y.dev).Uint64(uint64(x.Len()))
	})
}

func (g *GPU) reluGrad(h, dy, dx *Tensor) error {
	return g.launch("detgemm_triad_relu_grad", h.dtype, gridFor(h.Len()), gpuThreads, func(a *cudaload.Args) {
		a.Ptr(h.dev).Ptr(dy.dev).Ptr(dx.dev).Uint64(uint64(h.Len()))
	})
}

func (g *GPU) mseLoss(y, t, loss *Tensor) error {
	return g.launch("detgemm_triad_mse_loss", y.dtype, 1, lossThreads, func(a *cudaload.Args) {
		a.Ptr(y.dev).Ptr(t.dev).Ptr(loss.dev).Uint64(uint64(y.Len())).Float32(mseDivisor(y.Len()))
	})
}

func (g *GPU) mseGrad(y, t, dy *Tensor) error {
	return g.launch("detgemm_triad_mse_grad", y.dtype, gridFor(y.Len()), gpuThreads, func(a *cudaload.Args) {
		a.Ptr(y.dev).Ptr(t.dev).Ptr(dy.dev).Uint64(uint64(y.Len())).Float32(mseScale(y.Len()))
	})
}

func (g *GPU) sgd(w, v, gr, work *Tensor, lr, mu float32) error {
	n := uint64(w.Len())
	if work == nil {
		return g.launch("detgemm_triad_sgd", 0, gridFor(w.Len()), gpuThreads, func(a *cudaload.Args) {
			a.Ptr(w.dev).Ptr(v.dev).Ptr(gr.dev).Uint64(n).Float32(lr).Float32(mu)
		})
	}
	return g.launch("detgemm_triad_sgd", work.dtype, gridFor(w.Len()), gpuThreads, func(a *cudaload.Args) {
		a.Ptr(w.dev).Ptr(v.dev).Ptr(gr.dev).Ptr(work.dev).Uint64(n).Float32(lr).Float32(mu)
	})
}

// gpuGraph is a captured sequence on the backend's stream.
type gpuGraph struct {
	g    *GPU
	exec *cudaload.GraphExec
}

// capture presizes the engine's workspace for work's calls and makes the
// plans of its Matmuls, sparse forwards and fp8 products, then records fn
// on the stream.
// The workspace must be allocated before the capture begins: an allocation
// while capturing would invalidate the graph, so the engine refuses to
// grow it then.
func (g *GPU) capture(work []product, fn func() error) (replayer, error) {
	if err := g.usable("Capture"); err != nil {
		return nil, err
	}
	var calls []gemm.Call
	for _, w := range work {
		if w.call != nil {
			calls = append(calls, w.call)
		}
	}
	if err := g.eng.Presize(calls...); err != nil {
		return nil, fmt.Errorf("triad: sizing the workspace before capturing a graph: %w", err)
	}
	for _, w := range work {
		var err error
		switch {
		case w.sparse != nil:
			_, err = g.sparsePlan(*w.sparse)
		case w.fp8 != nil:
			_, err = g.fp8Plan(*w.fp8)
		case w.call == nil:
			_, err = g.plan(w.desc)
		}
		if err != nil {
			return nil, fmt.Errorf("triad: planning a product before capturing a graph: %w", err)
		}
	}
	graph, err := g.stream.Capture(fn)
	if err != nil {
		return nil, fmt.Errorf("triad: capturing a graph: %w", err)
	}
	defer graph.Close()
	exec, err := graph.Instantiate()
	if err != nil {
		return nil, fmt.Errorf("triad: instantiating the graph: %w", err)
	}
	return &gpuGraph{g: g, exec: exec}, nil
}

func (r *gpuGraph) replay() error {
	if err := r.g.usable("Replay"); err != nil {
		return err
	}
	return r.exec.Launch(r.g.stream)
}

func (r *gpuGraph) close() error { return r.exec.Close() }
