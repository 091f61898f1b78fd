package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// ieeeCombos is every (tier, input, output) the IEEE tiers accept.
var ieeeCombos = []struct {
	tier    Tier
	in, out DType
}{
	{TierF32, F32, F32},
	{TierTyped, BF16, BF16}, {TierTyped, BF16, F32},
	{TierTyped, F16, F16}, {TierTyped, F16, F32},
}

// runOp runs one op on the GPU and on the CPU reference over fresh random
// inputs and returns both results as raw bits.
func runOp(t *testing.T, eng caller, ctx *cudaload.Context, r *rand.Rand, op string, tier Tier, in, out DType, a, red, b int, withBias bool) (want, got []uint32, cols int) {
	t.Helper()
	switch op {
	case "Forward":
		M, K, N := a, red, b
		x, w := randomOperand(r, in, M*K), randomOperand(r, in, K*N)
		args := ForwardArgs{Tier: tier, M: M, K: K, N: N, X: upload(t, ctx, x), W: upload(t, ctx, w), In: in, Out: out}
		var bias []float32
		if withBias {
			bo := randomOperand(r, F32, N)
			bias, args.Bias = bo.values, upload(t, ctx, bo)
		}
		args.Y = poisoned(t, ctx, uint64(M*N*out.Size()))
		require.NoError(t, eng.Forward(args))
		y := make([]float32, M*N)
		require.NoError(t, refIEEE.Forward(ref.Values(y), ref.Values(x.values), ref.Values(w.values), bias, M, K, N))
		return refBits(out, y), readBits(t, eng, ctx, args.Y, out, M*N), N
	case "DX":
		M, N, K := a, red, b
		dy, w := randomOperand(r, in, M*N), randomOperand(r, in, K*N)
		args := DXArgs{Tier: tier, M: M, N: N, K: K, DY: upload(t, ctx, dy), W: upload(t, ctx, w), In: in, Out: out}
		args.DX = poisoned(t, ctx, uint64(M*K*out.Size()))
		require.NoError(t, eng.DX(args))
		dx := make([]float32, M*K)
		require.NoError(t, refIEEE.DX(ref.Values(dx), ref.Values(dy.values), ref.Values(w.values), M, N, K))
		return refBits(out, dx), readBits(t, eng, ctx, args.DX, out, M*K), K
	case "DW":
		M, K, N := a, red, b
		x, dy := randomOperand(r, in, M*K), randomOperand(r, in, M*N)
		dw0 := randomOperand(r, F32, K*N) // accumulate onto nonzero values
		args := DWArgs{Tier: tier, M: M, K: K, N: N, X: upload(t, ctx, x), DY: upload(t, ctx, dy), DW: upload(t, ctx, dw0), In: in}
		require.NoError(t, eng.DW(args))
		dw := append([]float32(nil), dw0.values...)
		require.NoError(t, refIEEE.DW(dw, ref.Values(x.values), ref.Values(dy.values), M, K, N))
		return refBits(F32, dw), readBits(t, eng, ctx, args.DW, F32, K*N), N
	}
	t.Fatalf("unknown op %s", op)
	return nil, nil, 0
}

// TestTypedEqualsUpcastThenF32Tier checks the typed tier against the f32
// tier itself on the GPU: widen the inputs, run TierF32, round once.
func TestTypedEqualsUpcastThenF32Tier(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	const M, K, N = 300, 777, 260
	for _, d := range []DType{BF16, F16} {
		x, w := randomOperand(r, d, M*K), randomOperand(r, d, K*N)
		bias := randomOperand(r, F32, N)
		typed := poisoned(t, ctx, uint64(M*N*d.Size()))
		require.NoError(t, eng.Forward(ForwardArgs{Tier: TierTyped, M: M, K: K, N: N, X: upload(t, ctx, x), W: upload(t, ctx, w),
			Bias: upload(t, ctx, bias), Y: typed, In: d, Out: d}))
		wide := poisoned(t, ctx, uint64(M*N*4))
		require.NoError(t, eng.Forward(ForwardArgs{Tier: TierF32, M: M, K: K, N: N, X: upload(t, ctx, fromValues(F32, x.values)),
			W: upload(t, ctx, fromValues(F32, w.values)), Bias: upload(t, ctx, bias), Y: wide, In: F32, Out: F32}))
		f := readBits(t, eng, ctx, wide, F32, M*N)
		rounded := make([]uint32, len(f))
		for i, b := range f {
			rounded[i] = uint32(d.FromF32(math.Float32frombits(b)))
		}
		requireSameBits(t, rounded, readBits(t, eng, ctx, typed, d, M*N), N, d.String())
	}
}

// TestRowsInvariantToBatch: Forward and DX rows computed alone, in chunks,
// at an unaligned address, or inside a batch of 8192 have identical bits.
func TestRowsInvariantToBatch(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	const big, red, cols = 8192, 600, 260
	for _, c := range []struct {
		op      string
		tier    Tier
		in, out DType
	}{{"Forward", TierF32, F32, F32}, {"Forward", TierTyped, BF16, BF16}, {"DX", TierF32, F32, F32}, {"DX", TierTyped, F16, F32}} {
		t.Run(fmt.Sprintf("%s/%v-%v", c.op, c.in, c.out), func(t *testing.T) {
			es, os := uint64(c.in.Size()), uint64(c.out.Size())
			// One spare element in front lets a block start at an unaligned address.
			lhs := randomOperand(r, c.in, big*red+1)
			rhs := randomOperand(r, c.in, red*cols)
			lhsP, rhsP := upload(t, ctx, lhs), upload(t, ctx, rhs)
			run := func(rows int, firstRow int, shift uint64) []uint32 {
				outP := poisoned(t, ctx, uint64(rows)*cols*os)
				src := lhsP + cudaload.DevicePtr(uint64(firstRow)*red*es+shift)
				if c.op == "Forward" {
					require.NoError(t, eng.Forward(ForwardArgs{Tier: c.tier, M: rows, K: red, N: cols, X: src, W: rhsP, Y: outP, In: c.in, Out: c.out}))
				} else {
					require.NoError(t, eng.DX(DXArgs{Tier: c.tier, M: rows, N: red, K: cols, DY: src, W: rhsP, DX: outP, In: c.in, Out: c.out}))
				}
				return readBits(t, eng, ctx, outP, c.out, rows*cols)
			}
			all := run(big, 0, 0)
			rowsOf := func(first, n int) []uint32 { return all[first*cols : (first+n)*cols] }
			for _, blk := range []struct{ first, n int }{{0, 1}, {1, 1}, {4095, 1}, {8191, 1}, {100, 7}, {128, 129}, {3000, 1000}} {
				requireSameBits(t, rowsOf(blk.first, blk.n), run(blk.n, blk.first, 0), cols, fmt.Sprintf("rows [%d,+%d) alone", blk.first, blk.n))
			}
			// Chunked: 3001 + 5191 rows in two calls equal one call.
			a := run(3001, 0, 0)
			b := run(big-3001, 3001, 0)
			requireSameBits(t, all, append(a, b...), cols, "two chunks")
			// Unaligned: the same rows read through a pointer one element off
			// 16-byte alignment (from a copy shifted by one element).
			shifted := operand{d: c.in, values: append([]float32{1}, lhs.values[:big*red]...)}
			if c.in.Half() {
				shifted.half = append([]uint16{0x3c00}, lhs.half[:big*red]...)
			}
			sp := upload(t, ctx, shifted)
			outP := poisoned(t, ctx, uint64(64)*cols*os)
			if c.op == "Forward" {
				require.NoError(t, eng.Forward(ForwardArgs{Tier: c.tier, M: 64, K: red, N: cols, X: sp + cudaload.DevicePtr(es), W: rhsP, Y: outP, In: c.in, Out: c.out}))
			} else {
				require.NoError(t, eng.DX(DXArgs{Tier: c.tier, M: 64, N: red, K: cols, DY: sp + cudaload.DevicePtr(es), W: rhsP, DX: outP, In: c.in, Out: c.out}))
			}
			requireSameBits(t, rowsOf(0, 64), readBits(t, eng, ctx, outP, c.out, 64*cols), cols, "unaligned rows")
		})
	}
}

func TestRunToRunIdentical(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	const M, K, N = 1024, 1536, 1024
	for _, d := range []DType{F32, BF16} {
		tier := TierF32
		if d.Half() {
			tier = TierTyped
		}
		x, w := upload(t, ctx, randomOperand(r, d, M*K)), upload(t, ctx, randomOperand(r, d, K*N))
		var first []uint32
		for run := 0; run < 3; run++ {
			y := poisoned(t, ctx, uint64(M*N*d.Size()))
			require.NoError(t, eng.Forward(ForwardArgs{Tier: tier, M: M, K: K, N: N, X: x, W: w, Y: y, In: d, Out: d}))
			got := readBits(t, eng, ctx, y, d, M*N)
			if first == nil {
				first = got
				continue
			}
			requireSameBits(t, first, got, N, fmt.Sprintf("%v run %d", d, run))
		}
	}
}

func TestNaNAndInfPropagateAsReference(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	const M, K, N = 40, 600, 70
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), math.MaxFloat32}
	for _, c := range ieeeCombos {
		x, w := randomOperand(r, c.in, M*K), randomOperand(r, c.in, K*N)
		for i := 0; i < 60; i++ {
			x.values[r.IntN(M*K)] = specials[r.IntN(len(specials))]
			w.values[r.IntN(K*N)] = specials[r.IntN(len(specials))]
		}
		x, w = fromValues(c.in, x.values), fromValues(c.in, w.values)
		y := poisoned(t, ctx, uint64(M*N*c.out.Size()))
		require.NoError(t, eng.Forward(ForwardArgs{Tier: c.tier, M: M, K: K, N: N, X: upload(t, ctx, x), W: upload(t, ctx, w), Y: y, In: c.in, Out: c.out}))
		want := make([]float32, M*N)
		require.NoError(t, refIEEE.Forward(ref.Values(want), ref.Values(x.values), ref.Values(w.values), nil, M, K, N))
		requireSameBits(t, refBits(c.out, want), readBits(t, eng, ctx, y, c.out, M*N), N, fmt.Sprintf("%v %v-%v", c.tier, c.in, c.out))
	}
}

// TestAccuracyAgainstFloat64Oracle bounds ‖y − y64‖/‖y64‖ per output type:
// the f32 plan lands near 3e-7 at K = 4096 (bound 1e-6); a bf16 or f16
// store adds at most half an ulp of the narrow type (2^-9, 2^-12).
func TestAccuracyAgainstFloat64Oracle(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	const M, K, N = 64, 4096, 96
	bound := map[DType]float64{F32: 1e-6, BF16: 4e-3, F16: 5e-4}
	// Inputs are N(0,1): with K = 4096 the outputs stay near 64 in size,
	// far inside f16's range.
	uniform := func(n int) []float32 { // N(0,1)-like scale: no f16 overflow at K = 4096
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	for _, c := range ieeeCombos {
		x, w := fromValues(c.in, uniform(M*K)), fromValues(c.in, uniform(K*N))
		y := poisoned(t, ctx, uint64(M*N*c.out.Size()))
		require.NoError(t, eng.Forward(ForwardArgs{Tier: c.tier, M: M, K: K, N: N, X: upload(t, ctx, x), W: upload(t, ctx, w), Y: y, In: c.in, Out: c.out}))
		got := readBits(t, eng, ctx, y, c.out, M*N)
		gotF := make([]float32, len(got))
		for i, b := range got {
			if c.out.Half() {
				gotF[i] = c.out.ToF32(uint16(b))
			} else {
				gotF[i] = math.Float32frombits(b)
			}
		}
		want := make([]float64, M*N)
		require.NoError(t, ref.ForwardF64(want, x.values, w.values, nil, M, K, N))
		rel := ref.RelError(gotF, want)
		t.Logf("%v %v->%v: relative error %.3g (bound %g)", c.tier, c.in, c.out, rel, bound[c.out])
		require.LessOrEqual(t, rel, bound[c.out])
	}
}

func TestEngineRejectsBadCallsWithoutLaunching(t *testing.T) {
	eng, _ := gpuEngine(t)
	err := eng.Forward(ForwardArgs{Tier: TierF32, M: 0, K: 1, N: 1, X: 0x1000, W: 0x2000, Y: 0x3000, In: F32, Out: F32})
	require.ErrorIs(t, err, ErrDimension)
	err = eng.DW(DWArgs{Tier: TierTensorCore, M: 1, K: 1, N: 1, X: 0x1000, DY: 0x2000, DW: 0x3000, In: F32})
	require.ErrorIs(t, err, ErrDType)
	require.NoError(t, eng.Synchronize(), "no launch happened, so the stream is clean")
}
