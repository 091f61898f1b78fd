package triad

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/detgemm/detgemm/gemm"
)

// MLPConfig describes a multi-layer perceptron: Linear layers with an
// activation between them (none after the last), trained on the mean
// squared error.
type MLPConfig struct {
	Sizes   []int     // widths: input, hidden..., output (at least two); gated Act: hidden ones % 8 == 0 (see MLP)
	Tier    gemm.Tier // gemm.TierF32, gemm.TierTyped or gemm.TierTensorCore
	DType   DType     // F32 for TierF32; BF16 or F16 for TierTyped and TierTensorCore
	MaxRows int       // the most rows one call takes; workspaces are sized for it
	Seed    uint64    // weight initialisation
	Opt     SGD
	// Act is the hidden layers' activation; the zero value is ActReLU.
	// A gated one (Act.Gated) makes each hidden layer a gated block.
	Act Act
	// Sparse24 makes every layer 2:4 sparse (LinearConfig.Sparse24): each
	// hidden layer's fused forward and the last layer's forward run on the
	// sparse tensor cores, the backward stays dense. It needs
	// TierTensorCore (gemm.ErrTier, naming Tier), every width but the
	// output's a multiple of 16 (ErrShape, naming Sizes), and ReLU or GELU
	// (ErrConfig, naming Act: the sparse forward has no gated epilogues).
	Sparse24 bool
	// FP8 makes every layer an fp8 layer (LinearConfig.FP8): each
	// forward and each dX runs on the fp8 tensor cores from per-row
	// scales, dW and the bias gradients stay on the 16-bit tensors (see
	// the package comment, "fp8 layers"). It needs TierTensorCore
	// (gemm.ErrTier, naming Tier), every width a multiple of 16 (ErrShape,
	// naming Sizes), ReLU or GELU (ErrConfig, naming Act: the fp8 product
	// has no gated epilogues) and not Sparse24 (ErrConfig, naming FP8).
	FP8 bool
}

// MLP is a small network whose every buffer (parameters, activations,
// gradients, the loss) is allocated by NewMLP, so Forward and Step only
// queue work; on the GPU a Step never waits for the device and can be
// captured in a CUDA graph (CaptureStep).
//
// A hidden layer's forward is one fused product, act(x·W + b), that also
// keeps the activation's aux for the backward (the ReLU mask, or the GELU
// pre-activation); the product that flows back into it applies the
// activation's gradient from that aux and accumulates its bias gradient in
// the same call.
//
// # Gated blocks
//
// With a gated Act (ActGLU, ActReGLU, ActSwiGLU, ActGeGLU) hidden layer i
// of width w = Sizes[i+1] is a gated block: its Linear is In → 2·w, and
// the block's output is a·act(b), w wide, with a and b the two halves of
// the projection x·W + b. The 2·w columns of W (and of the bias) are in
// the blocks-of-8 layout of the gated Matmul epilogues (docs/contract.md,
// "Gated epilogues"): 8 columns of a, then 8 of b, and so on. A user's
// separate weights W_a and W_b [In, w] (biases b_a, b_b) map to W as
//
//	W[:, 16q + r]     = W_a[:, 8q + r]    (r < 8)
//	W[:, 16q + 8 + r] = W_b[:, 8q + r]
//
// and the bias likewise; so output j takes a from column (j/8)·16 + j%8
// and b from the column 8 after it. NewMLP draws the 2·w columns as it
// draws any layer's (He uniform over In); the layout only names which are
// which. The forward is one fused product (the Gated…AuxBias epilogue)
// whose aux is the whole 2·w pre-activation; the product that flows back
// into the block (DGated…) writes the 2·w gradient of the pre-activation
// from that aux, in the same layout, and the block's bias gradient is then
// the bias-gradient pass over it (the package comment's plan), since the
// gated epilogues fuse none.
type MLP struct {
	be     Backend
	cfg    MLPConfig
	layers []*Linear
	out    *Tensor   // the last layer's output [MaxRows, out]
	a      []*Tensor // per hidden layer: the activation's output [MaxRows, width], the next layer's input
	aux    []*Tensor // per hidden layer: the ReLU mask, or the GELU or gated pre-activation [MaxRows, its Linear's Out]; nil for an FP8 ReLU network
	dh     []*Tensor // per layer: the gradient of its pre-activation [MaxRows, its Linear's Out]
	loss   *Tensor   // f32 [1, 2]: the last step's loss, and their running sum
	// An FP8 network's scratch, MaxRows × the widest hidden layer of the
	// dtype, reshaped (flat) to each layer: dpre, the fp8 dX's output
	// before the activation's gradient; for GELU ones (every element 1)
	// and spare, geluGrad's.
	dpre, ones, spare *Tensor
	closed            bool
}

// NewMLP allocates the network on be and initialises it from cfg.Seed:
// layer i's weights [in, out] (out: its Linear's width, 2·w for a gated
// block of width w) are drawn uniformly from (−a, a) with a = √(6/in) (He
// uniform) by a PCG generator seeded (Seed, i); biases start at zero. With
// a gated Act a hidden width that is not a multiple of 8 is refused with
// an *Error matching ErrShape, naming Sizes.
func NewMLP(be Backend, cfg MLPConfig) (*MLP, error) {
	const op = "NewMLP"
	if be == nil {
		return nil, argErr(op, "be", ErrConfig, "nil backend")
	}
	if len(cfg.Sizes) < 2 {
		return nil, argErr(op, "Sizes", ErrConfig, "%v: want at least an input and an output width", cfg.Sizes)
	}
	for _, s := range cfg.Sizes {
		if s <= 0 {
			return nil, argErr(op, "Sizes", ErrShape, "%v has a width that is not positive", cfg.Sizes)
		}
	}
	if cfg.MaxRows <= 0 {
		return nil, argErr(op, "MaxRows", ErrShape, "%d is not positive", cfg.MaxRows)
	}
	if err := checkTier(op, cfg.Tier, cfg.DType); err != nil {
		return nil, err
	}
	if err := checkAct(op, cfg.Act); err != nil {
		return nil, err
	}
	if err := checkGatedWidths(op, "Sizes", cfg.Act, cfg.Sizes); err != nil {
		return nil, err
	}
	if cfg.Sparse24 {
		if err := checkSparseMLP(op, cfg.Tier, cfg.Act, "Sizes", cfg.Sizes[:len(cfg.Sizes)-1]); err != nil {
			return nil, err
		}
	}
	if cfg.FP8 {
		if err := checkFP8MLP(op, cfg.Tier, cfg.Act, cfg.Sparse24, "Sizes", cfg.Sizes); err != nil {
			return nil, err
		}
	}
	cfg.Sizes = append([]int(nil), cfg.Sizes...)
	m := &MLP{be: be, cfg: cfg}
	if err := m.build(); err != nil {
		return nil, errors.Join(err, m.Close())
	}
	return m, nil
}

// checkSparseMLP refuses a 2:4 sparse network that cannot be one: outside
// the tensor-core tier, with a gated act, or with a layer input width (of
// ins, named arg) that is not a multiple of 16.
func checkSparseMLP(op string, tier gemm.Tier, act Act, arg string, ins []int) error {
	if err := checkSparseTier(op, tier); err != nil {
		return err
	}
	if act.Gated() {
		return argErr(op, "Act", ErrConfig, "%v: a Sparse24 network takes relu or gelu (the sparse forward has no gated epilogues)", act)
	}
	for i, in := range ins {
		if in%16 != 0 {
			return argErr(op, arg, ErrShape, "width %d (index %d) is not a multiple of 16: Sparse24 compresses each W along its input width into rows of whole 16-byte chunks", in, i)
		}
	}
	return nil
}

// checkGatedWidths refuses, for a gated act, a hidden width (sizes[1] to
// sizes[len−2]) that is not a multiple of 8: the gated epilogues pair
// 8-column blocks of the two halves.
func checkGatedWidths(op, arg string, act Act, sizes []int) error {
	if !act.Gated() {
		return nil
	}
	for i := 1; i < len(sizes)-1; i++ {
		if w := sizes[i]; w%8 != 0 {
			return argErr(op, arg, ErrShape, "%v: hidden width %d (index %d) is not a multiple of 8: a %v block pairs 8-column blocks of its two halves",
				sizes, w, i, act)
		}
	}
	return nil
}

func (m *MLP) build() error {
	cfg, n := m.cfg, len(m.cfg.Sizes)-1
	m.a, m.aux, m.dh = make([]*Tensor, n-1), make([]*Tensor, n-1), make([]*Tensor, n)
	for i := range n {
		in, width, out := cfg.Sizes[i], cfg.Sizes[i+1], cfg.Sizes[i+1]
		if i < n-1 {
			out = cfg.Act.projection(width) // a gated block's Linear: both halves
		}
		lc := LinearConfig{In: in, Out: out, Tier: cfg.Tier, DType: cfg.DType, Sparse24: cfg.Sparse24, FP8: cfg.FP8}
		if cfg.FP8 {
			lc.MaxRows = cfg.MaxRows
		}
		l, err := NewLinear(m.be, lc)
		if err != nil {
			return err
		}
		m.layers = append(m.layers, l)
		if err := l.SetParams(heUniform(cfg.Seed, i, in, out), make([]float32, out)); err != nil {
			return err
		}
		if m.dh[i], err = m.be.Alloc(cfg.DType, cfg.MaxRows, out); err != nil {
			return err
		}
		if i == n-1 {
			if m.out, err = m.be.Alloc(cfg.DType, cfg.MaxRows, out); err != nil {
				return err
			}
			continue
		}
		if m.a[i], err = m.be.Alloc(cfg.DType, cfg.MaxRows, width); err != nil {
			return err
		}
		switch {
		case cfg.FP8 && cfg.Act == ActReLU: // the backward reads the output
		case cfg.Act == ActReLU:
			m.aux[i], err = m.be.allocMask(cfg.MaxRows, out)
		default:
			m.aux[i], err = m.be.Alloc(cfg.DType, cfg.MaxRows, out)
		}
		if err != nil {
			return err
		}
	}
	var err error
	if m.loss, err = m.be.Alloc(F32, 1, 2); err != nil {
		return err
	}
	if cfg.FP8 && n > 1 {
		return m.buildFP8()
	}
	return nil
}

// buildFP8 allocates an FP8 network's backward scratch: dpre, and for GELU
// ones (written) and spare.
func (m *MLP) buildFP8() error {
	wide := slices.Max(m.cfg.Sizes[1 : len(m.cfg.Sizes)-1])
	var err error
	if m.dpre, err = m.be.Alloc(m.cfg.DType, m.cfg.MaxRows, wide); err != nil || m.cfg.Act != ActGELU {
		return err
	}
	if m.spare, err = m.be.Alloc(m.cfg.DType, m.cfg.MaxRows, wide); err != nil {
		return err
	}
	if m.ones, err = m.be.Alloc(m.cfg.DType, m.cfg.MaxRows, wide); err != nil {
		return err
	}
	one := make([]float32, m.ones.Len())
	for i := range one {
		one[i] = 1
	}
	return m.be.Write(m.ones, one)
}

// heUniform draws layer i's weights [in, out] from its own generator.
func heUniform(seed uint64, i, in, out int) []float32 {
	r := rand.New(rand.NewPCG(seed, uint64(i)+0x7121ad))
	a := math.Sqrt(6 / float64(in))
	w := make([]float32, in*out)
	for j := range w {
		u := float64(r.Float64()*2 - 1) // exact: a multiple of 2^-52 in (−1, 1)
		w[j] = float32(float64(u * a))
	}
	return w
}

// Config is the network's configuration.
func (m *MLP) Config() MLPConfig { return m.cfg }

func (m *MLP) usable(op string) error {
	if m == nil || m.closed {
		return argErr(op, "mlp", ErrClosed, "network is nil or closed")
	}
	return nil
}

// checkBatch validates x [rows, in] (and t [rows, out] when given).
func (m *MLP) checkBatch(op string, x, t *Tensor) error {
	if err := check(op, "x", m.be, x, m.cfg.DType, -1, m.cfg.Sizes[0]); err != nil {
		return err
	}
	if x.rows > m.cfg.MaxRows {
		return argErr(op, "x", ErrShape, "%d rows; the network was made for at most %d", x.rows, m.cfg.MaxRows)
	}
	if t == nil {
		return nil
	}
	return check(op, "t", m.be, t, m.cfg.DType, x.rows, m.cfg.Sizes[len(m.cfg.Sizes)-1])
}

// rowsOf returns the first rows rows of a workspace (nil for nil).
func rowsOf(t *Tensor, rows int) *Tensor {
	if t == nil {
		return nil
	}
	v, _ := t.View(0, rows) // rows ≤ MaxRows was checked
	return v
}

// Forward queues the network on x [rows, in] and returns its output
// [rows, out], a view of a workspace that the next Forward or Step
// overwrites.
func (m *MLP) Forward(x *Tensor) (*Tensor, error) {
	const op = "MLP.Forward"
	if err := m.usable(op); err != nil {
		return nil, err
	}
	if err := m.checkBatch(op, x, nil); err != nil {
		return nil, err
	}
	return m.forward(x)
}

// forward runs each hidden layer as one fused product, y = act(x·W + b)
// (gated: y = a·act(b) of the halves of x·W + b) with its aux, and the
// last layer as a Forward; a Sparse24 network's products are sparse
// forwards with the same epilogues. An FP8 network's hidden layer
// quantizes its input once and runs the fp8 product with ReluBias (no
// aux: the backward reads the output) or GeluBias, and for GELU a second
// fp8 product with Bias for the aux, the pre-activation RNE(x·W + b).
func (m *MLP) forward(x *Tensor) (*Tensor, error) {
	rows, in, last := x.rows, x, len(m.layers)-1
	for i, l := range m.layers[:last] {
		a, aux := rowsOf(m.a[i], rows), rowsOf(m.aux[i], rows)
		var err error
		switch {
		case l.f8 != nil:
			err = m.forwardFP8(l, in, a, aux)
		case l.sp != nil:
			err = m.be.forward24(m.cfg.Act.forwardEpilogue(), in, l.sp.values, l.sp.meta, l.b, a, aux)
		default:
			err = m.be.forwardAct(m.cfg.Tier, m.cfg.Act, in, l.Work(), l.b, a, aux)
		}
		if err != nil {
			return nil, err
		}
		in = a
	}
	y := rowsOf(m.out, rows)
	return y, m.layers[last].Forward(in, y)
}

// forwardFP8 is an FP8 hidden layer's forward: a = act(x·W + b), and for
// GELU aux = x·W + b, from x quantized once.
func (m *MLP) forwardFP8(l *Linear, x, a, aux *Tensor) error {
	xq, xs, err := l.quantizeInput(x)
	if err != nil {
		return err
	}
	if err := l.product8(m.cfg.Act.fp8Epilogue(), xq, xs, a); err != nil {
		return err
	}
	if m.cfg.Act == ActGELU {
		return l.product8(gemm.Bias, xq, xs, aux)
	}
	return nil
}

// backFP8 is the product back into FP8 hidden layer i−1 from layer i's
// gradient dy: dpre = dy·W_iᵀ on the fp8 tensor cores (Linear.Backward's
// dX), then the activation's gradient as its own pass, into dh: ReLU's
// from the layer's output a (> 0 exactly where the stored pre-activation
// is, as the dense network's mask), GELU's RNE(dpre·GeluGrad32(aux));
// then DB_(i−1) += Σ_rows dh.
func (m *MLP) backFP8(i int, dy *Tensor) error {
	rows, prev := dy.rows, m.layers[i-1]
	dpre, dh := flat(m.dpre, rows, prev.cfg.Out), rowsOf(m.dh[i-1], rows)
	if err := m.layers[i].dx8(dy, dpre); err != nil {
		return err
	}
	var err error
	if m.cfg.Act == ActGELU {
		err = m.be.geluGrad(rowsOf(m.aux[i-1], rows), dpre, dh, flat(m.ones, rows, prev.cfg.Out), flat(m.spare, rows, prev.cfg.Out))
	} else {
		err = m.be.reluGrad(rowsOf(m.a[i-1], rows), dpre, dh)
	}
	if err != nil {
		return err
	}
	return m.be.biasGrad(dh, prev.db)
}

// Step queues one training step on the batch x [rows, in] with targets t
// [rows, out]: forward, the MSE loss (kept on the device; see Loss) and its
// gradient, backward through every layer, and the SGD step. Nothing waits
// for the device.
func (m *MLP) Step(x, t *Tensor) error {
	const op = "MLP.Step"
	if err := m.usable(op); err != nil {
		return err
	}
	if err := m.checkBatch(op, x, t); err != nil {
		return err
	}
	return m.step(x, t)
}

// step's backward, for layer i from the last back: DW_i += inᵀ·dh_i; for
// the last layer (and every gated block) DB_i += Σ_rows dh_i; then, but
// for the first layer, one fused product dh_(i−1) = act′(dh_i·W_iᵀ) from
// layer i−1's aux, with DB_(i−1) += Σ_rows dh_(i−1) in the same call for
// ReLU and GELU (a gated epilogue writes dh_(i−1), both halves, only; its
// DB is summed when the loop reaches layer i−1). Each gradient buffer is
// accumulated once per step, as Linear.Backward would, so the bits are
// those of Backward followed by the activation's gradient as separate
// passes (for ReLU: see the package comment). An FP8 network's product back
// is backFP8: the fp8 dX, then the activation's and the bias gradients as
// passes of their own.
func (m *MLP) step(x, t *Tensor) error {
	rows, last := x.rows, len(m.layers)-1
	tier, act := m.cfg.Tier, m.cfg.Act
	y, err := m.forward(x)
	if err != nil {
		return err
	}
	if err := m.be.mseLoss(y, t, m.loss); err != nil {
		return err
	}
	if err := m.be.mseGrad(y, t, rowsOf(m.dh[last], rows)); err != nil {
		return err
	}
	for i := last; i >= 0; i-- {
		l, in, dy := m.layers[i], x, rowsOf(m.dh[i], rows)
		if i > 0 {
			in = rowsOf(m.a[i-1], rows)
		}
		if err := m.be.dw(tier, in, dy, l.dw); err != nil {
			return err
		}
		if i == last || act.Gated() {
			if err := m.be.biasGrad(dy, l.db); err != nil {
				return err
			}
		}
		if i > 0 && l.f8 != nil {
			if err := m.backFP8(i, dy); err != nil {
				return err
			}
		} else if i > 0 {
			var db *Tensor // the gated epilogues fuse no bias gradient
			if !act.Gated() {
				db = m.layers[i-1].db
			}
			if err := m.be.dxAct(tier, act, dy, l.Work(), rowsOf(m.aux[i-1], rows), rowsOf(m.dh[i-1], rows), db); err != nil {
				return err
			}
		}
	}
	for _, l := range m.layers {
		if err := l.Step(m.cfg.Opt); err != nil {
			return err
		}
	}
	return nil
}

// Loss waits for queued work and returns the last step's loss and the sum
// of the losses since the last ResetLoss (each an f32 computed on the
// backend in the documented order).
func (m *MLP) Loss() (last, sum float32, err error) {
	if err := m.usable("MLP.Loss"); err != nil {
		return 0, 0, err
	}
	v, err := m.be.Read(m.loss)
	if err != nil {
		return 0, 0, err
	}
	return v[0], v[1], nil
}

// ResetLoss queues clearing the loss and its running sum.
func (m *MLP) ResetLoss() error {
	if err := m.usable("MLP.ResetLoss"); err != nil {
		return err
	}
	return m.be.zero(m.loss)
}

// Params returns the parameter tensors in order: W₀, b₀, W₁, b₁, ... (the
// f32 masters).
func (m *MLP) Params() []*Tensor {
	var out []*Tensor
	for _, l := range m.layers {
		out = append(out, l.w, l.b)
	}
	return out
}

// Digest waits for queued work and returns the SHA-256 of the f32 master
// parameters' bits, in the order of Params.
func (m *MLP) Digest() (string, error) {
	if err := m.usable("MLP.Digest"); err != nil {
		return "", err
	}
	return Digest(m.be, m.Params()...)
}

// Close frees every tensor of the network. It is idempotent.
func (m *MLP) Close() error {
	if m == nil || m.closed {
		return nil
	}
	m.closed = true
	var err error
	for _, l := range m.layers {
		err = errors.Join(err, l.Close())
	}
	for _, ts := range [][]*Tensor{m.a, m.aux, m.dh, {m.out, m.loss, m.dpre, m.ones, m.spare}} {
		for _, t := range ts {
			if t != nil {
				err = errors.Join(err, t.Free())
			}
		}
	}
	return err
}

// StepGraph is one MLP.Step on fixed batch tensors, captured once as a CUDA
// graph: Replay runs the whole step with one launch, on the same buffers,
// with the same bits as calling Step.
type StepGraph struct {
	m   *MLP
	run replayer
}

// CaptureStep records Step(x, t) without running it. The graph reads x and
// t where they are, so refill them (Backend.Write) to train on other data.
// Before the capture begins it sizes the engine's workspace for every
// product of the step (gemm.Engine.Presize) and makes the plans of its
// fused products (gemm.Engine.Plan, kept by the backend), since nothing
// may be allocated while a graph is being captured; that allocation is
// the only one, and it is kept for later steps. The CPU backend answers
// ErrNoGraphs.
func (m *MLP) CaptureStep(x, t *Tensor) (*StepGraph, error) {
	const op = "MLP.CaptureStep"
	if err := m.usable(op); err != nil {
		return nil, err
	}
	if err := m.checkBatch(op, x, t); err != nil {
		return nil, err
	}
	r, err := m.be.capture(m.stepWork(x.rows), func() error { return m.step(x, t) })
	if err != nil {
		return nil, err
	}
	return &StepGraph{m: m, run: r}, nil
}

// Replay queues one run of the captured step.
func (g *StepGraph) Replay() error {
	if err := g.m.usable("StepGraph.Replay"); err != nil {
		return err
	}
	return g.run.replay()
}

// Close releases the graph.
func (g *StepGraph) Close() error { return g.run.close() }
