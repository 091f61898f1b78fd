package triad

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/gemm/ref"
)

// The 2:4 sparse layers (LinearConfig.Sparse24, MLPConfig.Sparse24): the
// weight W[In, Out] keeps at most 2 of every 4 consecutive elements along
// In (the reduction dimension K of the forward), in a pattern fixed when
// the parameters are set. The layer keeps the dense f32 master (its pruned
// elements +0), the dense 16-bit working copy (RNE of the master, the
// weight of dX), and the working copy compressed for the sparse tensor
// cores, which run the forward.

// sparse24 is a sparse layer's 2:4 state.
type sparse24 struct {
	// pattern is the fixed metadata (words [Out, ceil(In/32)], ref.Sparse24's
	// layout): the positions SetParams's magnitude pruning kept. Every Step
	// masks the master and the working copy with it.
	pattern *Tensor
	// values [Out, In/2] of the layer's dtype and meta (words [Out,
	// ceil(In/32)]): the working copy compressed (PruneCompress24), what
	// the sparse forward reads; refreshed by SetParams and every Step.
	values, meta *Tensor
}

func (s *sparse24) free() error {
	if s == nil {
		return nil
	}
	return errors.Join(s.pattern.Free(), s.values.Free(), s.meta.Free())
}

// checkSparse24 refuses a 2:4 sparse layer outside the tensor-core tier
// (gemm.ErrTier, naming Tier) or with an input width that is not a
// multiple of 16 (ErrShape, naming inArg): the sparse tensor cores read
// the compressed rows, In/2 16-bit values, in 16-byte chunks.
func checkSparse24(op string, tier gemm.Tier, inArg string, in int) error {
	if err := checkSparseTier(op, tier); err != nil {
		return err
	}
	if in%16 != 0 {
		return argErr(op, inArg, ErrShape, "%d is not a multiple of 16: Sparse24 compresses W along its input width into rows of whole 16-byte chunks", in)
	}
	return nil
}

// checkSparseTier refuses a 2:4 sparse layer outside the tensor-core tier.
func checkSparseTier(op string, tier gemm.Tier) error {
	if tier != gemm.TierTensorCore {
		return argErr(op, "Tier", gemm.ErrTier, "%v: Sparse24 runs on the sparse tensor cores, gemm.TierTensorCore only", tier)
	}
	return nil
}

// newSparse24 allocates a K×N sparse layer's 2:4 state, after asking the
// backend whether it can run its forward: that of the zero weight, as
// SetParams would make it (every group keeps rows 0 and 1, so every
// metadata word is 0x44444444; the values are +0), so that a layer whose
// parameters were never set runs too.
func newSparse24(be Backend, d DType, k, n int) (*sparse24, error) {
	if err := be.check24(d, k, n); err != nil {
		return nil, err
	}
	s := &sparse24{}
	var err error
	mw := ref.Meta24Words(k)
	if s.pattern, err = be.allocWords(n, mw); err == nil {
		if s.values, err = be.Alloc(d, n, k/2); err == nil {
			s.meta, err = be.allocWords(n, mw)
		}
	}
	if err == nil {
		zero := make([]uint32, n*mw)
		for i := range zero {
			zero[i] = 0x44444444
		}
		if err = be.writeWords(s.pattern, zero); err == nil {
			err = be.writeWords(s.meta, zero)
		}
	}
	if err != nil {
		return nil, errors.Join(err, s.free())
	}
	return s, nil
}

// prune24 prunes the weight w [k, n] (row-major f32) by magnitude along k,
// in place (ref.Prune24: in every group of 4 rows of a column the two
// largest magnitudes stay, a NaN above every number, ties to the lower
// row; the others become +0), and returns the pattern it kept: the
// metadata, in ref.Sparse24's layout, of the group's nonzeros filled up to
// two with its lowest zero rows (ref.Compress24's positions, which are
// Prune24's choice on a pruned group).
func prune24(w []float32, k, n int) ([]uint32, error) {
	if err := ref.Prune24(ref.F32, ref.Values(w), k, n, n); err != nil {
		return nil, err
	}
	// Compress24 keeps the nonzeros' rows; a bf16 1 marks each.
	nz := make([]uint16, len(w))
	for i, v := range w {
		if v != 0 {
			nz[i] = 0x3F80
		}
	}
	s, err := ref.Compress24(ref.BF16, ref.Bits(nz), k, n, n)
	if err != nil {
		return nil, err
	}
	return s.Meta, nil
}

// setSparse prunes the master w (In·Out values) by magnitude, fixes the
// pattern, and writes the master, the working copy and its compressed
// form.
func (l *Linear) setSparse(w []float32) error {
	w = slices.Clone(w)
	pattern, err := prune24(w, l.cfg.In, l.cfg.Out)
	if err != nil {
		return err
	}
	if err := l.be.Write(l.w, w); err != nil {
		return err
	}
	if err := l.be.Write(l.work, w); err != nil { // Write rounds once to nearest even
		return err
	}
	if err := l.be.writeWords(l.sp.pattern, pattern); err != nil {
		return err
	}
	return l.be.compress24(l.work, l.sp.values, l.sp.meta)
}

// stepSparse keeps the pruned weights at +0 after the optimizer step and
// refreshes the compressed working copy: the master and the working copy
// are masked with the fixed pattern (the working copy, RNE of the
// unmasked master, is then RNE of the masked one), then the working copy
// is compressed.
func (l *Linear) stepSparse() error {
	if err := l.be.mask24(l.w, l.sp.pattern); err != nil {
		return err
	}
	if err := l.be.mask24(l.work, l.sp.pattern); err != nil {
		return err
	}
	return l.be.compress24(l.work, l.sp.values, l.sp.meta)
}

// Pattern24 waits for queued work and returns a sparse layer's fixed 2:4
// pattern: Out rows of ceil(In/32) words in ref.Sparse24's layout (group q
// of output column n is the nibble at bits 4·(q%8) of word n·ceil(In/32) +
// q/8, bits 0-1 the first kept row of the group, bits 2-3 the second). A
// dense layer answers an *Error matching ErrConfig.
func (l *Linear) Pattern24() ([]uint32, error) {
	const op = "Linear.Pattern24"
	if err := l.usable(op); err != nil {
		return nil, err
	}
	if l.sp == nil {
		return nil, argErr(op, "layer", ErrConfig, "the layer is dense (LinearConfig.Sparse24 is false)")
	}
	return l.be.readWords(l.sp.pattern)
}

// The CPU backend's sparse operations: gemm/ref, the GPU's bits.

func (c *CPU) allocWords(rows, cols int) (*Tensor, error) {
	if c.closed {
		return nil, argErr("Alloc", "backend", ErrClosed, "the cpu backend is closed")
	}
	if err := checkAlloc(F32, rows, cols); err != nil {
		return nil, err
	}
	if rows > MaxHostTensorBytes/cols/4 {
		return nil, argErr("Alloc", "shape", ErrShape, "%d×%d words are more than the CPU backend's %d bytes a tensor", rows, cols, MaxHostTensorBytes)
	}
	return &Tensor{be: c, rows: rows, cols: cols, words: true, u32: make([]uint32, rows*cols)}, nil
}

func (c *CPU) writeWords(t *Tensor, words []uint32) error {
	copy(t.u32, words)
	return nil
}

func (c *CPU) readWords(t *Tensor) ([]uint32, error) { return slices.Clone(t.u32), nil }

func (c *CPU) check24(DType, int, int) error { return nil }

// forward24 runs ref's sparse forward in the tensor-core tier with the
// Hopper model, as forward does for the dense tier.
func (c *CPU) forward24(ep gemm.Epilogue, x, values, meta, b, y, aux *Tensor) error {
	r := ref.Sparse24Request{M: x.rows, N: y.cols, K: x.cols, X: operand(x), Values: values.u16, Meta: meta.u32,
		Y: operand(y), Epilogue: ep}
	if b != nil {
		r.Bias = b.f32
	}
	if aux != nil {
		if aux.mask {
			r.ReluMask = aux.u8
		} else {
			r.Aux = operand(aux)
		}
	}
	o := ref.Options{Tier: ref.TensorCore, In: x.dtype, Out: y.dtype, Model: tcModel, Workers: c.opts.Workers}
	return o.Sparse24Forward(r)
}

// compress24 is Engine.PruneCompress24's definition: ref.Compress24 after
// ref.Prune24, on a copy of work.
func (c *CPU) compress24(work, values, meta *Tensor) error {
	k, n := work.rows, work.cols
	w := slices.Clone(work.u16)
	if err := ref.Prune24(work.dtype, ref.Bits(w), k, n, n); err != nil {
		return err
	}
	s, err := ref.Compress24(work.dtype, ref.Bits(w), k, n, n)
	if err != nil {
		return err
	}
	copy(values.u16, s.Values)
	copy(meta.u32, s.Meta)
	return nil
}

func (c *CPU) mask24(w, meta *Tensor) error {
	return ref.Mask24(w.dtype, operand(w), meta.u32, w.rows, w.cols, w.cols)
}

// The GPU backend's sparse operations: the engine's sparse forward and 2:4
// format kernels, queued on the backend's stream.

func (g *GPU) allocWords(rows, cols int) (*Tensor, error) {
	if err := g.usable("Alloc"); err != nil {
		return nil, err
	}
	if err := checkAlloc(F32, rows, cols); err != nil {
		return nil, err
	}
	return g.alloc(&Tensor{be: g, rows: rows, cols: cols, words: true})
}

// writeWords copies words to t through the stream and waits.
func (g *GPU) writeWords(t *Tensor, words []uint32) error {
	if err := g.usable("Write"); err != nil {
		return err
	}
	err := g.stream.MemcpyHtoDAsync(t.dev, unsafe.Pointer(unsafe.SliceData(words)), uint64(4*min(len(words), t.Len())))
	if err == nil {
		err = g.Synchronize()
	}
	runtime.KeepAlive(words)
	if err != nil {
		return fmt.Errorf("triad: writing 2:4 metadata: %w", err)
	}
	return nil
}

// readWords waits for queued work and copies t back.
func (g *GPU) readWords(t *Tensor) ([]uint32, error) {
	if err := g.usable("Read"); err != nil {
		return nil, err
	}
	out := make([]uint32, t.Len())
	if err := g.stream.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(out)), t.dev, g.bytes(t)); err != nil {
		return nil, fmt.Errorf("triad: reading 2:4 metadata: %w", err)
	}
	if err := g.Synchronize(); err != nil {
		return nil, err
	}
	return out, nil
}

// check24 asks the engine (gemm.Engine.CanImplementSparse24): a GPU
// without sparse tensor cores is refused with gemm.ErrArch.
func (g *GPU) check24(d DType, k, n int) error {
	return g.eng.CanImplementSparse24(sparseDesc(gemm.Bias, 0, k, n, d))
}

// sparsePlan returns the kept plan of d, making it the first time (as plan
// does for Matmuls).
func (g *GPU) sparsePlan(d gemm.Sparse24Desc) (*gemm.Sparse24Plan, error) {
	if p := g.splans[d]; p != nil {
		return p, nil
	}
	p, err := g.eng.PlanSparse24(d)
	if err != nil {
		return nil, err
	}
	if len(g.splans) >= maxPlans {
		clear(g.splans)
	}
	g.splans[d] = p
	return p, nil
}

func (g *GPU) forward24(ep gemm.Epilogue, x, values, meta, b, y, aux *Tensor) error {
	p, err := g.sparsePlan(sparseDescOf(ep, x, y))
	if err != nil {
		return err
	}
	a := gemm.Sparse24Args{X: x.dev, Values: values.dev, Meta: meta.dev, Y: y.dev}
	if b != nil {
		a.Bias = b.dev
	}
	if aux != nil {
		a.Aux = aux.dev
	}
	return p.Run(a)
}

func (g *GPU) compress24(work, values, meta *Tensor) error {
	return g.eng.PruneCompress24(work.dtype, work.dev, work.rows, work.cols, 0, values.dev, meta.dev)
}

func (g *GPU) mask24(w, meta *Tensor) error {
	return g.eng.Mask24(w.dtype, w.dev, w.rows, w.cols, 0, meta.dev)
}
