package gemm

import (
	"math"

	"github.com/detgemm/detgemm/cudaload"
)

// tcRowsFamily is the tensor-core family for few rows
// (kernels/cuda/gemm_tc_rows.cu): Forward and dX, 16-byte path only. Its
// kernels run the same per-element chain as gemm_tc's, so the dispatcher
// may send any row count to either.
const tcRowsFamily = "gemm_tc_rows"

// The tile shapes of gemm_tc_rows.cu, numbered apart from gemm_tc's.
const (
	tcTileRows8     tcTile = 32 + iota // 8 rows × 32 columns, 2 warps of 16 columns
	tcTileRows16                       // 16 rows × 32 columns
	tcTileStream8                      // tcrows8 fed by 2 producer warps through mbarriers
	tcTileStream16                     // tcrows16 fed by 2 producer warps, 4 consumer warps of 8 rows
	tcTileStream16P                    // tcstream16 with 4 producer warps
	tcTileStream16N                    // tcstream16 with 2 consumer warps of 16 rows
)

// tcRowsGeometry is a gemm_tc_rows tile: mr rows × bn columns per block
// (one warp per 16 columns), bk of the reduction per stage, stages deep;
// producers > 0 (a streamed tile): that many more warps fill the ring,
// handing slots over through a full and an empty mbarrier each, and rsplit
// consumer warps share each 16 columns (one per 8-row group).
type tcRowsGeometry struct {
	name               string
	mr, bn, bk, stages int64
	producers, rsplit  int64
}

var tcRowsGeometries = map[tcTile]tcRowsGeometry{
	tcTileRows8:     {"tcrows8", 8, 32, 128, 6, 0, 1},
	tcTileRows16:    {"tcrows16", 16, 32, 128, 5, 0, 1},
	tcTileStream8:   {"tcstream8", 8, 32, 128, 6, 2, 1},
	tcTileStream16:  {"tcstream16", 16, 32, 128, 5, 2, 2},
	tcTileStream16P: {"tcstream16p", 16, 32, 128, 5, 4, 2},
	tcTileStream16N: {"tcstream16n", 16, 32, 128, 5, 2, 1},
}

// tcRowsTiles lists every rows tile (the entry points to load).
var tcRowsTiles = []tcTile{tcTileRows8, tcTileRows16, tcTileStream8, tcTileStream16, tcTileStream16P, tcTileStream16N}

func (g tcRowsGeometry) threads() uint32 { return uint32((g.bn/16*g.rsplit + g.producers) * 32) }

// blocks is the 1-D grid: row tiles × column blocks.
func (g tcRowsGeometry) blocks(rows, cols int64) int64 {
	return tcCeilDiv(rows, g.mr) * tcCeilDiv(cols, g.bn)
}

// tcRowsSharedBytes is gemm_tc_rows.cu's dynamic shared memory: per stage,
// mr rows of A (bk wide) and the bk × bn piece of B as it lies in global
// memory (nn: bk rows of bn columns; nt: bn rows of bk), each row padded by
// tcPad halves; a streamed tile's two 8-byte mbarriers per stage after.
func tcRowsSharedBytes(t tcTile, l layout) uint32 {
	g := tcRowsGeometries[t]
	b := g.bn * (g.bk + tcPad)
	if l == layoutNN {
		b = g.bk * (g.bn + tcPad)
	}
	bytes := g.stages * (g.mr*(g.bk+tcPad) + b) * 2
	if g.producers > 0 {
		bytes += g.stages * 16
	}
	return uint32(bytes)
}

// tcRowsKernels is every gemm_tc_rows entry point: each tile × nn, nt ×
// input × output (the input type or f32), 16-byte path.
var tcRowsKernels = func() (out []tcKey) {
	for _, t := range tcRowsTiles {
		for _, l := range []layout{layoutNN, layoutNT} {
			for _, in := range []DType{BF16, F16} {
				for _, o := range []DType{in, F32} {
					out = append(out, tcKey{t, l, in, o, true})
				}
			}
		}
	}
	return out
}()

// tcRowsUsable reports whether rows tile t can run p on the path vec: the
// 16-byte path, Forward or dX, a grid within grid.x, and shared memory
// within the GPU's block.
func tcRowsUsable(t tcTile, p problem, vec bool, maxShared uint32) bool {
	g, ok := tcRowsGeometries[t]
	return ok && vec && p.layout != layoutTN && g.blocks(p.rows, p.cols) <= math.MaxInt32 &&
		tcRowsSharedBytes(t, p.layout) <= maxShared
}

// chooseTCRows is the dispatcher's rule for gemm_tc_rows: a Forward or dX
// call of at most 16 rows that the 16-byte path can read takes a rows
// tile holding all its rows in one row tile. There gemm_tc's smallest
// tile computes 64 rows to keep at most 16 and its N/64 blocks leave most
// of the memory bandwidth unused (tc64: 36 µs at 1×4096×4096 bf16 on the
// H200). Measured there (bench/NOTES-tcrows.md, 2026-11-21): up to 8 rows,
// tcstream8 is the fastest everywhere (13.9 µs at 1×4096×4096 against
// tcrows8's 17.0); at 9 to 16 rows tcstream16 wins while its blocks are
// all resident at once (two an SM: 19.1 against tcrows16's 20.7 at
// 16×4096×4096) and loses where they are not (48.1 against 42.5 at
// 16×4096×11008), where tcrows16 (three an SM) stays. At 32 rows
// gemm_tc_rows (two row tiles) wins at N = 4096 but loses to tc64 at
// N = 11008, so the rule stops at 16.
func chooseTCRows(p problem, vec bool, sms int, maxShared uint32) (tcTile, bool) {
	var t tcTile
	switch {
	case p.rows <= 8:
		t = tcTileStream8
	case p.rows <= 16:
		t = tcTileStream16
		if tcRowsGeometries[t].blocks(p.rows, p.cols) > 2*int64(max(sms, 1)) {
			t = tcTileRows16
		}
	default:
		return 0, false
	}
	return t, tcRowsUsable(t, p, vec, maxShared)
}

// launchTCRows enqueues a gemm_tc_rows kernel whose arguments e.args
// already holds.
func (e *Engine) launchTCRows(p problem, k tcKey, fn *cudaload.Function) error {
	g := tcRowsGeometries[k.tile]
	grid := cudaload.Dim3{X: uint32(g.blocks(p.rows, p.cols)), Y: 1, Z: 1}
	return e.launch(p.op, fn, grid, g.threads(), tcRowsSharedBytes(k.tile, k.layout))
}
