package triad

import (
	"errors"

	"github.com/detgemm/detgemm/gemm"
)

// LinearConfig describes a Linear layer.
type LinearConfig struct {
	In, Out int
	// Tier is gemm.TierF32 (f32 activations), gemm.TierTyped or
	// gemm.TierTensorCore (bf16 or f16 activations and a 16-bit working
	// copy of W). It is fixed for the life of the layer: nothing ever falls
	// back to another tier.
	Tier gemm.Tier
	// DType is the activations' element type: F32 for TierF32, BF16 or
	// F16 for TierTyped and TierTensorCore.
	DType DType
	// Sparse24 makes W 2:4 sparse along In: in every group of 4
	// consecutive rows of a column at most 2 elements are nonzero, in a
	// pattern fixed by SetParams (magnitude pruning of the weight it is
	// given), kept by every Step (the pruned elements of the master are
	// reset to +0), and the forward runs on the sparse tensor cores (see
	// the package comment, "2:4 sparse layers"). It needs TierTensorCore
	// (else an *Error matching gemm.ErrTier, naming Tier) and In a
	// multiple of 16 (else ErrShape, naming In); dX and dW stay dense.
	Sparse24 bool
	// FP8 runs the forward and dX on Hopper's fp8 tensor cores,
	// Transformer Engine's recipe with a scale per row (see the package
	// comment, "fp8 layers"): y = x·W + b from x quantized to E4M3 a scale
	// per row and Wᵀ to E4M3 a scale per output column; dx = dy·Wᵀ from dy
	// quantized to E5M2 a scale per row and W to E4M3 a scale per input
	// row; dW and the bias gradient stay on the 16-bit tensors. The
	// quantized weights are refreshed from the working copy by SetParams
	// and every Step. It needs TierTensorCore (else an *Error matching
	// gemm.ErrTier, naming Tier), In and Out multiples of 16 (ErrShape,
	// naming In or Out), MaxRows (ErrShape), and not Sparse24 (ErrConfig,
	// naming FP8); a GPU other than Hopper (sm_90) refuses it with the
	// engine's gemm.ErrArch.
	FP8 bool
	// MaxRows is the most rows one Forward or Backward of an FP8 layer
	// takes: NewLinear allocates the quantized input and gradient for it
	// (a larger batch is refused with ErrShape), so the calls allocate
	// nothing. Other layers ignore it.
	MaxRows int
}

// SGD is stochastic gradient descent with momentum: for every parameter,
// v = Momentum·v + g, then w = w − LR·v (see the package comment for the
// exact operations).
type SGD struct {
	LR, Momentum float32
}

// Linear is y = x·W + b with W [In, Out] (the engine's natural layout) and
// b [1, Out]. It keeps f32 master copies of W and b, their f32 gradients
// (accumulated by Backward, cleared by Step) and momentum velocities, and
// in the typed and tensor-core tiers a bf16/f16 working copy of W, refreshed from the master
// (one round to nearest even) by every Step. Every buffer is allocated by
// NewLinear, so the layer's calls only queue work: they are safe to capture
// in a CUDA graph.
type Linear struct {
	be     Backend
	cfg    LinearConfig
	w, b   *Tensor   // f32 masters
	work   *Tensor   // 16-bit working copy of w (typed tier), nil in the f32 tier
	dw, db *Tensor   // f32 gradients
	vw, vb *Tensor   // f32 velocities
	sp     *sparse24 // the 2:4 state of a Sparse24 layer, else nil
	f8     *fp8State // the quantized tensors of an FP8 layer, else nil
	closed bool
}

// checkTier asks the engine's rule (gemm.Tier.Accepts) whether the tier
// runs activations of type d: the products read and write d, so the triad
// refuses exactly what the engine would. The refusal is the triad's *Error
// with the engine's reason, matching ErrDType, or gemm.ErrTier for a value
// that is not a tier.
func checkTier(op string, tier gemm.Tier, d DType) error {
	err := tier.Accepts(d, d)
	if err == nil {
		return nil
	}
	reason := err.Error()
	var ae *gemm.ArgError
	if errors.As(err, &ae) {
		reason = ae.Reason
	}
	if errors.Is(err, gemm.ErrTier) {
		return argErr(op, "Tier", gemm.ErrTier, "%s", reason)
	}
	return argErr(op, "DType", ErrDType, "%s", reason)
}

// NewLinear allocates a layer on be with W, b, the gradients and the
// velocities all zero. Set the parameters with SetParams.
func NewLinear(be Backend, cfg LinearConfig) (*Linear, error) {
	const op = "NewLinear"
	if be == nil {
		return nil, argErr(op, "be", ErrConfig, "nil backend")
	}
	if cfg.In <= 0 || cfg.Out <= 0 {
		return nil, argErr(op, "In/Out", ErrShape, "%d→%d is not a layer shape", cfg.In, cfg.Out)
	}
	if err := checkTier(op, cfg.Tier, cfg.DType); err != nil {
		return nil, err
	}
	if cfg.Sparse24 {
		if err := checkSparse24(op, cfg.Tier, "In", cfg.In); err != nil {
			return nil, err
		}
	}
	if cfg.FP8 {
		if err := checkFP8Linear(op, cfg); err != nil {
			return nil, err
		}
	}
	l := &Linear{be: be, cfg: cfg}
	var err error
	alloc := func(d DType, rows, cols int) *Tensor {
		if err != nil {
			return nil
		}
		var t *Tensor
		t, err = be.Alloc(d, rows, cols)
		return t
	}
	l.w, l.dw, l.vw = alloc(F32, cfg.In, cfg.Out), alloc(F32, cfg.In, cfg.Out), alloc(F32, cfg.In, cfg.Out)
	l.b, l.db, l.vb = alloc(F32, 1, cfg.Out), alloc(F32, 1, cfg.Out), alloc(F32, 1, cfg.Out)
	if cfg.DType.Half() {
		l.work = alloc(cfg.DType, cfg.In, cfg.Out)
	}
	if err == nil && cfg.Sparse24 {
		l.sp, err = newSparse24(be, cfg.DType, cfg.In, cfg.Out)
	}
	if err == nil && cfg.FP8 {
		if l.f8, err = newFP8(be, cfg); err == nil {
			err = l.refreshFP8() // the zero weight's: codes +0, scales 1
		}
	}
	if err != nil {
		return nil, errors.Join(err, l.Close())
	}
	return l, nil
}

// Config is the layer's configuration.
func (l *Linear) Config() LinearConfig { return l.cfg }

// W is the f32 master weight [In, Out]; B the f32 master bias [1, Out].
func (l *Linear) W() *Tensor { return l.w }

// B is the f32 master bias [1, Out].
func (l *Linear) B() *Tensor { return l.b }

// DW is the f32 weight gradient [In, Out], accumulated by Backward.
func (l *Linear) DW() *Tensor { return l.dw }

// DB is the f32 bias gradient [1, Out]: Backward adds each batch's column
// sums of dy by the bias-gradient plan (package doc), Step clears it. Read
// it (Backend.Read) to inspect or log the gradient between Backward and
// Step, as ExampleLinear does.
func (l *Linear) DB() *Tensor { return l.db }

// Work is the weight the products read: the 16-bit working copy in the
// typed and tensor-core tiers, the master in the f32 tier. (A Sparse24
// layer's forward reads it compressed, dX dense; an FP8 layer's products
// read it quantized, dW's none.)
func (l *Linear) Work() *Tensor {
	if l.work != nil {
		return l.work
	}
	return l.w
}

func (l *Linear) usable(op string) error {
	if l == nil || l.closed {
		return argErr(op, "layer", ErrClosed, "layer is nil or closed")
	}
	return nil
}

// SetParams writes the master weight (In·Out values, row-major) and bias
// (Out values) and refreshes the working copy from the master. A Sparse24
// layer first prunes the weight by magnitude along In (ref.Prune24: in
// every group of 4 rows of a column the two largest magnitudes stay, ties
// to the lower row, the others become +0); the positions kept are the
// layer's pattern from then on (Pattern24). An FP8 layer then quantizes
// the working copy for its products.
func (l *Linear) SetParams(w, b []float32) error {
	const op = "Linear.SetParams"
	if err := l.usable(op); err != nil {
		return err
	}
	if len(w) != l.cfg.In*l.cfg.Out || len(b) != l.cfg.Out {
		return argErr(op, "w/b", ErrShape, "%d and %d values, want %d and %d", len(w), len(b), l.cfg.In*l.cfg.Out, l.cfg.Out)
	}
	if err := l.be.Write(l.b, b); err != nil {
		return err
	}
	if l.sp != nil {
		return l.setSparse(w)
	}
	if err := l.be.Write(l.w, w); err != nil {
		return err
	}
	if l.work == nil {
		return nil
	}
	if err := l.be.Write(l.work, w); err != nil { // Write rounds once to nearest even
		return err
	}
	if l.f8 != nil {
		return l.refreshFP8()
	}
	return nil
}

// Forward queues y = x·W + b: x [M, In] and y [M, Out] of the layer's
// dtype, for any M ≥ 1. Each row of y depends on its own row of x only (the
// engine's batch invariance). A Sparse24 layer runs the sparse forward
// (gemm.Engine.Sparse24Forward, epilogue Bias) on the compressed working
// copy; an FP8 layer quantizes x per row and runs the fp8 product
// (gemm.Engine.FP8Matmul, epilogue Bias), for at most MaxRows rows.
func (l *Linear) Forward(x, y *Tensor) error {
	const op = "Linear.Forward"
	if err := l.usable(op); err != nil {
		return err
	}
	if err := check(op, "x", l.be, x, l.cfg.DType, -1, l.cfg.In); err != nil {
		return err
	}
	if err := check(op, "y", l.be, y, l.cfg.DType, x.rows, l.cfg.Out); err != nil {
		return err
	}
	if l.sp != nil {
		return l.be.forward24(gemm.Bias, x, l.sp.values, l.sp.meta, l.b, y, nil)
	}
	if l.f8 != nil {
		if err := l.checkFP8Rows(op, x); err != nil {
			return err
		}
		xq, xs, err := l.quantizeInput(x)
		if err != nil {
			return err
		}
		return l.product8(gemm.Bias, xq, xs, y)
	}
	return l.be.forward(l.cfg.Tier, x, l.Work(), l.b, y)
}

// Backward queues, for x [M, In] (the Forward input) and dy [M, Out]:
// DW += xᵀ·dy and DB += Σ_rows dy (f32), and dx = dy·Wᵀ [M, In] unless dx
// is nil (a first layer needs none). The bias gradient follows the dW plan,
// so gradients of micro-batches split at multiples of 256 rows, accumulated
// in order, have the bits of one call on the whole batch. An FP8 layer
// computes dx on the fp8 tensor cores (dy quantized to E5M2 per row, W to
// E4M3 per input row), DW and DB as any layer.
func (l *Linear) Backward(x, dy, dx *Tensor) error {
	const op = "Linear.Backward"
	if err := l.usable(op); err != nil {
		return err
	}
	if err := check(op, "x", l.be, x, l.cfg.DType, -1, l.cfg.In); err != nil {
		return err
	}
	if err := check(op, "dy", l.be, dy, l.cfg.DType, x.rows, l.cfg.Out); err != nil {
		return err
	}
	if dx != nil {
		if err := check(op, "dx", l.be, dx, l.cfg.DType, x.rows, l.cfg.In); err != nil {
			return err
		}
	}
	if l.f8 != nil {
		if err := l.checkFP8Rows(op, x); err != nil {
			return err
		}
	}
	if err := l.be.dw(l.cfg.Tier, x, dy, l.dw); err != nil {
		return err
	}
	if err := l.be.biasGrad(dy, l.db); err != nil {
		return err
	}
	switch {
	case dx == nil:
		return nil
	case l.f8 != nil:
		return l.dx8(dy, dx)
	}
	return l.be.dx(l.cfg.Tier, dy, l.Work(), dx)
}

// Step queues the optimizer step on W and b, clears DW and DB, and
// refreshes the working copy of W. A Sparse24 layer then resets the
// master's and the working copy's pruned elements to +0 (Mask24 with the
// pattern) and compresses the working copy for the next forward; an FP8
// layer quantizes the working copy for its next products.
func (l *Linear) Step(opt SGD) error {
	const op = "Linear.Step"
	if err := l.usable(op); err != nil {
		return err
	}
	if err := l.be.sgd(l.w, l.vw, l.dw, l.work, opt.LR, opt.Momentum); err != nil {
		return err
	}
	if l.sp != nil {
		if err := l.stepSparse(); err != nil {
			return err
		}
	}
	if l.f8 != nil {
		if err := l.refreshFP8(); err != nil {
			return err
		}
	}
	return l.be.sgd(l.b, l.vb, l.db, nil, opt.LR, opt.Momentum)
}

// Close frees the layer's tensors. It is idempotent.
func (l *Linear) Close() error {
	if l == nil || l.closed {
		return nil
	}
	l.closed = true
	var err error
	for _, t := range []*Tensor{l.w, l.b, l.work, l.dw, l.db, l.vw, l.vb} {
		err = errors.Join(err, t.Free())
	}
	return errors.Join(err, l.sp.free(), l.f8.free())
}
