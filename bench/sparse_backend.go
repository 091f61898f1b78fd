package main

import (
	"errors"
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm"
)

// The 2:4 sparse modes (issue 24; bf16 and f16, opt-in through --modes).
// On a shape MxKxN:
//
//   - sp24: the engine's sparse forward Y[M,N] = X[M,K]·W[K,N], W 2:4
//     along K, given compressed (values N × K/2 and metadata N × K/32
//     words): Sparse24Plan made once, Run per launch. The weights are the
//     sets' random dense B pruned and compressed by PruneCompress24 on the
//     GPU before any timing, so the metadata is as varied as a real
//     pruned weight's.
//   - sp24-prune: PruneCompress24 of the K×N weight (M unused): reads W
//     once, writes values and metadata.
const (
	modeSP24      = "sp24"
	modeSP24Prune = "sp24-prune"
)

// sparseModes lists the engine's sparse modes in table order.
var sparseModes = []string{modeSP24, modeSP24Prune}

// sparseGroup is the "sparse" group: cuBLAS's default dense product and
// cuBLASLt's, the engine's dense tensor-core forward, the sparse forward,
// the prune + compress pass, cuSPARSELt's sparse product, and the copy
// floor (the bandwidth the memory-bound shapes are read against).
func sparseGroup() []string {
	return []string{modeDefault, modeLt, modeTCFwd, modeSP24, modeCuSPARSELt, modeSP24Prune, modeCopy}
}

// isSparseMode reports whether mode is one of the engine's sparse modes.
func isSparseMode(mode string) bool { return mode == modeSP24 || mode == modeSP24Prune }

// sparseMetaBytes is the metadata of a compressed K×N weight: N rows of
// ceil(K/32) 32-bit words (a 4-bit pattern per group of 4).
func sparseMetaBytes(K, N int) int64 { return int64(N) * int64((K+31)/32) * 4 }

// sparseWeightBytes is a compressed K×N weight: values N × K/2 of dt and
// the metadata.
func sparseWeightBytes(K, N int, dt dtype) int64 {
	return int64(N)*int64(K/2)*int64(dt.Size()) + sparseMetaBytes(K, N)
}

// sp24Bytes is the least traffic of one sparse forward: X read once, the
// compressed weight (values and metadata) read once, Y written once.
func sp24Bytes(s shape, dt dtype) int64 {
	return (int64(s.M)*int64(s.K)+int64(s.M)*int64(s.N))*int64(dt.Size()) + sparseWeightBytes(s.K, s.N, dt)
}

// sp24PruneBytes is what one prune + compress moves: the dense K×N weight
// read once, the compressed one written once.
func sp24PruneBytes(s shape, dt dtype) int64 {
	return int64(s.K)*int64(s.N)*int64(dt.Size()) + sparseWeightBytes(s.K, s.N, dt)
}

// sparseBackend measures the engine's sparse modes on the engine the
// engine backend made; its rows are "detgemm" rows.
type sparseBackend struct {
	eng    *gemm.Engine
	stream *cudaload.Stream
	// l2 is the device's L2 in bytes and budget the memory the
	// compressed copies may take: the sparse forward reads less than the
	// dense sets were sized for (setsFor), so it rotates over more
	// compressed weights than there are sets (sparseCopies).
	l2, budget int64
}

// Name implements backend.
func (*sparseBackend) Name() string { return "detgemm" }

// Modes implements backend: the sparse tensor cores take bf16 and f16.
func (*sparseBackend) Modes(dt dtype) []string {
	if dt == f32 {
		return nil
	}
	return sparseModes
}

// Close implements backend; the engine belongs to the engine backend.
func (*sparseBackend) Close() error { return nil }

// sparseDType is the engine's type of a 16-bit dtype.
func sparseDType(dt dtype) (gemm.DType, error) {
	switch dt {
	case bf16:
		return gemm.BF16, nil
	case f16:
		return gemm.F16, nil
	}
	return 0, fmt.Errorf("the sparse tensor cores take bf16 or f16, not %s", dt)
}

// sp24Desc is the sparse forward a problem runs: output in the input
// type, no epilogue, dense leading dimensions.
func sp24Desc(p problem) (gemm.Sparse24Desc, error) {
	t, err := sparseDType(p.DType)
	if err != nil {
		return gemm.Sparse24Desc{}, err
	}
	s := p.Shape
	return gemm.Sparse24Desc{In: t, Out: t, M: s.M, N: s.N, K: s.K, Epilogue: gemm.Default}, nil
}

// sparseCopies is how many compressed weights the sparse forward rotates
// over: at least one per input set, and enough that the launches' own
// traffic (sp24Bytes) spans three L2s, as setsFor asks of the dense sets;
// at most what budget bytes of compressed weights hold.
func sparseCopies(s shape, dt dtype, nsets int, l2, budget int64) int {
	n := max(nsets, setsFor(sp24Bytes(s, dt), l2, 0))
	if w := sparseWeightBytes(s.K, s.N, dt); budget > 0 && int64(n)*w > budget {
		n = max(nsets, int(budget/w))
	}
	return n
}

// Prepare implements backend. sp24: the plan, and the compressed weights,
// each the pruned and compressed B of set j mod len(sets) (sparseCopies of
// them, in one allocation per part); X and Y are the sets' A and Y. sp24-prune:
// the compressed outputs, one per set (the input is the set's B, which
// PruneCompress24 leaves unchanged). A panic inside the engine becomes the
// row's error.
func (b *sparseBackend) Prepare(ctx *cudaload.Context, _ *cudaload.Stream, p problem, sets []inputSet) (_ runner, err error) {
	if !isSparseMode(p.Mode) {
		return nil, fmt.Errorf("detgemm has no sparse mode %q", p.Mode)
	}
	t, err := sparseDType(p.DType)
	if err != nil {
		return nil, err
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("no input sets")
	}
	s := p.Shape
	if s.K%16 != 0 {
		return nil, fmt.Errorf("K = %d is not a multiple of 16 (the compressed rows are whole 16-byte chunks)", s.K)
	}
	r := &sparseRunner{b: b, t: t, s: s, sets: sets, prune: p.Mode == modeSP24Prune, bufs: deviceBuffers{ctx: ctx}}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("gemm panicked: %v", v)
		}
		if err != nil {
			err = errors.Join(err, r.Close())
		}
	}()
	copies := len(sets)
	if !r.prune {
		desc, err := sp24Desc(p)
		if err != nil {
			return nil, err
		}
		if r.plan, err = b.eng.PlanSparse24(desc); err != nil {
			return nil, fmt.Errorf("PlanSparse24: %w", err)
		}
		copies = sparseCopies(s, p.DType, len(sets), b.l2, b.budget)
	}
	vb, mb := gemm.Sparse24Bytes(t, s.K, s.N)
	if r.values, r.vstride, err = r.bufs.perSet("values", copies, vb); err != nil {
		return nil, err
	}
	if r.meta, r.mstride, err = r.bufs.perSet("metadata", copies, mb); err != nil {
		return nil, err
	}
	r.copies = copies
	if r.prune {
		return r, nil
	}
	for j := range copies {
		v, m := r.weight(j)
		if err := b.eng.PruneCompress24(t, sets[j%len(sets)].B, s.K, s.N, s.N, v, m); err != nil {
			return nil, fmt.Errorf("PruneCompress24 of the weights: %w", err)
		}
	}
	if err := b.stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("PruneCompress24 of the weights: %w", err)
	}
	return r, nil
}

type sparseRunner struct {
	b     *sparseBackend
	t     gemm.DType
	s     shape
	sets  []inputSet
	prune bool
	plan  *gemm.Sparse24Plan // sp24 only
	// The compressed weights: copies of them, vstride and mstride bytes
	// apart; next is the one the next sparse forward reads.
	values, meta     cudaload.DevicePtr
	vstride, mstride uint64
	copies, next     int
	bufs             deviceBuffers
}

// weight is compressed weight j's values and metadata.
func (r *sparseRunner) weight(j int) (cudaload.DevicePtr, cudaload.DevicePtr) {
	return r.values + cudaload.DevicePtr(uint64(j)*r.vstride), r.meta + cudaload.DevicePtr(uint64(j)*r.mstride)
}

// Launch implements runner. sp24: the plan's Run on set i's X and Y and
// the next compressed weight (its own rotation: there are more weights
// than sets). sp24-prune: PruneCompress24 of set i's B into output i. A
// panic inside the engine becomes an error.
func (r *sparseRunner) Launch(i int) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("gemm panicked: %v", v)
		}
	}()
	set := r.sets[i]
	if r.prune {
		v, m := r.weight(i)
		return r.b.eng.PruneCompress24(r.t, set.B, r.s.K, r.s.N, r.s.N, v, m)
	}
	v, m := r.weight(r.next)
	r.next = (r.next + 1) % r.copies
	return r.plan.Run(gemm.Sparse24Args{X: set.A, Values: v, Meta: m, Y: set.Y})
}

// Close implements runner: the buffers Prepare made (a plan holds none).
func (r *sparseRunner) Close() error { return r.bufs.free() }
