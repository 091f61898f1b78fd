package main

import (
	"errors"
	"fmt"

	"github.com/detgemm/detgemm/bench/cublaslt"
	"github.com/detgemm/detgemm/cudaload"
)

// The cuBLASLt modes (bf16 and f16 only; opt-in through --modes): the
// product op(A)·op(B) with one of cuBLASLt's fused epilogues, the anchor
// the engine's Matmul modes are timed against.
const (
	modeLt            = "lt"               // DEFAULT: Y = A·B
	modeLtBias        = "lt-bias"          // BIAS: Y = A·B + bias
	modeLtGELUBias    = "lt-gelu-bias"     // GELU_BIAS: Y = gelu(A·B + bias)
	modeLtGELUAuxBias = "lt-gelu-aux-bias" // GELU_AUX_BIAS: Y as GELU_BIAS, aux = A·B + bias
	modeLtReLUBias    = "lt-relu-bias"     // RELU_BIAS: Y = max(A·B + bias, 0)
	modeLtDGELUBGrad  = "lt-dgelu-bgrad"   // DGELU_BGRAD: Y = A·B ⊙ gelu'(C), bias = column sums of Y
	modeLtBGradA      = "lt-bgrada"        // BGRADA: Y = A·B, bias = row sums of B (N values)
	modeLtBGradB      = "lt-bgradb"        // BGRADB: Y = A·B, bias = row sums of A (M values)
	// RELU_AUX_BIAS: Y as RELU_BIAS, and its bit-mask to aux.
	modeLtReLUAuxBias = "lt-relu-aux-bias"
	// DRELU_BGRAD: Y = A·B where the mask passes, bias = column sums of Y;
	// the mask is one a RELU_AUX_BIAS run wrote.
	modeLtDReLUBGrad = "lt-drelu-bgrad"
	// Layouts and strides, DEFAULT epilogue unless named.
	modeLtNT              = "lt-nt"                // Y = A·Bᵀ, B stored N×K
	modeLtTN              = "lt-tn"                // Y = Aᵀ·B, A stored K×M
	modeLtTT              = "lt-tt"                // Y = Aᵀ·Bᵀ
	modeLtTNBGradA        = "lt-tn-bgrada"         // BGRADA on Aᵀ·B: a weight gradient's bias gradient
	modeLtStrided         = "lt-strided"           // Y = A·B, rows of A, B, Y padded by stridePad
	modeLtGELUBiasStrided = "lt-gelu-bias-strided" // GELU_BIAS with the padded rows
)

// ltModes lists the cuBLASLt modes in table order.
var ltModes = []string{modeLt, modeLtBias, modeLtGELUBias, modeLtGELUAuxBias, modeLtReLUBias, modeLtDGELUBGrad, modeLtBGradA, modeLtBGradB,
	modeLtReLUAuxBias, modeLtDReLUBGrad, modeLtNT, modeLtTN, modeLtTT, modeLtTNBGradA, modeLtStrided, modeLtGELUBiasStrided}

// ltEpilogues maps each mode to cuBLASLt's epilogue. cuBLASLt sees the
// row-major product as Yᵀ = Bᵀ·Aᵀ (bench/cublaslt's documentation), so its
// A is our B: BGRADA sums our B over K (the bias gradient of a row-major
// dW = Xᵀ·dY, one value per output column) and BGRADB sums our A.
var ltEpilogues = map[string]cublaslt.Epilogue{
	modeLt:                cublaslt.EpilogueDefault,
	modeLtBias:            cublaslt.EpilogueBias,
	modeLtGELUBias:        cublaslt.EpilogueGELUBias,
	modeLtGELUAuxBias:     cublaslt.EpilogueGELUAuxBias,
	modeLtReLUBias:        cublaslt.EpilogueReLUBias,
	modeLtDGELUBGrad:      cublaslt.EpilogueDGELUBGrad,
	modeLtBGradA:          cublaslt.EpilogueBGradA,
	modeLtBGradB:          cublaslt.EpilogueBGradB,
	modeLtReLUAuxBias:     cublaslt.EpilogueReLUAuxBias,
	modeLtDReLUBGrad:      cublaslt.EpilogueDReLUBGrad,
	modeLtNT:              cublaslt.EpilogueDefault,
	modeLtTN:              cublaslt.EpilogueDefault,
	modeLtTT:              cublaslt.EpilogueDefault,
	modeLtTNBGradA:        cublaslt.EpilogueBGradA,
	modeLtStrided:         cublaslt.EpilogueDefault,
	modeLtGELUBiasStrided: cublaslt.EpilogueGELUBias,
}

// ltLayout is how a mode stores its operands: transposed (A stored K×M,
// B stored N×K, reading the set's own A and B as such: same sizes), or
// padded (copies of A and B with rows stridePad elements longer, and D
// too).
type ltLayout struct {
	transA, transB, strided bool
}

// ltLayouts lists the modes that are not NN and dense.
var ltLayouts = map[string]ltLayout{
	modeLtNT:              {transB: true},
	modeLtTN:              {transA: true},
	modeLtTT:              {transA: true, transB: true},
	modeLtTNBGradA:        {transA: true},
	modeLtStrided:         {strided: true},
	modeLtGELUBiasStrided: {strided: true},
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
	// im fills the bias vectors and padded operands (set by run once the
	// input maker exists).
	im *inputMaker
}

// wantsLt reports whether --modes asked for any cuBLASLt mode (its fp8
// ones too), so that a run without them neither loads cuBLASLt nor needs
// it installed.
func wantsLt(modes []string) bool {
	for _, m := range modes {
		if _, ok := ltEpilogues[m]; ok || isLtFP8(m) {
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

// Prepare implements backend: the bias vector (one per problem, random: a
// small vector that stays in L2 in real use too); for the epilogues that
// write an aux (GELU_AUX_BIAS, RELU_AUX_BIAS) one aux matrix per input
// set, so its writes rotate like the outputs'; for DRELU_BGRAD one mask
// per set, written first by a RELU_AUX_BIAS run on that set; for the
// strided modes padded copies of every set. DGELU_BGRAD reads its aux (the
// pre-activation) from each set's C, which no backend writes.
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
	lay := ltLayouts[p.Mode]
	s := p.Shape
	r := &ltRunner{b: b, sets: sets, bufs: deviceBuffers{ctx: ctx}, args: cublaslt.MatmulArgs{
		M: s.M, K: s.K, N: s.N, TransA: lay.transA, TransB: lay.transB, In: dt, Out: dt, Epilogue: epi,
		Workspace: uintptr(b.workspace), WorkspaceBytes: ltWorkspaceBytes, Stream: b.stream.Handle(),
	}}
	if err := r.prepare(p, epi, lay); err != nil {
		return nil, errors.Join(fmt.Errorf("cuBLASLt: %w", err), r.Close())
	}
	return r, nil
}

// prepare allocates and fills what the runner's epilogue and layout need.
func (r *ltRunner) prepare(p problem, epi cublaslt.Epilogue, lay ltLayout) error {
	b, s := r.b, p.Shape
	size := uint64(p.DType.Size())
	if lay.strided {
		pad, err := makePadded(&r.bufs, b.im, s, p.DType, len(r.sets))
		if err != nil {
			return err
		}
		r.padded = pad
		r.args.LDA, r.args.LDB, r.args.LDD = pad.lda, pad.ldb, pad.ldd
	}
	if epi.NeedsBias() {
		n := uint64(max(s.M, s.N)) // BGRADB's gradient has M values, the others N
		bias, err := r.bufs.alloc("bias", n*size)
		if err != nil {
			return err
		}
		if err := b.im.fillRandom(bias, s, p.DType, 1, n, n*size, 'v'); err != nil {
			return err
		}
		r.args.Bias = uintptr(bias)
	}
	if epi.NeedsAux() {
		r.args.AuxLD = s.N
	}
	switch epi {
	case cublaslt.EpilogueGELUAuxBias, cublaslt.EpilogueReLUAuxBias, cublaslt.EpilogueDReLUBGrad:
		// M·N elements of the output type: the GELU aux's size, and more
		// than the ReLU bit-mask needs.
		aux, stride, err := r.bufs.perSet("aux", len(r.sets), uint64(s.M)*uint64(s.N)*size)
		if err != nil {
			return err
		}
		r.aux, r.auxStride = aux, stride
	}
	if epi != cublaslt.EpilogueDReLUBGrad {
		return nil
	}
	// The masks DRELU_BGRAD reads: what RELU_AUX_BIAS writes on each set.
	fwd := r.args
	fwd.Epilogue, fwd.TransA, fwd.TransB, fwd.LDA, fwd.LDB, fwd.LDD = cublaslt.EpilogueReLUAuxBias, false, false, 0, 0, 0
	for i, set := range r.sets {
		fwd.A, fwd.B, fwd.D = uintptr(set.A), uintptr(set.B), uintptr(set.Y)
		fwd.Aux = uintptr(r.aux) + uintptr(uint64(i)*r.auxStride)
		if err := b.h.Matmul(&fwd); err != nil {
			return fmt.Errorf("the RELU_AUX_BIAS run that writes the mask: %w", err)
		}
	}
	return b.stream.Synchronize()
}

// Close implements backend.
func (b *ltBackend) Close() error {
	return errors.Join(b.h.Destroy(), b.ctx.MemFree(b.workspace))
}

type ltRunner struct {
	b    *ltBackend
	sets []inputSet
	args cublaslt.MatmulArgs
	// bufs holds the bias vector, the aux matrices (auxStride bytes apart,
	// one per set; aux 0 when the mode has none of its own) and the padded
	// sets of the strided modes (padded nil otherwise).
	bufs      deviceBuffers
	aux       cudaload.DevicePtr
	auxStride uint64
	padded    *padded
}

// Launch implements runner.
func (r *ltRunner) Launch(i int) error {
	s := r.sets[i]
	a := &r.args
	a.A, a.B, a.D = uintptr(s.A), uintptr(s.B), uintptr(s.Y)
	if r.padded != nil {
		ps := r.padded.sets[i]
		a.A, a.B, a.D = uintptr(ps.A), uintptr(ps.B), uintptr(ps.D)
	}
	switch {
	case r.aux != 0:
		a.Aux = uintptr(r.aux) + uintptr(uint64(i)*r.auxStride)
	case a.Epilogue.NeedsAux():
		a.Aux = uintptr(s.C) // DGELU reads the pre-activation
	}
	return r.b.h.Matmul(a)
}

// Close implements runner: the buffers Prepare made; the handle and its
// plans belong to the backend.
func (r *ltRunner) Close() error { return r.bufs.free() }
