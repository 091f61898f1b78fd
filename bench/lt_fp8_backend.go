package main

import (
	"errors"
	"fmt"

	"github.com/detgemm/detgemm/bench/cublaslt"
	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm"
)

// ltFP8Backend measures cuBLASLt's fp8 product (lt-fp8, lt-fp8-fast) on
// the handle and workspace of the cuBLASLt backend; its rows are
// "cuBLASLt" rows, filed under bf16 like the engine's fp8 rows, and they
// rotate over copies of the same random codes and scales (makeFP8Operands
// with one scale per tensor and a bf16 D).
type ltFP8Backend struct {
	lt *ltBackend
	// l2 and budget size the copies, as for the engine's fp8 rows.
	l2, budget int64
}

// wantsLtFP8 reports whether --modes asked for a cuBLASLt fp8 mode.
func wantsLtFP8(modes []string) bool {
	for _, m := range modes {
		if isLtFP8(m) {
			return true
		}
	}
	return false
}

// Name implements backend.
func (*ltFP8Backend) Name() string { return ltBackendName }

// Modes implements backend: bf16 only, as the engine's fp8 rows.
func (*ltFP8Backend) Modes(dt dtype) []string {
	if dt != bf16 {
		return nil
	}
	return ltFP8Modes
}

// Close implements backend; the handle belongs to the cuBLASLt backend.
func (*ltFP8Backend) Close() error { return nil }

// ltFP8Args is the cuBLASLt product of a mode on s, pointers aside:
// E4M3 × E4M3 → bf16 in the TN form (A stored M×K, B stored N×K; see
// bench/cublaslt's documentation for how that maps onto cuBLASLt's
// column-major TRANSA = T, TRANSB = N), COMPUTE_32F, f32 scales.
func ltFP8Args(mode string, s shape) cublaslt.MatmulArgs {
	return cublaslt.MatmulArgs{M: s.M, K: s.K, N: s.N, TransB: true, In: cublaslt.R8FE4M3, Out: cublaslt.R16BF,
		FastAccum: mode == modeLtFP8Fast}
}

// Prepare implements backend: the copies, then one untimed product, which
// makes the plan (descriptors, the heuristic's algorithm): a refusal by
// cuBLASLt is the row's error, and the run goes on.
func (b *ltFP8Backend) Prepare(ctx *cudaload.Context, _ *cudaload.Stream, p problem, _ []inputSet) (_ runner, err error) {
	if !isLtFP8(p.Mode) || p.DType != bf16 {
		return nil, fmt.Errorf("cuBLASLt: no fp8 mode %q for %s", p.Mode, p.DType)
	}
	lt := b.lt
	r := &ltFP8Runner{b: b, bufs: deviceBuffers{ctx: ctx}, args: ltFP8Args(p.Mode, p.Shape)}
	r.args.Workspace, r.args.WorkspaceBytes, r.args.Stream = uintptr(lt.workspace), ltWorkspaceBytes, lt.stream.Handle()
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("cuBLASLt: %w", err), r.Close())
		}
	}()
	if r.ops, err = makeFP8Operands(&r.bufs, lt.im, p.Shape, gemm.ScaleTensor, 2, b.l2, b.budget); err != nil {
		return nil, err
	}
	if err := r.Launch(0); err != nil {
		return nil, err
	}
	if err := lt.stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("the untimed first product: %w", err)
	}
	return r, nil
}

// ltFP8Runner launches cuBLASLt's fp8 product over its own copies.
type ltFP8Runner struct {
	b    *ltFP8Backend
	bufs deviceBuffers
	ops  *fp8Operands
	args cublaslt.MatmulArgs
	next int
}

// rotation implements rotator.
func (r *ltFP8Runner) rotation() (int, int64) { return r.ops.copies, r.ops.perLaunch }

// Launch implements runner: the next copy (the input set is not read).
// ScaleA and ScaleB are our A's and B's scales; the binding hands them to
// cuBLASLt swapped with the operands.
func (r *ltFP8Runner) Launch(int) error {
	j, o := r.next, r.ops
	r.next = (r.next + 1) % o.copies
	a := &r.args
	a.A, a.B, a.D = uintptr(o.a.at(j)), uintptr(o.b.at(j)), uintptr(o.d.at(j))
	a.ScaleA, a.ScaleB = uintptr(o.sa.at(j)), uintptr(o.sb.at(j))
	return r.b.lt.h.Matmul(a)
}

// Close implements runner: the copies, once the stream has drained; the
// handle keeps the plan.
func (r *ltFP8Runner) Close() error {
	var err error
	if s := r.b.lt.stream; s != nil {
		err = s.Synchronize()
	}
	return errors.Join(err, r.bufs.free())
}
