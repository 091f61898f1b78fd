package gemm

import (
	"fmt"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// strategyCase is one way the engine can compute a call.
type strategyCase struct {
	name string
	f    force
}

// strategyCases is every way the engine can compute a call. The contract
// tests run once per case; each must give the reference's bits.
var strategyCases = []strategyCase{
	{"auto", force{}},
	{"tiled", force{strategy: StrategyTiled}},
	{"split-slab", force{strategy: StrategySplitSlab}},
	{"split-slab/1-per-block", force{strategy: StrategySplitSlab, perBlock: 1}},
	{"split-slab/2-per-block", force{strategy: StrategySplitSlab, perBlock: 2}},
	{"rows", force{strategy: StrategyRows}},
}

// runsOp reports whether the case can run op (rows has no dW kernel: dW's
// reduction is the batch itself).
func (sc strategyCase) runsOp(op string) bool {
	return sc.f.strategy != StrategyRows || op != "DW"
}

// setForce makes eng run every call with f and returns the previous force.
func setForce(eng *Engine, f force) force {
	eng.mu.Lock()
	defer eng.mu.Unlock()
	old := eng.force
	eng.force = f
	return old
}

// withForce makes eng run every call with f until the test ends.
func withForce(t *testing.T, eng *Engine, f force) {
	t.Helper()
	old := setForce(eng, f)
	t.Cleanup(func() { setForce(eng, old) })
}

// TestRowsInvariantAcrossStrategies is batch invariance across kernel
// families: rows computed alone or in small blocks — by the rows kernels
// (M ≤ 32), split-slab or the dispatcher's choice — have the bits of the
// same rows inside a batch of 8192 computed by the tiled kernel.
func TestRowsInvariantAcrossStrategies(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	const big, red, cols = 8192, 1100, 300 // five slabs, the last one short
	for _, c := range []struct {
		op      string
		tier    Tier
		in, out DType
		bias    bool
	}{
		{"Forward", TierF32, F32, F32, true}, {"Forward", TierTyped, BF16, BF16, false}, {"Forward", TierTyped, F16, F32, true},
		{"DX", TierF32, F32, F32, false}, {"DX", TierTyped, BF16, F32, false},
	} {
		t.Run(fmt.Sprintf("%s/%v-%v", c.op, c.in, c.out), func(t *testing.T) {
			es, os := uint64(c.in.Size()), uint64(c.out.Size())
			lhsP := upload(t, ctx, randomOperand(r, c.in, big*red))
			rhsP := upload(t, ctx, randomOperand(r, c.in, red*cols))
			var biasP cudaload.DevicePtr
			if c.bias {
				biasP = upload(t, ctx, randomOperand(r, F32, cols))
			}
			run := func(f force, first, rows int) []uint32 {
				defer setForce(eng, setForce(eng, f))
				outP := poisoned(t, ctx, uint64(rows)*cols*os)
				src := lhsP + cudaload.DevicePtr(uint64(first)*red*es)
				if c.op == "Forward" {
					require.NoError(t, eng.Forward(ForwardArgs{Tier: c.tier, M: rows, K: red, N: cols, X: src, W: rhsP, Bias: biasP, Y: outP, In: c.in, Out: c.out}))
				} else {
					require.NoError(t, eng.DX(DXArgs{Tier: c.tier, M: rows, N: red, K: cols, DY: src, W: rhsP, DX: outP, In: c.in, Out: c.out}))
				}
				return readBits(t, eng, ctx, outP, c.out, rows*cols)
			}
			all := run(force{strategy: StrategyTiled}, 0, big)
			for _, sc := range strategyCases {
				for _, blk := range []struct{ first, n int }{{0, 1}, {1, 1}, {4095, 1}, {8191, 1}, {100, 3}, {17, 16}, {1000, 33}, {128, 129}, {3000, 1000}, {0, big}} {
					requireSameBits(t, all[blk.first*cols:(blk.first+blk.n)*cols], run(sc.f, blk.first, blk.n), cols,
						fmt.Sprintf("%s: rows [%d,+%d) alone vs inside %d tiled", sc.name, blk.first, blk.n, big))
				}
			}
		})
	}
}

// TestDWMicroBatchesAcrossStrategies: dW over 1024 rows in one tiled call
// equals micro-batches split at a multiple of 256 rows run by split-slab.
func TestDWMicroBatchesAcrossStrategies(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	const M, K, N = 1024, 70, 300
	for _, in := range []DType{F32, BF16} {
		tier := TierF32
		if in.Half() {
			tier = TierTyped
		}
		x, dy := randomOperand(r, in, M*K), randomOperand(r, in, M*N)
		xP, dyP := upload(t, ctx, x), upload(t, ctx, dy)
		dw0 := randomOperand(r, F32, K*N)
		one := upload(t, ctx, dw0)
		old := setForce(eng, force{strategy: StrategyTiled})
		require.NoError(t, eng.DW(DWArgs{Tier: tier, M: M, K: K, N: N, X: xP, DY: dyP, DW: one, In: in}))
		setForce(eng, force{strategy: StrategySplitSlab, perBlock: 1})
		two := upload(t, ctx, dw0)
		es := cudaload.DevicePtr(in.Size())
		require.NoError(t, eng.DW(DWArgs{Tier: tier, M: 256, K: K, N: N, X: xP, DY: dyP, DW: two, In: in}))
		require.NoError(t, eng.DW(DWArgs{Tier: tier, M: M - 256, K: K, N: N, X: xP + 256*K*es, DY: dyP + 256*N*es, DW: two, In: in}))
		setForce(eng, old)
		want := append([]float32(nil), dw0.values...)
		require.NoError(t, ref.DW(want, x.values, dy.values, M, K, N))
		requireSameBits(t, refBits(F32, want), readBits(t, eng, ctx, one, F32, K*N), N, fmt.Sprintf("%v one tiled call", in))
		requireSameBits(t, refBits(F32, want), readBits(t, eng, ctx, two, F32, K*N), N, fmt.Sprintf("%v two split-slab calls", in))
	}
}

// TestHeadlineShapesSameBitsAcrossStrategies runs the bench's problem
// shapes — the ones the new strategies exist for — by the dispatcher's
// choice and by the tiled kernel, and requires identical bits (and the
// reference's, where the CPU can afford it).
func TestHeadlineShapesSameBitsAcrossStrategies(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	for _, c := range []struct {
		op        string
		a, red, b int // (M, K, N) for Forward, (M, N, K) for DX
		want      Strategy
		in        DType
		checkRef  bool
	}{
		{"Forward", 1, 4096, 4096, StrategyRows, F32, true},
		{"Forward", 1, 4096, 4096, StrategyRows, BF16, true},
		{"Forward", 16, 4096, 4096, StrategyRows, F32, false},
		{"Forward", 16, 4096, 4096, StrategyRows, BF16, false},
		{"DX", 8, 11008, 4096, StrategyRows, F32, false},
		{"DX", 128, 11008, 4096, StrategySplitSlab, F32, false},
		{"DX", 128, 11008, 4096, StrategySplitSlab, BF16, false},
	} {
		name := fmt.Sprintf("%s/%v/%dx%dx%d", c.op, c.in, c.a, c.red, c.b)
		t.Run(name, func(t *testing.T) {
			tier := TierF32
			if c.in.Half() {
				tier = TierTyped
			}
			lhs, rhs := randomOperand(r, c.in, c.a*c.red), randomOperand(r, c.in, c.red*c.b)
			lhsP, rhsP := upload(t, ctx, lhs), upload(t, ctx, rhs)
			n := c.a * c.b
			var call Call
			run := func(f force) []uint32 {
				defer setForce(eng, setForce(eng, f))
				out := poisoned(t, ctx, uint64(n*c.in.Size()))
				if c.op == "Forward" {
					a := ForwardArgs{Tier: tier, M: c.a, K: c.red, N: c.b, X: lhsP, W: rhsP, Y: out, In: c.in, Out: c.in}
					call = a
					require.NoError(t, eng.Forward(a))
				} else {
					a := DXArgs{Tier: tier, M: c.a, N: c.red, K: c.b, DY: lhsP, W: rhsP, DX: out, In: c.in, Out: c.in}
					call = a
					require.NoError(t, eng.DX(a))
				}
				return readBits(t, eng, ctx, out, c.in, n)
			}
			auto := run(force{})
			got, err := eng.Strategy(call)
			require.NoError(t, err)
			if eng.sms >= 100 { // the dispatch rule's expectations are for big GPUs
				require.Equal(t, c.want, got)
			}
			requireSameBits(t, run(force{strategy: StrategyTiled}), auto, c.b, name+": tiled vs "+got.String())
			if c.checkRef {
				want := make([]float32, n)
				if c.op == "Forward" {
					require.NoError(t, ref.Forward(want, lhs.values, rhs.values, nil, c.a, c.red, c.b))
				} else {
					require.NoError(t, ref.DX(want, lhs.values, rhs.values, c.a, c.red, c.b))
				}
				requireSameBits(t, refBits(c.in, want), auto, c.b, name+": reference")
			}
		})
	}
}

// TestPresizedCallsAllocateNothing: after Presize, calls of the presized
// shapes (and smaller ones) run on the same workspace, and the queries
// agree with what the calls use.
func TestPresizedCallsAllocateNothing(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	const M, K, N = 16, 4096, 2048
	shape := ForwardArgs{Tier: TierF32, M: M, K: K, N: N, In: F32, Out: F32}
	need, err := eng.WorkspaceBytes(shape)
	require.NoError(t, err)
	require.Equal(t, uint64(16*M*N*4), need, "16 slabs of f32 partials")
	s, err := eng.Strategy(shape)
	require.NoError(t, err)
	require.Equal(t, StrategyRows, s)
	require.NoError(t, eng.Presize(shape, DXArgs{Tier: TierF32, M: 4, N: 1000, K: 3000, In: F32, Out: F32}))
	eng.mu.Lock()
	ptr, bytes := eng.ws.ptr, eng.ws.bytes
	eng.mu.Unlock()
	require.GreaterOrEqual(t, bytes, need)

	x, w := upload(t, ctx, randomOperand(r, F32, M*K)), upload(t, ctx, randomOperand(r, F32, K*N))
	y := poisoned(t, ctx, M*N*4)
	for _, m := range []int{M, 1, 7} {
		a := shape
		a.M, a.X, a.W, a.Y = m, x, w, y
		require.NoError(t, eng.Forward(a))
	}
	require.NoError(t, eng.Synchronize())
	eng.mu.Lock()
	defer eng.mu.Unlock()
	require.Equal(t, ptr, eng.ws.ptr, "no new workspace")
	require.Equal(t, bytes, eng.ws.bytes)
}

func TestPresizeRejectsInvalidShapes(t *testing.T) {
	eng, _ := gpuEngine(t)
	require.ErrorIs(t, eng.Presize(ForwardArgs{Tier: TierF32, M: 0, K: 1, N: 1, In: F32, Out: F32}), ErrDimension)
	require.ErrorIs(t, eng.Presize(nil), ErrNilPointer)
	_, err := eng.WorkspaceBytes(DWArgs{Tier: TierTensorCore, M: 1, K: 1, N: 1, In: BF16})
	require.ErrorIs(t, err, ErrTierUnavailable)
}
