package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm"
)

// engineBackend measures detgemm's own tiers: the f32 tier for f32 inputs
// and the typed tier for bf16/f16 (modes fwd, dx, dw), and the tensor-core
// tier for bf16/f16 (tc-fwd, tc-dx, tc-dw), each product of the triad on
// the shape's operands (same FLOP count: 2·M·N·K).
type engineBackend struct {
	eng *gemm.Engine
}

func newEngineBackend(ctx *cudaload.Context, stream *cudaload.Stream) (*engineBackend, error) {
	eng, err := gemm.New(ctx, gemm.WithStream(stream))
	if err != nil {
		return nil, err
	}
	return &engineBackend{eng: eng}, nil
}

// Name implements backend.
func (b *engineBackend) Name() string { return "detgemm" }

// Modes implements backend.
func (b *engineBackend) Modes(d dtype) []string {
	if d == f32 {
		return []string{modeFwd, modeDX, modeDW}
	}
	return []string{modeFwd, modeDX, modeDW, modeTCFwd, modeTCDX, modeTCDW}
}

// Close implements backend.
func (b *engineBackend) Close() error { return b.eng.Close() }

func engineDType(d dtype) (gemm.DType, gemm.Tier) {
	switch d {
	case bf16:
		return gemm.BF16, gemm.TierTyped
	case f16:
		return gemm.F16, gemm.TierTyped
	}
	return gemm.F32, gemm.TierF32
}

// Prepare implements backend and presizes the engine's workspace for the
// problem. Forward reads A and B and writes C. DX reads
// C as dY[M,N] and B as W[K,N] and writes A as dX[M,K]. DW reads A as X and
// C as dY and accumulates into one f32 [K,N] buffer made here.
func (b *engineBackend) Prepare(ctx *cudaload.Context, _ *cudaload.Stream, p problem, sets []inputSet) (runner, error) {
	d, tier := engineDType(p.DType)
	mode := p.Mode
	if op, ok := strings.CutPrefix(mode, "tc-"); ok {
		if d == gemm.F32 {
			return nil, fmt.Errorf("the tensor-core tier takes bf16 or f16, not f32")
		}
		mode, tier = op, gemm.TierTensorCore
	}
	M, K, N := p.Shape.M, p.Shape.K, p.Shape.N
	r := &engineRunner{b: b, ctx: ctx, mode: mode, sets: sets}
	switch mode {
	case modeFwd:
		r.fwd = gemm.ForwardArgs{Tier: tier, M: M, K: K, N: N, In: d, Out: d}
	case modeDX:
		r.dx = gemm.DXArgs{Tier: tier, M: M, N: N, K: K, In: d, Out: d}
	case modeDW:
		bytes := uint64(K) * uint64(N) * 4
		dw, err := ctx.MemAlloc(bytes)
		if err != nil {
			return nil, fmt.Errorf("dW buffer: %w", err)
		}
		r.dwBuf = dw
		if err := ctx.MemsetD32(dw, math.Float32bits(0.5), bytes/4); err != nil {
			_ = r.Close()
			return nil, err
		}
		r.dw = gemm.DWArgs{Tier: tier, M: M, K: K, N: N, DW: dw, In: d}
	default:
		return nil, fmt.Errorf("detgemm has no mode %q", p.Mode)
	}
	// Allocate the workspace of this shape's strategy now, so no timed
	// launch allocates.
	var call gemm.Call = r.fwd
	switch mode {
	case modeDX:
		call = r.dx
	case modeDW:
		call = r.dw
	}
	if err := b.eng.Presize(call); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("presizing the workspace: %w", err)
	}
	return r, nil
}

type engineRunner struct {
	b     *engineBackend
	ctx   *cudaload.Context
	mode  string
	sets  []inputSet
	fwd   gemm.ForwardArgs
	dx    gemm.DXArgs
	dw    gemm.DWArgs
	dwBuf cudaload.DevicePtr
}

// Launch implements runner.
func (r *engineRunner) Launch(i int) error {
	s := r.sets[i]
	switch r.mode {
	case modeFwd:
		r.fwd.X, r.fwd.W, r.fwd.Y = s.A, s.B, s.Y
		return r.b.eng.Forward(r.fwd)
	case modeDX:
		r.dx.DY, r.dx.W, r.dx.DX = s.C, s.B, s.D
		return r.b.eng.DX(r.dx)
	default:
		r.dw.X, r.dw.DY = s.A, s.C
		return r.b.eng.DW(r.dw)
	}
}

// Close implements runner.
func (r *engineRunner) Close() error {
	if r.dwBuf != 0 {
		err := r.ctx.MemFree(r.dwBuf)
		r.dwBuf = 0
		return err
	}
	return nil
}
