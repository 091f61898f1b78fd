package triad

import (
	"fmt"

	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/gemm/ref"
)

// CPU is the Backend on the host: the products run on gemm/ref (the same
// plans as the GPU kernels, spread over goroutines without changing a bit),
// everything else in Go loops doing the kernels' float32 operations in the
// kernels' order. Its results equal the GPU's bit for bit for the f32 and
// typed tiers on every GPU, and for the tensor-core tier on sm_90 (Hopper):
// its products run the Hopper model of the tensor cores (ref.Hopper).
type CPU struct {
	opts   ref.Options
	closed bool
}

// tcModel is the tensor-core addition the CPU backend reproduces: Hopper's,
// the one verified on hardware.
var tcModel = ref.Hopper

// NewCPU returns a CPU backend running the products on workers goroutines
// (0 or less: GOMAXPROCS). The number of workers never changes a result.
func NewCPU(workers int) *CPU { return &CPU{opts: ref.Options{Workers: workers}} }

// Name is "cpu".
func (c *CPU) Name() string { return "cpu" }

// MaxHostTensorBytes caps one tensor of the CPU backend, which holds it in
// Go memory: a larger request is refused with ErrShape instead of failing
// inside the runtime's allocator.
const MaxHostTensorBytes = 1 << 34

// Alloc returns a zeroed tensor (at most MaxHostTensorBytes).
func (c *CPU) Alloc(d DType, rows, cols int) (*Tensor, error) {
	if c.closed {
		return nil, argErr("Alloc", "backend", ErrClosed, "the cpu backend is closed")
	}
	if err := checkAlloc(d, rows, cols); err != nil {
		return nil, err
	}
	if rows > MaxHostTensorBytes/cols/d.Size() {
		return nil, argErr("Alloc", "shape", ErrShape, "%d×%d %v is more than the CPU backend's %d bytes a tensor", rows, cols, d, MaxHostTensorBytes)
	}
	t := &Tensor{be: c, dtype: d, rows: rows, cols: cols}
	if d == F32 {
		t.f32 = make([]float32, rows*cols)
	} else {
		t.u16 = make([]uint16, rows*cols)
	}
	return t, nil
}

// Write stores values, rounding once to nearest even for a 16-bit t.
func (c *CPU) Write(t *Tensor, values []float32) error {
	if err := check("Write", "t", c, t, 0, -1, -1); err != nil {
		return err
	}
	if len(values) != t.Len() {
		return argErr("Write", "values", ErrShape, "%d values for a %d×%d tensor", len(values), t.rows, t.cols)
	}
	if t.dtype == F32 {
		copy(t.f32, values)
		return nil
	}
	return ref.Round(t.dtype, t.u16, values)
}

// Read returns a copy of t's values, widened exactly.
func (c *CPU) Read(t *Tensor) ([]float32, error) {
	f, u, err := c.readRaw(t)
	if err != nil {
		return nil, err
	}
	return widen(t.dtype, f, u), nil
}

func (c *CPU) readRaw(t *Tensor) ([]float32, []uint16, error) {
	if err := check("Read", "t", c, t, 0, -1, -1); err != nil {
		return nil, nil, err
	}
	if t.dtype == F32 {
		return append([]float32(nil), t.f32...), nil, nil
	}
	return nil, append([]uint16(nil), t.u16...), nil
}

// Synchronize does nothing: CPU operations complete before they return.
func (c *CPU) Synchronize() error { return nil }

// Close marks the backend closed; the Go garbage collector frees the
// tensors.
func (c *CPU) Close() error { c.closed = true; return nil }

func (c *CPU) free(t *Tensor) error { t.f32, t.u16, t.u8, t.u32 = nil, nil, nil, nil; return nil }

func (c *CPU) allocMask(rows, cols int) (*Tensor, error) {
	if c.closed {
		return nil, argErr("Alloc", "backend", ErrClosed, "the cpu backend is closed")
	}
	if err := checkAlloc(F32, rows, cols); err != nil {
		return nil, err
	}
	if rows > MaxHostTensorBytes/cols {
		return nil, argErr("Alloc", "shape", ErrShape, "a %d×%d mask is more than the CPU backend's %d bytes a tensor", rows, cols, MaxHostTensorBytes)
	}
	return &Tensor{be: c, rows: rows, cols: cols, mask: true, u8: make([]uint8, rows*cols)}, nil
}

func (c *CPU) zero(t *Tensor) error {
	clear(t.f32)
	clear(t.u16)
	return nil
}

func (c *CPU) forward(tier gemm.Tier, x, w, b, y *Tensor) error {
	var bias []float32
	if b != nil {
		bias = b.f32
	}
	return c.refOptions(tier, x.dtype).Forward(operand(y), operand(x), operand(w), bias, x.rows, x.cols, w.cols)
}

func (c *CPU) dw(tier gemm.Tier, x, dy, dw *Tensor) error {
	return c.refOptions(tier, x.dtype).DW(dw.f32, operand(x), operand(dy), x.rows, x.cols, dy.cols)
}

func (c *CPU) dx(tier gemm.Tier, dy, w, dx *Tensor) error {
	return c.refOptions(tier, dy.dtype).DX(operand(dx), operand(dy), operand(w), dy.rows, dy.cols, w.rows)
}

// refOptions are the gemm/ref options of a product in tier on
// activations of d: the mapping forward, dw and dx use.
func (c *CPU) refOptions(tier gemm.Tier, d DType) ref.Options {
	switch tier {
	case gemm.TierF32:
		return ref.Options{Tier: ref.IEEE, In: F32, Workers: c.opts.Workers}
	case gemm.TierTensorCore:
		return ref.Options{Tier: ref.TensorCore, In: d, Model: tcModel, Workers: c.opts.Workers}
	}
	return ref.Options{Tier: ref.IEEE, In: d, Workers: c.opts.Workers}
}

// operand is t's storage as gemm/ref reads or writes it: its f32 values,
// or its 16-bit patterns.
func operand(t *Tensor) ref.Operand {
	if t.dtype == F32 {
		return ref.Values(t.f32)
	}
	return ref.Bits(t.u16)
}

// matmul runs the request d on gemm/ref: the same request the GPU backend
// gives the engine. aux is a ReLU mask, a GELU aux or a gated
// pre-activation, as d's epilogue says; bias and bgrad are nil where it
// has none.
func (c *CPU) matmul(d gemm.MatmulDesc, a, b, dst, aux *Tensor, bias, bgrad []float32) error {
	r := ref.MatmulRequest{M: d.M, N: d.N, K: d.K, TransA: d.TransA, TransB: d.TransB, A: operand(a), B: operand(b),
		Alpha: d.Alpha, Beta: d.Beta, D: operand(dst), Bias: bias, Epilogue: d.Epilogue, BiasGrad: bgrad}
	if aux.mask {
		r.ReluMask = aux.u8
	} else {
		r.Aux = operand(aux)
	}
	return c.refOptions(d.Tier, d.In).Matmul(r)
}

func (c *CPU) forwardAct(tier gemm.Tier, act Act, x, w, b, y, aux *Tensor) error {
	return c.matmul(forwardActDescOf(tier, act, x, w), x, w, y, aux, b.f32, nil)
}

func (c *CPU) dxAct(tier gemm.Tier, act Act, dy, w, aux, dx, db *Tensor) error {
	var bgrad []float32
	if db != nil {
		bgrad = db.f32
	}
	return c.matmul(dxActDescOf(tier, act, dy, w), dy, w, dx, aux, nil, bgrad)
}

// values returns t's elements as float32 (16-bit elements widened into a
// new slice).
func values(t *Tensor) []float32 { return widen(t.dtype, t.f32, t.u16) }

func (c *CPU) biasGrad(dy, db *Tensor) error {
	v := values(dy)
	rows, cols := dy.rows, dy.cols
	for col := range cols {
		d := db.f32[col]
		for r0 := 0; r0 < rows; r0 += ref.SlabLen {
			p := float32(0)
			for r := r0; r < min(r0+ref.SlabLen, rows); r++ {
				p = add32(p, v[r*cols+col])
			}
			d = add32(d, p)
		}
		db.f32[col] = d
	}
	return nil
}

func (c *CPU) relu(x, y *Tensor) error {
	if x.dtype == F32 {
		for i, v := range x.f32 {
			y.f32[i] = reluF32(v)
		}
		return nil
	}
	for i, h := range x.u16 {
		switch f := x.dtype.ToF32(h); {
		case f > 0:
			y.u16[i] = h
		case f != f:
			y.u16[i] = half16NaN
		default:
			y.u16[i] = 0
		}
	}
	return nil
}

func (c *CPU) reluGrad(h, dy, dx *Tensor) error {
	hv := values(h)
	for i, f := range hv {
		pass, nan := f > 0, f != f
		if h.dtype == F32 {
			switch {
			case pass:
				dx.f32[i] = dy.f32[i]
			case nan:
				dx.f32[i] = canonicalNaN
			default:
				dx.f32[i] = 0
			}
			continue
		}
		switch {
		case pass:
			dx.u16[i] = dy.u16[i]
		case nan:
			dx.u16[i] = half16NaN
		default:
			dx.u16[i] = 0
		}
	}
	return nil
}

func (c *CPU) mseLoss(y, t, loss *Tensor) error {
	yv, tv := values(y), values(t)
	n := len(yv)
	var total float32
	for s, i0 := 0, 0; i0 < n; s, i0 = s+1, i0+ref.SlabLen {
		p := float32(0)
		for i := i0; i < min(i0+ref.SlabLen, n); i++ {
			e := sub32(yv[i], tv[i])
			p = fma32(e, e, p)
		}
		if s == 0 {
			total = p
		} else {
			total = add32(total, p)
		}
	}
	l := div32(total, mseDivisor(n))
	loss.f32[0] = l
	loss.f32[1] = add32(loss.f32[1], l)
	return nil
}

func (c *CPU) mseGrad(y, t, dy *Tensor) error {
	yv, tv := values(y), values(t)
	scale := mseScale(len(yv))
	for i := range yv {
		g := mul32(scale, sub32(yv[i], tv[i]))
		if dy.dtype == F32 {
			dy.f32[i] = g
		} else {
			dy.u16[i] = dy.dtype.FromF32(g)
		}
	}
	return nil
}

func (c *CPU) sgd(w, v, g, work *Tensor, lr, mu float32) error {
	for i := range w.f32 {
		w.f32[i], v.f32[i] = sgdStep(w.f32[i], v.f32[i], g.f32[i], lr, mu)
		g.f32[i] = 0
		if work != nil {
			work.u16[i] = work.dtype.FromF32(w.f32[i])
		}
	}
	return nil
}

func (c *CPU) capture([]product, func() error) (replayer, error) {
	return nil, fmt.Errorf("triad: %w: the cpu backend runs every operation at once", ErrNoGraphs)
}
