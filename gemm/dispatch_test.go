package gemm

import (
	"errors"
	"fmt"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/kernels"
	"github.com/stretchr/testify/require"
)

// h200SMs is the H200's multiprocessor count, the GPU the numbers in the
// dispatch rule were measured on.
const h200SMs = 132

// tileProblem is a dispatcher input: (layout, rows, cols, red).
type tileProblem struct {
	name            string
	l               layout
	rows, cols, red int64
}

// fwd, dx and dw map the triad's shapes to tile problems the way validate.go
// does: Forward (M, K, N) → (M, N, K); DX (M, N, K) → (M, K, N); DW (M, K, N)
// → (K, N, M).
func fwd(M, K, N int64) tileProblem {
	return tileProblem{fmt.Sprintf("forward %dx%dx%d", M, K, N), layoutNN, M, N, K}
}
func dx(M, N, K int64) tileProblem {
	return tileProblem{fmt.Sprintf("dx %dx%dx%d", M, N, K), layoutNT, M, K, N}
}
func dw(M, K, N int64) tileProblem {
	return tileProblem{fmt.Sprintf("dw %dx%dx%d", M, K, N), layoutTN, K, N, M}
}

// choose is the IEEE planner's decision for the tile problem C[rows, cols]
// = A(rows, red) · B(red, cols) in layout l (f32) on a GPU of sms SMs
// without the sm_90a families or a lone-block tail: the registry's loop
// (Engine.choose) on a bare device, which these tests pin.
func choose(l layout, rows, cols, red int64, sms int, f *filter) (plan, error) {
	p := problem{op: "test", tier: TierF32, layout: l, in: F32, out: F32, rows: rows, cols: cols, red: red}
	return (&device{sms: sms}).choose(p, f)
}

func TestDispatchPicksTheStrategyForEachRegime(t *testing.T) {
	cases := []struct {
		p    tileProblem
		want Strategy
		mr   int
	}{
		// Few rows: bandwidth-bound, W read once.
		{fwd(1, 4096, 4096), StrategyRows, 4},
		{fwd(4, 4096, 4096), StrategyRows, 4},
		{fwd(5, 4096, 4096), StrategyRows, 16},
		{fwd(16, 4096, 4096), StrategyRows, 16},
		{fwd(32, 4096, 11008), StrategyRows, 32},
		{dx(1, 11008, 4096), StrategyRows, 4},
		{dx(16, 4096, 4096), StrategyRows, 16},
		{fwd(1, 100, 7), StrategyRows, 4}, // one slab: the fold is a rounding copy
		// The reduction of dW is M, so it never takes the rows kernels; a
		// short one streams the master.
		{dw(1, 4096, 4096), StrategyStream, 0},
		{dw(16, 4096, 4096), StrategyStream, 0},
		{dw(streamMaxM, 4096, 11008), StrategyStream, 0},
		// Underfilled tiles, several slabs: split-slab.
		{dx(128, 11008, 4096), StrategySplitSlab, 0},
		{fwd(128, 11008, 4096), StrategySplitSlab, 0},
		{fwd(64, 4096, 4096), StrategySplitSlab, 0},
		{dw(8192, 1024, 1024), StrategySplitSlab, 0},
		{dw(4096, 128, 128), StrategySplitSlab, 0},
		// The GPU is full: tiled.
		{fwd(4096, 4096, 4096), StrategyTiled, 0},
		{dx(4096, 4096, 4096), StrategyTiled, 0},
		{dw(4096, 4096, 4096), StrategyTiled, 0},
		{fwd(2048, 768, 3072), StrategyTiled, 0},
		// One slab: nothing to split.
		{fwd(256, 256, 256), StrategyTiled, 0},
		{dw(200, 64, 64), StrategyTiled, 0},
		{dw(90, 64, 64), StrategyStream, 0}, // short: streamed
		// The workspace would pass 512 MiB (maxWorkspaceBytes).
		{dw(1<<20, 1024, 1024), StrategyTiled, 0},
	}
	for _, c := range cases {
		t.Run(c.p.name, func(t *testing.T) {
			pl, err := choose(c.p.l, c.p.rows, c.p.cols, c.p.red, h200SMs, &filter{})
			require.NoError(t, err)
			require.Equal(t, c.want, pl.strategy, "plan %+v", pl)
			require.Equal(t, c.mr, pl.mr)
		})
	}
}

func TestDispatchSplitsTheUnderfilledDXOfTheBench(t *testing.T) {
	// dX[128,4096] = dY[128,11008]·Wᵀ: 32 tiles for 132 SMs, 43 slabs.
	p := dx(128, 11008, 4096)
	pl, err := choose(p.l, p.rows, p.cols, p.red, h200SMs, &filter{})
	require.NoError(t, err)
	require.Equal(t, StrategySplitSlab, pl.strategy)
	require.EqualValues(t, 43, pl.slabs)
	require.Equal(t, (pl.slabs+pl.perBlock-1)/pl.perBlock, pl.groups)
	blocks := 32 * pl.groups
	require.GreaterOrEqual(t, blocks, int64(h200SMs)*9/10, "the split occupies (nearly) every SM")
	// One slab a block: 1376 blocks in 5.2 waves measured 309.7 µs against
	// 333.9 for G = 6 (258 blocks) and 1114 tiled (H200, f32,
	// TestStrategyThroughput, 2026-11-21).
	require.EqualValues(t, 1, pl.perBlock)
	split := smCost(blocks, pl.perBlock, h200SMs)
	require.LessOrEqual(t, 3*split, smCost(32, 43, h200SMs), "a third of the tiled kernel's time, or less")
	require.EqualValues(t, 43*128*4096*4, pl.ws)
}

// The split is taken only when the model says it gains splitMinGainPct, so
// it never models slower than the tiled kernel, and the G it picks is the
// best of every G.
func TestSplitSlabsNeverModelsSlowerThanTiled(t *testing.T) {
	for _, sms := range []int64{1, 46, 108, 132} {
		for _, tiles := range []int64{1, 2, 7, 31, 32, 100, 2*sms - 1, 2 * sms, 3*sms + 5, 1000} {
			for _, S := range []int64{2, 3, 16, 43, 257, 4096} {
				for _, acc := range []bool{false, true} {
					out := tiles * 128 * 128
					gr := grids{rows: tiles * tileRows, cols: squareWidth, slabs: S, out: out, sms: sms, acc: acc, splitOK: true}
					g, _ := gr.split(squareWidth)
					s, _, _ := gr.pickFor(squareWidth, splitMinGainPct)
					ok := s == StrategySplitSlab
					require.Positive(t, g)
					require.LessOrEqual(t, g, S)
					cost := func(g int64) int64 { return smCost(tiles*ceilDiv(S, g), g, sms) + foldCost(S, out, sms, acc) }
					for h := int64(1); h <= S; h++ {
						require.LessOrEqual(t, cost(g), cost(h), "sms %d tiles %d S %d: G %d models slower than %d", sms, tiles, S, g, h)
					}
					if ok {
						require.LessOrEqual(t, cost(g)*100, smCost(tiles, S, sms)*(100-splitMinGainPct), "sms %d tiles %d S %d G %d", sms, tiles, S, g)
					}
				}
			}
		}
	}
}

func TestWorkspaceIsSlabPartialsOfTheOutputShape(t *testing.T) {
	for _, p := range []tileProblem{fwd(1, 4096, 4096), fwd(16, 4097, 300), dx(128, 11008, 4096), dw(8192, 1024, 1024), fwd(4096, 4096, 4096)} {
		pl, err := choose(p.l, p.rows, p.cols, p.red, h200SMs, &filter{})
		require.NoError(t, err)
		if pl.strategy == StrategyTiled {
			require.Zero(t, pl.ws, p.name)
			continue
		}
		S := (p.red + 255) / 256
		require.Equal(t, uint64(S*p.rows*p.cols*4), pl.ws, p.name)
		require.LessOrEqual(t, pl.ws, uint64(maxWorkspaceBytes), p.name)
	}
	_, ok := workspaceBytes(1<<40, 1<<20, 1<<20)
	require.False(t, ok, "an overflowing workspace is reported, not wrapped")
}

// Every strategy's grid must fit the launch limits; the dispatcher falls
// back to tiled where a grid would not.
func TestDispatchKeepsGridsWithinLaunchLimits(t *testing.T) {
	// S = 65536 slabs is one too many for grid.y of the rows kernel.
	p := fwd(1, 65536*256, 8)
	pl, err := choose(p.l, p.rows, p.cols, p.red, h200SMs, &filter{})
	require.NoError(t, err)
	require.NotEqual(t, StrategyRows, pl.strategy)
	_, err = choose(p.l, p.rows, p.cols, p.red, h200SMs, &filter{strategy: StrategyRows})
	require.ErrorIs(t, err, errStrategy)

	for _, p := range []tileProblem{fwd(1, 4096, 4096), dx(128, 11008, 4096), dw(1<<16, 64, 64), fwd(32, 65535*256, 1)} {
		pl, err := choose(p.l, p.rows, p.cols, p.red, h200SMs, &filter{})
		require.NoError(t, err)
		switch pl.strategy {
		case StrategyRows:
			require.LessOrEqual(t, pl.slabs, int64(maxGridYZ), p.name)
			require.LessOrEqual(t, (p.rows+int64(pl.mr)-1)/int64(pl.mr), int64(maxGridYZ), p.name)
		case StrategySplitSlab:
			require.LessOrEqual(t, pl.groups, int64(maxGridYZ), p.name)
		}
	}
}

func TestForcedStrategiesAreHonouredOrRefused(t *testing.T) {
	p := fwd(1000, 4097, 129)
	pl, err := choose(p.l, p.rows, p.cols, p.red, h200SMs, &filter{strategy: StrategyRows})
	require.NoError(t, err)
	require.Equal(t, StrategyRows, pl.strategy)
	require.Equal(t, 32, pl.mr, "many rows run in row groups of 32")

	pl, err = choose(p.l, p.rows, p.cols, p.red, h200SMs, &filter{strategy: StrategySplitSlab, perBlock: 2})
	require.NoError(t, err)
	require.Equal(t, StrategySplitSlab, pl.strategy)
	require.EqualValues(t, 2, pl.perBlock)
	require.EqualValues(t, 9, pl.groups) // 17 slabs in blocks of 2

	pl, err = choose(p.l, 3, 5, 100, h200SMs, &filter{strategy: StrategySplitSlab, perBlock: 4})
	require.NoError(t, err)
	require.EqualValues(t, 1, pl.perBlock, "never more slabs per block than slabs")

	pl, err = choose(p.l, 3, 5, 100, h200SMs, &filter{strategy: StrategyTiled})
	require.NoError(t, err)
	require.Equal(t, StrategyTiled, pl.strategy)
	require.Zero(t, pl.ws)

	q := dw(8, 16, 16)
	_, err = choose(q.l, q.rows, q.cols, q.red, h200SMs, &filter{strategy: StrategyRows})
	require.ErrorIs(t, err, errStrategy, "dW has no rows kernel")
	_, err = choose(q.l, q.rows, q.cols, q.red, h200SMs, &filter{strategy: 9})
	require.ErrorIs(t, err, errStrategy)
}

// rowsSharedBytes must equal gemm_rows.cu's Geo<DT, MR, CN>::SMEM; the
// numbers are worked out by hand from the kernel's layout (the kernel also
// traps if launched with less).
func TestRowsSharedBytesMatchTheKernelGeometry(t *testing.T) {
	for _, c := range []struct {
		in     DType
		mr, cn int
		want   uint32
	}{
		{F32, 4, 1, 4*256*4 + 2*32*129*4},
		{F32, 16, 2, 16*256*4 + 2*16*257*4},
		{F32, 32, 2, 32*256*4 + 2*16*257*4},
		{BF16, 4, 1, 4*256*4 + 2*64*130*2},
		{F16, 16, 2, 16*256*4 + 2*16*258*2},
		{BF16, 32, 2, 32*256*4 + 2*16*258*2},
	} {
		require.Equal(t, c.want, rowsSharedBytes(c.in, c.mr, c.cn), "%v m%d c%d", c.in, c.mr, c.cn)
		require.LessOrEqual(t, c.want, uint32(99<<10), "fits two blocks on an sm_86 SM")
	}
	for k := range rowsIDs {
		require.Equal(t, uint32(0), rowsSharedBytes(k.in, k.mr, rowsCN(k.mr))%16, k.name())
	}
}

// rowsFusedSharedBytes must equal gemm_rows.cu's Cfg<DT, MR, NT>::SMEM,
// worked out by hand: x rows in f32 (260 a row), then STAGES chunks of KC steps by JT
// columns (nt: JT rows of KC steps + 16 bytes), then at MR = 4 the ring's
// eight mbarriers.
func TestRowsFusedGeometryMatchesTheKernel(t *testing.T) {
	for _, c := range []struct {
		in   DType
		mr   int
		nt   bool
		want uint32
	}{
		{F32, 4, false, 4*260*4 + 4*16*256*4 + 64},
		{BF16, 4, false, 4*260*4 + 4*32*256*2 + 64},
		{F32, 4, true, 4*260*4 + 4*256*20*4 + 64},
		{F16, 4, true, 4*260*4 + 4*256*40*2 + 64},
		{F32, 16, false, 16*260*4 + 4*16*256*4},
		{F32, 16, true, 16*260*4 + 4*256*20*4},
		{BF16, 16, true, 16*260*4 + 4*256*40*2},
		{BF16, 32, false, 32*260*4 + 4*32*128*2},
		{F32, 32, true, 32*260*4 + 4*128*20*4},
	} {
		require.Equal(t, c.want, rowsFusedSharedBytes(c.in, c.mr, c.nt), "%v m%d nt=%v", c.in, c.mr, c.nt)
		require.LessOrEqual(t, c.want, uint32(99<<10), "fits a block on sm_86")
	}
	require.EqualValues(t, 256, rowsFusedCols(4))
	require.EqualValues(t, 256, rowsFusedCols(16))
	require.EqualValues(t, 128, rowsFusedCols(32))
	require.EqualValues(t, 16*4, rowsCounterBytes(1, 4096, 4))
	require.EqualValues(t, 3*2*4, rowsCounterBytes(33, 257, 32))
	pl, err := choose(layoutNN, 16, 4096, 4096, h200SMs, &filter{})
	require.NoError(t, err)
	require.EqualValues(t, 16*4, pl.ctrs)
	pl, err = choose(layoutNN, 64, 4096, 4096, h200SMs, &filter{})
	require.NoError(t, err)
	require.Zero(t, pl.ctrs, "only rows counts arrivals")
}

func TestEveryStrategyHasAKernelForEveryAcceptedCall(t *testing.T) {
	slabs, rows, folds := map[slabsKey]bool{}, map[rowsKey]bool{}, map[foldKey]bool{}
	rowsf := map[rowsFusedKey]bool{}
	for k := range rowsfIDs {
		rowsf[k] = true
	}
	for k := range slabsIDs {
		slabs[k] = true
	}
	for k := range rowsIDs {
		rows[k] = true
	}
	for k := range foldIDs {
		folds[k] = true
	}
	stream := map[streamKey]bool{}
	for k := range streamIDs {
		stream[k] = true
	}
	var calls []Call
	for _, tier := range []Tier{TierF32, TierTyped} {
		for _, in := range []DType{F32, BF16, F16} {
			for _, out := range []DType{F32, BF16, F16} {
				for _, m := range []int{1, 7, 20, 300} {
					calls = append(calls,
						ForwardArgs{Tier: tier, M: m, K: 600, N: 40, In: in, Out: out},
						DXArgs{Tier: tier, M: m, N: 600, K: 40, In: in, Out: out})
				}
			}
			calls = append(calls, DWArgs{Tier: tier, M: 600, K: 40, N: 40, In: in}, DWArgs{Tier: tier, M: 3, K: 5000, N: 40, In: in})
		}
	}
	for _, c := range calls {
		p, err := c.build(false)
		if err != nil {
			continue
		}
		for _, s := range []Strategy{StrategySplitSlab, StrategyRows, StrategyStream} {
			pl, err := choose(p.layout, p.rows, p.cols, p.red, h200SMs, &filter{strategy: s})
			if errors.Is(err, errStrategy) {
				if s == StrategyStream {
					require.NotEqual(t, layoutTN, p.layout, "every dW streams")
				} else {
					require.Equal(t, layoutTN, p.layout, "only dW lacks a rows kernel")
				}
				continue
			}
			require.NoError(t, err)
			if s == StrategyStream {
				require.True(t, stream[streamKey{p.in, pl.sr}], "stream %v %d", p.in, pl.sr)
				continue
			}
			require.True(t, folds[foldKey{p.out, p.layout == layoutTN}], "fold %v", p.out)
			if s == StrategySplitSlab {
				require.True(t, slabs[slabsKey{p.layout, p.in}], "slabs %v %v", p.layout, p.in)
			} else {
				require.True(t, rows[rowsKey{p.layout, p.in, pl.mr}], "rows %v %v m%d", p.layout, p.in, pl.mr)
				require.True(t, rowsf[rowsFusedKey{p.layout, p.in, p.out, pl.mr}], "one-launch rows %v %v→%v m%d", p.layout, p.in, p.out, pl.mr)
			}
		}
	}
}

// The one-launch rows kernels' counters: a buffer of their own, zeroed
// whenever it is (re)allocated, never allocated while capturing, freed at
// release with the partials.
func TestCountersAreZeroedOnAllocationAndNeverDuringCapture(t *testing.T) {
	next := cudaload.DevicePtr(0x1000_0000)
	alloc := func(n uint64) (cudaload.DevicePtr, error) {
		next += 0x1000_0000
		return next, nil
	}
	var zeroed []cudaload.DevicePtr
	zero := func(p cudaload.DevicePtr, n uint64) error {
		require.Equal(t, uint64(workspaceGranule), n, "the whole buffer")
		zeroed = append(zeroed, p)
		return nil
	}
	notCapturing := func() (bool, error) { return false, nil }
	capturing := func() (bool, error) { return true, nil }

	var w workspace
	require.NoError(t, w.ensureCounters("Forward", 0, capturing, alloc, zero), "none needed: no question asked")
	require.NoError(t, w.ensureCounters("Forward", 64, notCapturing, alloc, zero))
	require.Equal(t, []cudaload.DevicePtr{w.ctr}, zeroed)
	require.Zero(t, w.ptr, "the partials' buffer is separate")
	require.NoError(t, w.ensureCounters("Forward", 64, capturing, alloc, zero), "presized: fine while capturing")
	err := w.ensureCounters("DX", workspaceGranule+4, capturing, alloc, zero)
	require.ErrorIs(t, err, ErrWorkspace)
	require.Contains(t, err.Error(), "Presize")
	require.Len(t, zeroed, 1)

	first := w.ctr
	bad := func(cudaload.DevicePtr, uint64) error { return errors.New("memset failed") }
	require.ErrorIs(t, w.ensureCounters("DX", workspaceGranule+4, notCapturing, alloc, bad), ErrWorkspace)
	require.Equal(t, first, w.ctr, "an unzeroed buffer is never used")

	var freed []cudaload.DevicePtr
	require.NoError(t, w.release(func(p cudaload.DevicePtr) error { freed = append(freed, p); return nil }))
	require.Len(t, freed, 2, "the counters and the unzeroed buffer")
	require.Contains(t, freed, first)
}

// The queries and Presize read the shape and types only.
func TestCallsValidateWithoutPointersForPresize(t *testing.T) {
	a := ForwardArgs{Tier: TierTyped, M: 16, K: 4096, N: 4096, In: BF16, Out: BF16}
	_, err := a.problem()
	require.ErrorIs(t, err, ErrNilPointer, "a launch needs its buffers")
	p, err := a.build(false)
	require.NoError(t, err)
	require.Equal(t, int64(16), p.rows)
	a.K = 0
	_, err = a.build(false)
	require.ErrorIs(t, err, ErrDimension, "the shape is still checked")
	_, err = DWArgs{Tier: TierF32, M: 3, K: 5, N: 7, In: BF16}.build(false)
	require.ErrorIs(t, err, ErrDType, "and the types")
}

func TestWorkspaceGrowsOnceAndNeverDuringCapture(t *testing.T) {
	var allocs []uint64
	next := cudaload.DevicePtr(0x1000_0000)
	alloc := func(n uint64) (cudaload.DevicePtr, error) {
		allocs = append(allocs, n)
		next += 0x1000_0000
		return next, nil
	}
	notCapturing := func() (bool, error) { return false, nil }
	capturing := func() (bool, error) { return true, nil }

	var w workspace
	require.NoError(t, w.ensure("Forward", 0, capturing, alloc), "no workspace needed: no question asked")
	require.NoError(t, w.ensure("Forward", 100, notCapturing, alloc))
	require.Equal(t, []uint64{workspaceGranule}, allocs, "rounded up to the granule")
	first := w.ptr
	require.NoError(t, w.ensure("Forward", workspaceGranule, capturing, alloc), "presized: fine while capturing")
	require.Equal(t, first, w.ptr)
	require.Len(t, allocs, 1)

	err := w.ensure("DX", workspaceGranule+1, capturing, alloc)
	require.ErrorIs(t, err, ErrWorkspace)
	require.Contains(t, err.Error(), "gemm.DX: ")
	require.Contains(t, err.Error(), "Presize")
	require.Equal(t, first, w.ptr, "nothing changed")

	require.NoError(t, w.ensure("DX", 3*workspaceGranule-5, notCapturing, alloc))
	require.Equal(t, uint64(3*workspaceGranule), w.bytes)
	require.Equal(t, []cudaload.DevicePtr{first}, w.retired, "the old buffer outlives graphs that captured it")

	failing := func(uint64) (cudaload.DevicePtr, error) { return 0, errors.New("out of memory") }
	require.ErrorIs(t, w.ensure("DW", 1<<40, notCapturing, failing), ErrWorkspace)
	askFails := func() (bool, error) { return false, errors.New("driver says no") }
	require.ErrorContains(t, w.ensure("DW", 1<<40, askFails, alloc), "driver says no")

	var freed []cudaload.DevicePtr
	require.NoError(t, w.release(func(p cudaload.DevicePtr) error { freed = append(freed, p); return nil }))
	require.ElementsMatch(t, []cudaload.DevicePtr{first, first + 0x1000_0000}, freed)
	require.Zero(t, w.bytes)
}

func TestFoldGridCoversAnyCount(t *testing.T) {
	require.Equal(t, uint32(1), foldBlocks(1, h200SMs))
	require.Equal(t, uint32(16), foldBlocks(16*256, h200SMs))
	require.Equal(t, uint32(16*h200SMs), foldBlocks(1<<40, h200SMs))
	require.Equal(t, uint32(16), foldBlocks(1<<40, 0))
}

// The big shapes fill the GPU with square tiles; the narrow tile is only
// scored where the square grid underfills one wave, so they keep 128×128
// whatever the narrow tile's measured cost. So do the underfilled shapes
// where it measured slower.
func TestDispatchKeepsSquareTilesWhereTheyAreFaster(t *testing.T) {
	for _, p := range []tileProblem{
		fwd(4096, 4096, 4096), dx(4096, 4096, 4096), dw(4096, 4096, 4096),
		fwd(8192, 8192, 8192), dx(8192, 8192, 8192), dw(8192, 8192, 8192),
		fwd(4096, 1536, 3072), dx(4096, 3072, 1536), dw(4096, 1536, 3072),
		fwd(2048, 768, 3072),
	} {
		pl, err := choose(p.l, p.rows, p.cols, p.red, h200SMs, &filter{})
		require.NoError(t, err)
		require.EqualValues(t, squareWidth, pl.width, "%s: plan %+v", p.name, pl)
		g := grids{rows: p.rows, cols: p.cols, slabs: pl.slabs, sms: h200SMs}
		require.False(t, g.narrowOK(), p.name)
	}
	// Underfilled grids where the narrow tile measured slower keep the
	// square plans: the split-slab dX and dW of 2048x768x3072 (narrow: 297
	// and 286 µs against 265 and 267), the forward of 512x1024x1024.
	for _, p := range []tileProblem{dx(2048, 3072, 768), dw(2048, 768, 3072), fwd(512, 1024, 1024), dw(1024, 1024, 1024), dx(128, 11008, 4096)} {
		pl, err := choose(p.l, p.rows, p.cols, p.red, h200SMs, &filter{})
		require.NoError(t, err)
		require.Equal(t, StrategySplitSlab, pl.strategy, p.name)
		require.EqualValues(t, squareWidth, pl.width, "%s: plan %+v", p.name, pl)
	}
	// And the square kernels' plans are the ones before the narrow tile.
	for _, c := range []struct {
		p tileProblem
		s Strategy
		g int64
	}{
		{fwd(4096, 4096, 4096), StrategyTiled, 0},
		{fwd(4096, 1536, 3072), StrategyTiled, 0}, {dx(4096, 3072, 1536), StrategyTiled, 0},
	} {
		pl, err := choose(c.p.l, c.p.rows, c.p.cols, c.p.red, h200SMs, &filter{})
		require.NoError(t, err)
		require.Equal(t, c.s, pl.strategy, c.p.name)
		require.Equal(t, c.g, pl.perBlock, c.p.name)
		require.Zero(t, pl.tailRow, c.p.name)
	}
}

// A square tiled grid with a short last round and a long reduction runs
// that round's rows split-slab (grids.splitTail): dW 4096x1536x3072 is 288
// tiles of 16 slabs, 11 whole row tiles in the head (264) and 24 tiles left.
func TestDispatchSplitsTheTailOfLongReductions(t *testing.T) {
	p := dw(4096, 1536, 3072)
	pl, err := choose(p.l, p.rows, p.cols, p.red, h200SMs, &filter{})
	require.NoError(t, err)
	require.Equal(t, StrategyTiled, pl.strategy)
	require.EqualValues(t, 11*tileRows, pl.tailRow)
	require.EqualValues(t, 1, pl.tailG)
	ws, _ := workspaceBytes(p.rows-pl.tailRow, p.cols, p.red)
	require.Equal(t, ws, pl.ws, "the workspace holds the tail's partials only")

	// A short reduction keeps the lone-block tail (2048x768x3072 forward:
	// 3 slabs), and full rounds have no tail.
	for _, q := range []tileProblem{fwd(2048, 768, 3072), fwd(4096, 4096, 4096), fwd(8192, 8192, 8192)} {
		pl, err := choose(q.l, q.rows, q.cols, q.red, h200SMs, &filter{})
		require.NoError(t, err)
		require.Zero(t, pl.tailRow, q.name)
		require.Zero(t, pl.ws, q.name)
	}

	// Forced (tests), on a small grid with a small SM count.
	q := fwd(640, 300, 384) // 5 × 3 tiles
	pl, err = choose(q.l, q.rows, q.cols, q.red, h200SMs, &filter{strategy: StrategyTiled, splitTail: true, tailSMs: 2})
	require.NoError(t, err)
	require.EqualValues(t, 4*tileRows, pl.tailRow, "slots 4: head 12 tiles (4 rows), tail 3")
	require.Positive(t, pl.tailG)
	ws, _ = workspaceBytes(640-4*tileRows, 384, 300)
	require.Equal(t, ws, pl.ws)
}

// Grids of square tiles that underfill the H200 take the narrow tile when
// the model says it pays (bench/NOTES-simt.md, round 5).
func TestDispatchNarrowsUnderfilledGrids(t *testing.T) {
	for _, c := range []struct {
		p     tileProblem
		s     Strategy
		width int64
	}{
		{fwd(2048, 768, 512), StrategySplitSlab, narrowWidth}, // 64 square tiles, 3 slabs
		{dx(2048, 512, 768), StrategySplitSlab, narrowWidth},  // 96 square tiles, 2 slabs
		{dw(2048, 768, 512), StrategySplitSlab, narrowWidth},  // 24 square tiles, 8 slabs
		{fwd(256, 256, 256), StrategyTiled, narrowWidth},      // one slab: nothing to split, still narrower
	} {
		pl, err := choose(c.p.l, c.p.rows, c.p.cols, c.p.red, h200SMs, &filter{})
		require.NoError(t, err)
		require.Equal(t, c.s, pl.strategy, "%s: plan %+v", c.p.name, pl)
		require.Equal(t, c.width, pl.width, "%s: plan %+v", c.p.name, pl)
		require.Equal(t, pl.strategy == StrategySplitSlab, pl.ws > 0, "only split-slab needs a workspace")
	}
}

// The width can be forced (tests); narrow needs grid.y to hold the column
// tiles; rows plans have no width.
func TestForcedTileWidth(t *testing.T) {
	p := fwd(4096, 4096, 4096)
	for _, s := range []Strategy{StrategyTiled, StrategySplitSlab} {
		pl, err := choose(p.l, p.rows, p.cols, p.red, h200SMs, &filter{strategy: s, width: narrowWidth})
		require.NoError(t, err)
		require.Equal(t, s, pl.strategy)
		require.EqualValues(t, narrowWidth, pl.width)
		pl, err = choose(p.l, p.rows, p.cols, p.red, h200SMs, &filter{strategy: s})
		require.NoError(t, err)
		require.EqualValues(t, squareWidth, pl.width, "forced without a width: square")
	}
	_, err := choose(p.l, p.rows, p.cols, p.red, h200SMs, &filter{strategy: StrategyTiled, width: 32})
	require.ErrorIs(t, err, errStrategy)
	_, err = choose(layoutNN, 128, 64*maxGridYZ+1, 256, h200SMs, &filter{strategy: StrategyTiled, width: narrowWidth})
	require.ErrorIs(t, err, errStrategy)
	pl, err := choose(layoutNN, 128, 64*maxGridYZ+1, 256, h200SMs, &filter{})
	require.NoError(t, err)
	require.EqualValues(t, squareWidth, pl.width, "too many narrow column tiles for grid.y")
	pl, err = choose(layoutNN, 1, 4096, 4096, h200SMs, &filter{})
	require.NoError(t, err)
	require.Equal(t, StrategyRows, pl.strategy)
	require.Zero(t, pl.width)
}

func TestStrategyNames(t *testing.T) {
	for s, want := range map[Strategy]string{0: "auto", StrategyTiled: "tiled", StrategySplitSlab: "split-slab", StrategyRows: "rows", StrategyStream: "stream", 9: "Strategy(9)"} {
		require.Equal(t, want, s.String())
	}
}

// The stream strategy takes dW only, with M at most 2^30 and its row blocks
// within grid.y; its block height follows the grid's size unless forced,
// and it needs no workspace.
func TestDispatchStreamsShortDWOnly(t *testing.T) {
	p := dw(16, 4096, 4096)
	pl, err := choose(p.l, p.rows, p.cols, p.red, h200SMs, &filter{})
	require.NoError(t, err)
	require.Equal(t, StrategyStream, pl.strategy)
	require.EqualValues(t, streamShort, pl.sr, "one stage of M: 32-row blocks")
	require.Zero(t, pl.ws)
	require.Zero(t, pl.ctrs)
	require.Zero(t, pl.width)
	q := dw(17, 512, 512)
	pl, err = choose(q.l, q.rows, q.cols, q.red, h200SMs, &filter{})
	require.NoError(t, err)
	require.EqualValues(t, streamTall, pl.sr, "two stages of M: 64-row blocks")
	for _, sr := range []int64{streamTall, streamShort} {
		pl, err = choose(q.l, q.rows, q.cols, q.red, h200SMs, &filter{strategy: StrategyStream, streamRows: sr})
		require.NoError(t, err)
		require.Equal(t, sr, pl.sr)
	}
	big := dw(100000, 64, 64)
	pl, err = choose(big.l, big.rows, big.cols, big.red, h200SMs, &filter{strategy: StrategyStream})
	require.NoError(t, err, "a long reduction streams when forced")
	require.Equal(t, StrategyStream, pl.strategy)
	_, err = choose(p.l, p.rows, p.cols, p.red, h200SMs, &filter{strategy: StrategyStream, streamRows: 48})
	require.ErrorIs(t, err, errStrategy)
	src, err := kernels.Source(streamFamily)
	require.NoError(t, err)
	require.Contains(t, src, fmt.Sprintf("SM_BYTES<8> == %d && dws::SM_BYTES<4> == %d",
		streamKey{F32, streamTall}.sharedBytes(), streamKey{F32, streamShort}.sharedBytes()), "the kernel asserts the shared memory the engine launches with")
	for _, r := range []tileProblem{fwd(1, 4096, 4096), dx(1, 4096, 4096), dw(streamMaxM+1, 4096, 4096), dw(streamMaxM+1, 64, 64)} {
		pl, err = choose(r.l, r.rows, r.cols, r.red, h200SMs, &filter{})
		require.NoError(t, err, r.name)
		require.NotEqual(t, StrategyStream, pl.strategy, r.name)
	}
	for _, r := range []tileProblem{fwd(1, 4096, 4096), dx(1, 4096, 4096), dw(1<<30+1, 4, 4), dw(1, 32*maxGridYZ+1, 4)} {
		_, err = choose(r.l, r.rows, r.cols, r.red, h200SMs, &filter{strategy: StrategyStream, streamRows: streamShort})
		require.ErrorIs(t, err, errStrategy, r.name)
		pl, err = choose(r.l, r.rows, r.cols, r.red, h200SMs, &filter{})
		require.NoError(t, err, r.name)
		require.NotEqual(t, StrategyStream, pl.strategy, r.name)
	}
}

// TestWorkspaceHolds: a plan's Run refuses, with ErrWorkspace, a workspace
// smaller than the plan's, and says which plan's bytes are missing.
func TestWorkspaceHolds(t *testing.T) {
	w := workspace{bytes: 4096}
	require.NoError(t, w.holds("Sparse24Forward", " of staged metadata", 4096))
	require.NoError(t, w.holds("Matmul", "", 0))
	err := w.holds("Sparse24Forward", " of staged metadata", 4097)
	require.ErrorIs(t, err, ErrWorkspace)
	require.EqualError(t, err, "gemm.Sparse24Forward: workspace not presized: the plan's 4097 bytes of staged metadata are no longer allocated")
}
