package triad

import (
	"errors"

	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/gemm/ref"
)

// The fp8 layers (LinearConfig.FP8, MLPConfig.FP8): Transformer Engine's
// fp8 recipe with every scale taken per row, so that it keeps the
// engine's batch invariance. The forward's and dX's products run on
// Hopper's fp8 tensor cores (gemm FP8Matmul; gemm/ref's FP8Matmul on the
// CPU, the same bits) from operands quantized by gemm QuantizeFP8 (ref
// FP8Quantize); dW and the bias gradient stay on the 16-bit tensors, in
// the layer's tier, into the f32 master gradients.

// fp8State is an FP8 layer's quantized tensors: the working copy of W
// quantized both ways (refreshed by SetParams and every Step), and room
// for the quantized input and gradient of up to MaxRows rows. Every code
// tensor is E4M3 or E5M2, one byte an element; every scale tensor f32
// [n, 1] (the dequantisation factors, x ≈ q·s), so a row range of it is a
// View.
type fp8State struct {
	// wt [Out, In] E4M3 and wts [Out, 1]: Wᵀ quantized per row of Wᵀ (a
	// scale per output column of W): the forward's B (N × K).
	wt, wts *Tensor
	// wq [In, Out] E4M3 and ws [In, 1]: W quantized per row (a scale per
	// input row of W): dX's B (its N × K is In × Out).
	wq, ws *Tensor
	// xq [MaxRows, In] E4M3 and xs [MaxRows, 1]: the forward's input
	// quantized per row.
	xq, xs *Tensor
	// gq [MaxRows, Out] E5M2 and gs [MaxRows, 1]: the gradient dy of
	// dX quantized per row.
	gq, gs *Tensor
}

func (s *fp8State) free() error {
	if s == nil {
		return nil
	}
	var err error
	for _, t := range []*Tensor{s.wt, s.wts, s.wq, s.ws, s.xq, s.xs, s.gq, s.gs} {
		err = errors.Join(err, t.Free())
	}
	return err
}

// fp8Width is the multiple of 16 every width of an fp8 layer must be: K
// of both fp8 products (In forward, Out in dX) and the operands' rows are
// read as whole 16-byte units.
const fp8Width = 16

// checkFP8Tier refuses an fp8 layer outside the tensor-core tier (the
// activations are then bf16 or f16: checkTier has accepted the pair).
func checkFP8Tier(op string, tier gemm.Tier) error {
	if tier != gemm.TierTensorCore {
		return argErr(op, "Tier", gemm.ErrTier, "%v: FP8 runs on the fp8 tensor cores, gemm.TierTensorCore only (bf16 or f16 activations)", tier)
	}
	return nil
}

// checkFP8Widths refuses a width of ws (named arg) that is not a multiple
// of 16.
func checkFP8Widths(op, arg string, ws []int) error {
	for _, w := range ws {
		if w%fp8Width != 0 {
			return argErr(op, arg, ErrShape, "%d is not a multiple of 16: FP8 reads every width as the K of an fp8 product (In forward, Out in dX), in whole 16-byte rows", w)
		}
	}
	return nil
}

// checkFP8Linear refuses an fp8 layer that cannot be one: outside the
// tensor-core tier (gemm.ErrTier), together with Sparse24 (ErrConfig), In
// or Out not a multiple of 16 (ErrShape) or no MaxRows (ErrShape).
func checkFP8Linear(op string, cfg LinearConfig) error {
	if err := checkFP8Tier(op, cfg.Tier); err != nil {
		return err
	}
	if cfg.Sparse24 {
		return argErr(op, "FP8", ErrConfig, "FP8 and Sparse24 together: the fp8 product is dense (one or the other)")
	}
	if err := checkFP8Widths(op, "In", []int{cfg.In}); err != nil {
		return err
	}
	if err := checkFP8Widths(op, "Out", []int{cfg.Out}); err != nil {
		return err
	}
	if cfg.MaxRows <= 0 {
		return argErr(op, "MaxRows", ErrShape, "%d is not positive: an FP8 layer allocates its quantized activations for MaxRows rows", cfg.MaxRows)
	}
	return nil
}

// checkFP8MLP refuses an fp8 network that cannot be one: outside the
// tensor-core tier, with Sparse24, with a gated act (the fp8 product has
// no gated epilogues), or with a width of ws (named arg) that is not a
// multiple of 16.
func checkFP8MLP(op string, tier gemm.Tier, act Act, sparse bool, arg string, ws []int) error {
	if err := checkFP8Tier(op, tier); err != nil {
		return err
	}
	if sparse {
		return argErr(op, "FP8", ErrConfig, "FP8 and Sparse24 together: the fp8 product is dense (one or the other)")
	}
	if act != ActReLU && act != ActGELU {
		return argErr(op, "Act", ErrConfig, "%v: an FP8 network takes relu or gelu (the fp8 product has no gated epilogues)", act)
	}
	return checkFP8Widths(op, arg, ws)
}

// newFP8 allocates an fp8 layer's quantized tensors, after asking the
// backend whether it can run the layer's fp8 products.
func newFP8(be Backend, cfg LinearConfig) (*fp8State, error) {
	if err := be.checkFP8(cfg.DType, cfg.In, cfg.Out); err != nil {
		return nil, err
	}
	s := &fp8State{}
	var err error
	codes := func(d DType, rows, cols int) *Tensor {
		if err != nil {
			return nil
		}
		var t *Tensor
		t, err = be.allocFP8(d, rows, cols)
		return t
	}
	scales := func(n int) *Tensor {
		if err != nil {
			return nil
		}
		var t *Tensor
		t, err = be.Alloc(F32, n, 1)
		return t
	}
	in, out, rows := cfg.In, cfg.Out, cfg.MaxRows
	s.wt, s.wts = codes(gemm.E4M3, out, in), scales(out)
	s.wq, s.ws = codes(gemm.E4M3, in, out), scales(in)
	s.xq, s.xs = codes(gemm.E4M3, rows, in), scales(rows)
	s.gq, s.gs = codes(gemm.E5M2, rows, out), scales(rows)
	if err != nil {
		return nil, errors.Join(err, s.free())
	}
	return s, nil
}

// refreshFP8 quantizes the working copy for the next products: Wᵀ per
// output column (the forward's B) and W per input row (dX's B).
func (l *Linear) refreshFP8() error {
	if err := l.be.quantizeFP8(l.work, true, l.f8.wt, l.f8.wts); err != nil {
		return err
	}
	return l.be.quantizeFP8(l.work, false, l.f8.wq, l.f8.ws)
}

// checkFP8Rows refuses a batch larger than the layer's MaxRows.
func (l *Linear) checkFP8Rows(op string, x *Tensor) error {
	if x.rows > l.cfg.MaxRows {
		return argErr(op, "x", ErrShape, "%d rows; the FP8 layer was made for at most %d (LinearConfig.MaxRows)", x.rows, l.cfg.MaxRows)
	}
	return nil
}

// quantizeInput quantizes x's rows to E4M3, a scale per row, and returns
// the codes and scales (views of the layer's buffers).
func (l *Linear) quantizeInput(x *Tensor) (xq, xs *Tensor, err error) {
	xq, xs = rowsOf(l.f8.xq, x.rows), rowsOf(l.f8.xs, x.rows)
	return xq, xs, l.be.quantizeFP8(x, false, xq, xs)
}

// product8 is y = ep(x·W + b) on the fp8 tensor cores from x quantized
// (quantizeInput): FP8Matmul(A = xq, B = Wᵀ quantized, ScaleRow,
// AccumPromoted).
func (l *Linear) product8(ep gemm.Epilogue, xq, xs, y *Tensor) error {
	return l.be.fp8Matmul(ep, xq, xs, l.f8.wt, l.f8.wts, l.b, y)
}

// dx8 is dx = dy·Wᵀ on the fp8 tensor cores: dy quantized to E5M2 a
// scale per row, times W quantized per row (FP8Matmul(A = dyq, B = Wq,
// ScaleRow, AccumPromoted, Default)).
func (l *Linear) dx8(dy, dx *Tensor) error {
	gq, gs := rowsOf(l.f8.gq, dy.rows), rowsOf(l.f8.gs, dy.rows)
	if err := l.be.quantizeFP8(dy, false, gq, gs); err != nil {
		return err
	}
	return l.be.fp8Matmul(gemm.Default, gq, gs, l.f8.wq, l.f8.ws, nil, dx)
}

// fp8Epilogue is a hidden fp8 layer's forward epilogue: ReluBias or
// GeluBias (the fp8 product writes no aux).
func (a Act) fp8Epilogue() gemm.Epilogue {
	if a == ActGELU {
		return gemm.GeluBias
	}
	return gemm.ReluBias
}

// flat returns the first rows·cols elements of t (f32 or 16-bit) as a
// rows×cols tensor sharing its memory: a scratch buffer reshaped to one
// layer's width.
func flat(t *Tensor, rows, cols int) *Tensor {
	v := *t
	v.view, v.rows, v.cols = true, rows, cols
	n := rows * cols
	if t.f32 != nil {
		v.f32 = t.f32[:n]
	}
	if t.u16 != nil {
		v.u16 = t.u16[:n]
	}
	return &v
}

// The CPU backend's fp8 operations: gemm/ref, the GPU's bits.

func (c *CPU) allocFP8(d DType, rows, cols int) (*Tensor, error) {
	if c.closed {
		return nil, argErr("Alloc", "backend", ErrClosed, "the cpu backend is closed")
	}
	if err := checkAlloc(F32, rows, cols); err != nil {
		return nil, err
	}
	if rows > MaxHostTensorBytes/cols {
		return nil, argErr("Alloc", "shape", ErrShape, "%d×%d %v codes are more than the CPU backend's %d bytes a tensor", rows, cols, d, MaxHostTensorBytes)
	}
	return &Tensor{be: c, dtype: d, rows: rows, cols: cols, u8: make([]uint8, rows*cols)}, nil
}

func (c *CPU) checkFP8(DType, int, int) error { return nil }

func (c *CPU) quantizeFP8(x *Tensor, transpose bool, q, scales *Tensor) error {
	return ref.FP8Quantize(ref.FP8QuantizeRequest{Out: q.dtype, Rows: x.rows, Cols: x.cols, X: operand(x), In: x.dtype,
		Transpose: transpose, Groups: ref.GroupRow, Q: q.u8, Scales: scales.f32})
}

func (c *CPU) fp8Matmul(ep gemm.Epilogue, a, sa, b, sb, bias, d *Tensor) error {
	r := ref.FP8MatmulRequest{A: a.dtype, B: b.dtype, Out: d.dtype, M: a.rows, N: b.rows, K: a.cols, AData: a.u8, BData: b.u8,
		Scaling: ref.ScaleRow, ScaleA: sa.f32, ScaleB: sb.f32, Accum: ref.AccumPromoted, Epilogue: ep, D: operand(d)}
	if fp8HasBias(ep) {
		r.Bias = bias.f32
	}
	return ref.Options{Workers: c.opts.Workers}.FP8Matmul(r)
}

// geluGrad is ref.GatedBackward's GeGLU with a = 1: dx = RNE((dy·1)·
// GeluGrad32(h)) = RNE(dy·GeluGrad32(h)), what the GPU's GatedBackward
// computes.
func (c *CPU) geluGrad(h, dy, dx, _, _ *Tensor) error {
	n := h.Len()
	ones, da, db := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range ones {
		ones[i] = 1
	}
	if err := ref.GatedBackward(ref.GeGLU, dx.dtype, da, db, values(dy), ones, values(h)); err != nil {
		return err
	}
	return ref.Round(dx.dtype, dx.u16, db) // exact: db holds values of dx's type
}

// fp8HasBias reports whether an fp8 epilogue adds the bias.
func fp8HasBias(ep gemm.Epilogue) bool {
	return ep == gemm.Bias || ep == gemm.ReluBias || ep == gemm.GeluBias
}

// The GPU backend's fp8 operations: the engine's QuantizeFP8 and
// FP8Matmul, queued on the backend's stream.

func (g *GPU) allocFP8(d DType, rows, cols int) (*Tensor, error) {
	if err := g.usable("Alloc"); err != nil {
		return nil, err
	}
	if err := checkAlloc(F32, rows, cols); err != nil {
		return nil, err
	}
	return g.alloc(&Tensor{be: g, dtype: d, rows: rows, cols: cols})
}

// checkFP8 asks the engine (gemm.Engine.CanImplementFP8) about the
// layer's forward and dX: a GPU other than Hopper is refused with
// gemm.ErrArch.
func (g *GPU) checkFP8(d DType, k, n int) error {
	if err := g.eng.CanImplementFP8(fp8ForwardDesc(gemm.Bias, 0, k, n, d)); err != nil {
		return err
	}
	return g.eng.CanImplementFP8(fp8DXDesc(0, k, n, d))
}

func (g *GPU) quantizeFP8(x *Tensor, transpose bool, q, scales *Tensor) error {
	return g.eng.QuantizeFP8(gemm.FP8QuantizeDesc{In: x.dtype, Out: q.dtype, Rows: x.rows, Cols: x.cols, Transpose: transpose,
		Groups: gemm.GroupRow}, gemm.FP8QuantizeArgs{X: x.dev, Q: q.dev, Scales: scales.dev})
}

// fp8Plan returns the kept plan of d, making it the first time (as plan
// does for Matmuls).
func (g *GPU) fp8Plan(d gemm.FP8Desc) (*gemm.FP8Plan, error) {
	if p := g.fplans[d]; p != nil {
		return p, nil
	}
	p, err := g.eng.PlanFP8(d)
	if err != nil {
		return nil, err
	}
	if len(g.fplans) >= maxPlans {
		clear(g.fplans)
	}
	g.fplans[d] = p
	return p, nil
}

func (g *GPU) fp8Matmul(ep gemm.Epilogue, a, sa, b, sb, bias, d *Tensor) error {
	p, err := g.fp8Plan(fp8DescOf(ep, a, b, d))
	if err != nil {
		return err
	}
	args := gemm.FP8Args{A: a.dev, B: b.dev, D: d.dev, ScaleA: sa.dev, ScaleB: sb.dev}
	if fp8HasBias(ep) {
		args.Bias = bias.dev
	}
	return p.Run(args)
}

// geluGrad runs the engine's GatedBackward, GeGLU, with the halves apart
// (GatedSeparate): a = ones (every element 1), b = h, so its db is
// RNE((dy·1)·GeluGrad32(h)) = RNE(dy·GeluGrad32(h)), written to dx; its
// da goes to spare.
func (g *GPU) geluGrad(h, dy, dx, ones, spare *Tensor) error {
	return g.eng.GatedBackward(gemm.GatedDesc{Gate: gemm.GeGLU, Type: h.dtype, Layout: gemm.GatedSeparate, Rows: h.rows, N: h.cols},
		gemm.GatedArgs{X: ones.dev, XB: h.dev, Y: dy.dev, G: spare.dev, GB: dx.dev})
}
