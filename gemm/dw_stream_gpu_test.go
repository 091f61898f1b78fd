package gemm

import (
	"fmt"
	"math"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// The stream kernels (gemm_dw_stream) against the CPU reference: beyond the
// contract suite's sweep (strategyCases), the shapes around their own
// edges — M across stage (16) and slab (256) boundaries, K and N across
// block edges, and every operand one element off its alignment.

// streamTiles is every stream block height, forced in turn.
var streamTiles = []int64{streamTall, streamShort}

// streamRefDW is the reference's dW += Xᵀ·dY, as bits.
func streamRefDW(t *testing.T, x, dy, dw0 operand, M, K, N int) []uint32 {
	t.Helper()
	want := append([]float32(nil), dw0.values...)
	require.NoError(t, refIEEE.DW(want, ref.Values(x.values), ref.Values(dy.values), M, K, N))
	return refBits(F32, want)
}

// streamShiftedDW runs dW += Xᵀ·dY forced through the stream kernel with
// sr-row blocks, each operand placed shift elements past a
// 256-byte aligned start (shift 1 makes every pointer unaligned and dW's
// rows take the element-wise path), and returns the GPU's bits.
func streamShiftedDW(t *testing.T, eng *Engine, ctx *cudaload.Context, in DType, sr int64, x, dy, dw0 operand, M, K, N, shift int) []uint32 {
	t.Helper()
	tier := TierF32
	if in.Half() {
		tier = TierTyped
	}
	place := func(o operand) cudaload.DevicePtr {
		pad := make([]float32, shift)
		for i := range pad {
			pad[i] = 1
		}
		return upload(t, ctx, fromValues(o.d, append(pad, o.values...))) + cudaload.DevicePtr(shift*o.d.Size())
	}
	dwP := place(dw0)
	require.NoError(t, forced(eng, filter{strategy: StrategyStream, streamRows: sr}).DW(DWArgs{Tier: tier, M: M, K: K, N: N, X: place(x), DY: place(dy), DW: dwP, In: in}))
	return readBits(t, eng, ctx, dwP, F32, K*N)
}

func TestDWStreamMatchesReferenceBitForBit(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	ms := []int{1, 3, 16, 17, 31, 33, 100, 256, 257, 300, 513}
	kn := [][2]int{{1, 1}, {7, 1000}, {63, 129}, {129, 63}, {1000, 7}, {1, 1000}, {1000, 1}, {130, 260}}
	for _, in := range []DType{F32, BF16, F16} {
		for i, M := range ms {
			for j, s := range kn {
				K, N := s[0], s[1]
				shift := (i + j) % 2
				name := fmt.Sprintf("%v/%dx%dx%d/shift%d", in, M, K, N, shift)
				t.Run(name, func(t *testing.T) {
					x, dy, dw0 := randomOperand(r, in, M*K), randomOperand(r, in, M*N), randomOperand(r, F32, K*N)
					want := streamRefDW(t, x, dy, dw0, M, K, N)
					for _, sr := range streamTiles {
						got := streamShiftedDW(t, eng, ctx, in, sr, x, dy, dw0, M, K, N, shift)
						requireSameBits(t, want, got, N, fmt.Sprintf("%s/rows%d", name, sr))
					}
				})
			}
		}
	}
}

// TestDWStreamSpecialValues: NaN, infinities, signed zeros and products
// that underflow to a signed zero, in the operands and in the master, as
// the reference gives them. A chain of products that all round to -0
// stays -0 and folds onto a -0 master as -0: an fma issued past M on a
// zero pad would make it +0.
func TestDWStreamSpecialValues(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	negZero := float32(math.Copysign(0, -1))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, negZero, 1e-30, -1e-30, math.MaxFloat32}
	for _, in := range []DType{F32, BF16, F16} {
		for _, sr := range streamTiles {
			for _, M := range []int{5, 16, 300} {
				const K, N = 70, 133
				name := fmt.Sprintf("%v/rows%d/M%d", in, sr, M)
				t.Run("scattered/"+name, func(t *testing.T) {
					x, dy, dw0 := randomOperand(r, in, M*K), randomOperand(r, in, M*N), randomOperand(r, F32, K*N)
					for i := 0; i < M*K/8+1; i++ {
						x.values[r.IntN(M*K)] = specials[r.IntN(len(specials))]
					}
					for i := 0; i < M*N/8+1; i++ {
						dy.values[r.IntN(M*N)] = specials[r.IntN(len(specials))]
					}
					for i := 0; i < K*N/8; i++ {
						dw0.values[r.IntN(K*N)] = specials[r.IntN(len(specials))]
					}
					x, dy = fromValues(in, x.values), fromValues(in, dy.values)
					requireSameBits(t, streamRefDW(t, x, dy, dw0, M, K, N), streamShiftedDW(t, eng, ctx, in, sr, x, dy, dw0, M, K, N, 0), N, name)
				})
				t.Run("negative-zero-chains/"+name, func(t *testing.T) {
					// Every product is -1e-30·1e-30, whose fma from ±0
					// rounds to -0 (f16 holds neither factor: they become
					// zeros, and the chains +0).
					fill := func(d DType, n int, v float32) operand {
						s := make([]float32, n)
						for i := range s {
							s[i] = v
						}
						return fromValues(d, s)
					}
					x, dy := fill(in, M*K, -1e-30), fill(in, M*N, 1e-30)
					dw0 := fill(F32, K*N, negZero)
					want, got := streamRefDW(t, x, dy, dw0, M, K, N), streamShiftedDW(t, eng, ctx, in, sr, x, dy, dw0, M, K, N, 0)
					if in != F16 {
						require.Equal(t, math.Float32bits(negZero), want[0], "the reference keeps -0")
					}
					requireSameBits(t, want, got, N, name)
				})
			}
		}
	}
}

// TestDWStreamMicroBatches: dW over 1024 (and 600) rows streamed in one
// call equals the same rows streamed in micro-batches split at multiples
// of 256, equals one tiled call, equals the reference.
func TestDWStreamMicroBatches(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	const K, N = 70, 300
	for _, c := range []struct {
		in    DType
		M     int
		split []int
	}{{F32, 1024, []int{256, 768}}, {BF16, 1024, []int{512, 256, 256}}, {F16, 600, []int{256, 344}}} {
		name := fmt.Sprintf("%v/M%d/%v", c.in, c.M, c.split)
		t.Run(name, func(t *testing.T) {
			tier := TierF32
			if c.in.Half() {
				tier = TierTyped
			}
			x, dy, dw0 := randomOperand(r, c.in, c.M*K), randomOperand(r, c.in, c.M*N), randomOperand(r, F32, K*N)
			xP, dyP := upload(t, ctx, x), upload(t, ctx, dy)
			es := cudaload.DevicePtr(c.in.Size())
			call := func(f filter, dwP cudaload.DevicePtr, first, rows int) {
				require.NoError(t, forced(eng, f).DW(DWArgs{Tier: tier, M: rows, K: K, N: N,
					X: xP + cudaload.DevicePtr(first*K)*es, DY: dyP + cudaload.DevicePtr(first*N)*es, DW: dwP, In: c.in}))
			}
			one, parts, tiled := upload(t, ctx, dw0), upload(t, ctx, dw0), upload(t, ctx, dw0)
			call(filter{strategy: StrategyStream}, one, 0, c.M)
			first := 0
			for _, n := range c.split {
				call(filter{strategy: StrategyStream}, parts, first, n)
				first += n
			}
			require.Equal(t, c.M, first)
			call(filter{strategy: StrategyTiled}, tiled, 0, c.M)
			want := append([]float32(nil), dw0.values...)
			require.NoError(t, refIEEE.DW(want, ref.Values(x.values), ref.Values(dy.values), c.M, K, N))
			wb := refBits(F32, want)
			requireSameBits(t, wb, readBits(t, eng, ctx, one, F32, K*N), N, "one stream call")
			requireSameBits(t, wb, readBits(t, eng, ctx, parts, F32, K*N), N, "stream micro-batches")
			requireSameBits(t, wb, readBits(t, eng, ctx, tiled, F32, K*N), N, "one tiled call")
		})
	}
}

// TestDWStreamHeadlineShapes: the bench's dW shapes the dispatcher streams
// give the tiled kernel's bits (the reference's where the CPU affords it).
func TestDWStreamHeadlineShapes(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	for _, c := range []struct {
		M, K, N  int
		in       DType
		checkRef bool
	}{
		{1, 4096, 4096, F32, true}, {1, 4096, 4096, BF16, true}, {16, 4096, 4096, F32, false},
		{16, 4096, 4096, BF16, false}, {64, 4096, 11008, BF16, false}, {96, 4096, 4096, F32, false},
	} {
		name := fmt.Sprintf("%v/%dx%dx%d", c.in, c.M, c.K, c.N)
		t.Run(name, func(t *testing.T) {
			tier := TierF32
			if c.in.Half() {
				tier = TierTyped
			}
			x, dy, dw0 := randomOperand(r, c.in, c.M*c.K), randomOperand(r, c.in, c.M*c.N), randomOperand(r, F32, c.K*c.N)
			xP, dyP := upload(t, ctx, x), upload(t, ctx, dy)
			a := DWArgs{Tier: tier, M: c.M, K: c.K, N: c.N, X: xP, DY: dyP, In: c.in}
			s, err := eng.Strategy(a)
			require.NoError(t, err)
			if eng.sms >= 100 {
				require.Equal(t, StrategyStream, s)
			}
			run := func(f filter) []uint32 {
				eng := forced(eng, f)
				a.DW = upload(t, ctx, dw0)
				require.NoError(t, eng.DW(a))
				return readBits(t, eng, ctx, a.DW, F32, c.K*c.N)
			}
			auto := run(filter{})
			requireSameBits(t, run(filter{strategy: StrategyTiled}), auto, c.N, name+": tiled vs auto")
			if c.checkRef {
				want := append([]float32(nil), dw0.values...)
				require.NoError(t, refIEEE.DW(want, ref.Values(x.values), ref.Values(dy.values), c.M, c.K, c.N))
				requireSameBits(t, refBits(F32, want), auto, c.N, name+": reference")
			}
		})
	}
}

// TestDWStreamGraphsAndAllocations: a streamed dW call (either block
// height) allocates no Go memory, and captured in a CUDA graph and
// replayed three times (dW restored each time) gives a direct call's bits.
func TestDWStreamGraphsAndAllocations(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	for _, c := range []struct {
		M, K, N int
		in      DType
	}{{16, 300, 1000, F32}, {64, 513, 260, BF16}} {
		name := fmt.Sprintf("%v/%dx%dx%d", c.in, c.M, c.K, c.N)
		t.Run(name, func(t *testing.T) {
			tier := TierF32
			if c.in.Half() {
				tier = TierTyped
			}
			dw0 := randomOperand(r, F32, c.K*c.N)
			out := upload(t, ctx, dw0)
			a := DWArgs{Tier: tier, M: c.M, K: c.K, N: c.N, X: upload(t, ctx, randomOperand(r, c.in, c.M*c.K)),
				DY: upload(t, ctx, randomOperand(r, c.in, c.M*c.N)), DW: out, In: c.in}
			s, err := eng.Strategy(a)
			require.NoError(t, err)
			require.Equal(t, StrategyStream, s)
			require.NoError(t, eng.Presize(a))
			run := func() error { return eng.DW(a) }
			reset := func() {
				require.NoError(t, eng.Synchronize())
				require.NoError(t, cudaload.CopyToDevice(ctx, out, dw0.values))
			}
			require.NoError(t, run())
			allocs := testing.AllocsPerRun(20, func() { err = run() })
			require.NoError(t, err)
			require.Zero(t, allocs)
			requireReplaysEqualDirect(t, eng, run, reset, func() []uint32 { return readBits(t, eng, ctx, out, F32, c.K*c.N) }, c.N, name)
		})
	}
}
