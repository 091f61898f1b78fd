package main

import (
	"errors"
	"fmt"

	"github.com/detgemm/detgemm/bench/cublaslt"
	"github.com/detgemm/detgemm/cudaload"
)

// The cuBLASLt modes (bf16 and f16 only; opt-in through --modes): the
// forward product A·B with one of cuBLASLt's fused epilogues, the anchor
// the engine's fused epilogues are timed against.
const (
	modeLt            = "lt"               // DEFAULT: Y = A·B
	modeLtBias        = "lt-bias"          // BIAS: Y = A·B + bias
	modeLtGELUBias    = "lt-gelu-bias"     // GELU_BIAS: Y = gelu(A·B + bias)
	modeLtGELUAuxBias = "lt-gelu-aux-bias" // GELU_AUX_BIAS: Y as GELU_BIAS, aux = A·B + bias
	modeLtReLUBias    = "lt-relu-bias"     // RELU_BIAS: Y = max(A·B + bias, 0)
	modeLtDGELUBGrad  = "lt-dgelu-bgrad"   // DGELU_BGRAD: Y = A·B ⊙ gelu'(C), bias = column sums of Y
	modeLtBGradA      = "lt-bgrada"        // BGRADA: Y = A·B, bias = row sums of B (N values)
	modeLtBGradB      = "lt-bgradb"        // BGRADB: Y = A·B, bias = row sums of A (M values)
)

// ltModes lists the cuBLASLt modes in table order.
var ltModes = []string{modeLt, modeLtBias, modeLtGELUBias, modeLtGELUAuxBias, modeLtReLUBias, modeLtDGELUBGrad, modeLtBGradA, modeLtBGradB}

// ltEpilogues maps each mode to cuBLASLt's epilogue. cuBLASLt sees the
// row-major product as Yᵀ = Bᵀ·Aᵀ (bench/cublaslt's documentation), so its
// A is our B: BGRADA sums our B over K (the bias gradient of a row-major
// dW = Xᵀ·dY, one value per output column) and BGRADB sums our A.
var ltEpilogues = map[string]cublaslt.Epilogue{
	modeLt:            cublaslt.EpilogueDefault,
	modeLtBias:        cublaslt.EpilogueBias,
	modeLtGELUBias:    cublaslt.EpilogueGELUBias,
	modeLtGELUAuxBias: cublaslt.EpilogueGELUAuxBias,
	modeLtReLUBias:    cublaslt.EpilogueReLUBias,
	modeLtDGELUBGrad:  cublaslt.EpilogueDGELUBGrad,
	modeLtBGradA:      cublaslt.EpilogueBGradA,
	modeLtBGradB:      cublaslt.EpilogueBGradB,
}

// ltBackendName labels the cuBLASLt rows.
const ltBackendName = "cuBLASLt"

// ltWorkspaceBytes is the workspace offered to cuBLASLt's heuristic: the
// size NVIDIA's cuBLAS documentation recommends for Hopper (32 MiB), which
// covers the smaller recommendations for earlier GPUs.
const ltWorkspaceBytes = 32 << 20

// ltBackend measures cublasLtMatmul with epilogues.
type ltBackend struct {
	ctx       *cudaload.Context
	stream    *cudaload.Stream
	lib       *cublaslt.Library
	h         *cublaslt.Handle
	workspace cudaload.DevicePtr
}

// wantsLt reports whether --modes asked for any cuBLASLt mode, so that a
// run without them neither loads cuBLASLt nor needs it installed.
func wantsLt(modes []string) bool {
	for _, m := range modes {
		if _, ok := ltEpilogues[m]; ok {
			return true
		}
	}
	return false
}

// newLtBackend loads cuBLASLt, makes a handle and the workspace. The
// calling OS thread must have the bench's context current (bindThread).
func newLtBackend(ctx *cudaload.Context, stream *cudaload.Stream, opts ...cublaslt.Option) (*ltBackend, error) {
	lib, err := cublaslt.Open(opts...)
	if err != nil {
		return nil, err
	}
	h, err := lib.Create()
	if err != nil {
		return nil, err
	}
	ws, err := ctx.MemAlloc(ltWorkspaceBytes)
	if err != nil {
		_ = h.Destroy()
		return nil, fmt.Errorf("cuBLASLt workspace: %w", err)
	}
	return &ltBackend{ctx: ctx, stream: stream, lib: lib, h: h, workspace: ws}, nil
}

// Name implements backend.
func (b *ltBackend) Name() string { return ltBackendName }

// Modes implements backend: every cuBLASLt mode for bf16 and f16, none for
// f32 (the epilogues are timed where the engine's tensor-core tier runs).
func (b *ltBackend) Modes(dt dtype) []string {
	if dt == f32 {
		return nil
	}
	return ltModes
}

// Info is the loaded library for the report.
func (b *ltBackend) Info() *libraryInfo {
	return &libraryInfo{Version: b.lib.VersionString(), Code: b.lib.Version(), Path: b.lib.Path(),
		Comment: "cublasLtGetVersion; the cuBLASLt rows' library"}
}

// Prepare implements backend: the bias vector (one per problem: a small
// vector that stays in L2 in real use too) and, for GELU_AUX_BIAS, one aux
// matrix per input set, so its writes rotate like the outputs'. DGELU_BGRAD
// reads its aux (the pre-activation) from each set's C, which no backend
// writes.
func (b *ltBackend) Prepare(ctx *cudaload.Context, _ *cudaload.Stream, p problem, sets []inputSet) (runner, error) {
	epi, ok := ltEpilogues[p.Mode]
	if !ok || p.DType == f32 {
		return nil, fmt.Errorf("cuBLASLt: no mode %q for %s", p.Mode, p.DType)
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("cuBLASLt: no input sets")
	}
	dt := cublaslt.R16BF
	if p.DType == f16 {
		dt = cublaslt.R16F
	}
	r := &ltRunner{b: b, ctx: ctx, sets: sets, args: cublaslt.MatmulArgs{
		M: p.Shape.M, K: p.Shape.K, N: p.Shape.N, In: dt, Out: dt, Epilogue: epi,
		Workspace: uintptr(b.workspace), WorkspaceBytes: ltWorkspaceBytes, Stream: b.stream.Handle(),
	}}
	size := uint64(p.DType.Size())
	if epi.NeedsBias() {
		n := uint64(max(p.Shape.M, p.Shape.N)) // BGRADB's gradient has M values, the others N
		bias, err := ctx.MemAlloc(n * size)
		if err != nil {
			return nil, fmt.Errorf("cuBLASLt bias: %w", err)
		}
		r.bias = bias
		r.args.Bias = uintptr(bias)
		if err := ctx.MemsetD8(bias, 0, n*size); err != nil {
			return nil, errors.Join(err, r.Close())
		}
	}
	if epi == cublaslt.EpilogueGELUAuxBias {
		stride := (uint64(p.Shape.M)*uint64(p.Shape.N)*size + matrixAlign - 1) &^ (matrixAlign - 1)
		aux, err := ctx.MemAlloc(stride * uint64(len(sets)))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("cuBLASLt aux (%d sets): %w", len(sets), err), r.Close())
		}
		r.aux, r.auxStride = aux, stride
	}
	if epi.NeedsAux() {
		r.args.AuxLD = p.Shape.N
	}
	return r, nil
}

// Close implements backend.
func (b *ltBackend) Close() error {
	return errors.Join(b.h.Destroy(), b.ctx.MemFree(b.workspace))
}

type ltRunner struct {
	b    *ltBackend
	ctx  *cudaload.Context
	sets []inputSet
	args cublaslt.MatmulArgs
	// bias is the runner's bias vector; aux its aux matrices, auxStride
	// bytes apart (0 when the epilogue writes none).
	bias, aux cudaload.DevicePtr
	auxStride uint64
}

// Launch implements runner.
func (r *ltRunner) Launch(i int) error {
	s := r.sets[i]
	a := &r.args
	a.A, a.B, a.D = uintptr(s.A), uintptr(s.B), uintptr(s.Y)
	switch {
	case r.aux != 0:
		a.Aux = uintptr(r.aux) + uintptr(uint64(i)*r.auxStride)
	case a.Epilogue.NeedsAux():
		a.Aux = uintptr(s.C) // DGELU reads the pre-activation
	}
	return r.b.h.Matmul(a)
}

// Close implements runner: the bias and aux buffers; the handle and its
// plans belong to the backend.
func (r *ltRunner) Close() error {
	var errs []error
	for _, p := range []*cudaload.DevicePtr{&r.bias, &r.aux} {
		if *p != 0 {
			errs = append(errs, r.ctx.MemFree(*p))
			*p = 0
		}
	}
	return errors.Join(errs...)
}
