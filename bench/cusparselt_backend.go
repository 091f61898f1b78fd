package main

import (
	"errors"
	"fmt"

	"github.com/detgemm/detgemm/bench/cusparselt"
	"github.com/detgemm/detgemm/cudaload"
)

// modeCuSPARSELt is cuSPARSELt's 2:4-sparse product (bf16 and f16; opt-in
// through --modes, and in the sparse group): Y[M,N] = X[M,K]·W[K,N] with W
// pruned to 2:4 along K and compressed by cuSPARSELt itself (its own
// layout), the default algorithm, f32 accumulation, output in the input
// type.
const modeCuSPARSELt = "cusparselt"

// cusparseltBackendName labels cuSPARSELt's rows.
const cusparseltBackendName = "cuSPARSELt"

// cusparseltBackend measures cuSPARSELt. A run whose --modes name it makes
// one even when the library is missing: then every row of it carries the
// reason (openErr), and the rest of the run goes on, since cuSPARSELt is
// optional on the GPU machine.
type cusparseltBackend struct {
	lib     *cusparselt.Library
	h       *cusparselt.Handle
	openErr error
	version int
	// l2 and budget size the compressed weights' rotation, as for sp24
	// (sparseCopies).
	l2, budget int64
}

// wantsCuSPARSELt reports whether --modes asked for cuSPARSELt.
func wantsCuSPARSELt(modes []string) bool {
	for _, m := range modes {
		if m == modeCuSPARSELt {
			return true
		}
	}
	return false
}

// newCusparseltBackend loads cuSPARSELt and makes a handle, in the context
// current on the calling thread; a failure is kept for the rows.
func newCusparseltBackend() *cusparseltBackend {
	b := &cusparseltBackend{}
	lib, err := cusparselt.Open()
	if err != nil {
		b.openErr = err
		return b
	}
	h, err := lib.Init()
	if err != nil {
		b.openErr = err
		return b
	}
	b.lib, b.h = lib, h
	if v, err := h.Version(); err == nil {
		b.version = v
	}
	return b
}

// Info is the loaded library for the report; nil when none loaded.
func (b *cusparseltBackend) Info() *libraryInfo {
	if b.lib == nil {
		return nil
	}
	return &libraryInfo{Version: cusparselt.FormatVersion(b.version), Code: b.version, Path: b.lib.Path()}
}

// Name implements backend.
func (*cusparseltBackend) Name() string { return cusparseltBackendName }

// Modes implements backend.
func (*cusparseltBackend) Modes(dt dtype) []string {
	if dt == f32 {
		return nil
	}
	return []string{modeCuSPARSELt}
}

// Close implements backend.
func (b *cusparseltBackend) Close() error { return b.h.Destroy() }

// Prepare implements backend: the plan, its workspace, and sparseCopies
// compressed weights, each the set's B (j mod len(sets)) pruned by
// cuSPARSELt into a scratch buffer (the sets' B stays dense for the other
// rows) and compressed.
func (b *cusparseltBackend) Prepare(ctx *cudaload.Context, stream *cudaload.Stream, p problem, sets []inputSet) (_ runner, err error) {
	if p.Mode != modeCuSPARSELt {
		return nil, fmt.Errorf("cuSPARSELt has no mode %q", p.Mode)
	}
	if b.openErr != nil {
		return nil, b.openErr
	}
	var dt cusparselt.DataType
	switch p.DType {
	case bf16:
		dt = cusparselt.R16BF
	case f16:
		dt = cusparselt.R16F
	default:
		return nil, fmt.Errorf("cuSPARSELt: no sparse product of %s here", p.DType)
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("no input sets")
	}
	s := p.Shape
	plan, err := b.h.NewPlan(dt, s.M, s.K, s.N)
	if err != nil {
		return nil, err
	}
	r := &cusparseltRunner{plan: plan, sets: sets, stream: stream, bufs: deviceBuffers{ctx: ctx}}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.Close())
		}
	}()
	if plan.Workspace > 0 {
		if r.workspace, err = r.bufs.alloc("cuSPARSELt workspace", plan.Workspace); err != nil {
			return nil, err
		}
	}
	r.copies = max(len(sets), setsFor(int64(plan.CompressedBytes)+sp24Bytes(s, p.DType)-sparseWeightBytes(s.K, s.N, p.DType), b.l2, 0))
	if b.budget > 0 && int64(r.copies)*int64(plan.CompressedBytes) > b.budget {
		r.copies = max(len(sets), int(b.budget/int64(max(plan.CompressedBytes, 1))))
	}
	if r.weights, r.wstride, err = r.bufs.perSet("cuSPARSELt compressed weights", r.copies, plan.CompressedBytes); err != nil {
		return nil, err
	}
	scratch, err := r.bufs.alloc("pruned weight", uint64(s.K)*uint64(s.N)*uint64(p.DType.Size()))
	if err != nil {
		return nil, err
	}
	var cbuf cudaload.DevicePtr
	if plan.CompressBufferBytes > 0 {
		if cbuf, err = r.bufs.alloc("compress buffer", plan.CompressBufferBytes); err != nil {
			return nil, err
		}
	}
	st := stream.Handle()
	for j := range r.copies {
		if err := plan.Prune(uintptr(sets[j%len(sets)].B), uintptr(scratch), st); err != nil {
			return nil, err
		}
		if err := plan.Compress(uintptr(scratch), uintptr(r.weight(j)), uintptr(cbuf), st); err != nil {
			return nil, err
		}
	}
	if err := stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("cuSPARSELt prune + compress: %w", err)
	}
	return r, nil
}

type cusparseltRunner struct {
	plan      *cusparselt.Plan
	sets      []inputSet
	stream    *cudaload.Stream
	workspace cudaload.DevicePtr
	// copies compressed weights, wstride bytes apart; next is the one the
	// next launch reads (a rotation of their own, as sp24's).
	weights      cudaload.DevicePtr
	wstride      uint64
	copies, next int
	bufs         deviceBuffers
}

func (r *cusparseltRunner) weight(j int) cudaload.DevicePtr {
	return r.weights + cudaload.DevicePtr(uint64(j)*r.wstride)
}

// Launch implements runner: set i's X and Y, the next compressed weight.
func (r *cusparseltRunner) Launch(i int) error {
	w := r.weight(r.next)
	r.next = (r.next + 1) % r.copies
	s := r.sets[i]
	return r.plan.Matmul(uintptr(w), uintptr(s.A), uintptr(s.Y), uintptr(r.workspace), r.stream.Handle())
}

// Close implements runner: the plan and the buffers Prepare made. The
// stream is drained first: launches may still read the buffers.
func (r *cusparseltRunner) Close() error {
	return errors.Join(r.stream.Synchronize(), r.plan.Destroy(), r.bufs.free())
}
