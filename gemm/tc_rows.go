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
	tcTileRows8  tcTile = 32 + iota // 8 rows × 32 columns: 2 consumer warps of 16 columns, 2 producer warps
	tcTileRows16                    // 16 rows × 32 columns
)

// tcRowsGeometry is a gemm_tc_rows tile: mr rows × bn columns per block
// (one consumer warp per 16 columns), bk of the reduction per stage,
// stages deep, filled by `producers` producer warps.
type tcRowsGeometry struct {
	name                          string
	mr, bn, bk, stages, producers int64
}

var tcRowsGeometries = map[tcTile]tcRowsGeometry{
	tcTileRows8:  {"tcrows8", 8, 32, 128, 6, 2},
	tcTileRows16: {"tcrows16", 16, 32, 128, 5, 2},
}

// tcRowsTiles lists the rows tiles, the fewest rows first.
var tcRowsTiles = []tcTile{tcTileRows8, tcTileRows16}

func (g tcRowsGeometry) threads() uint32 { return uint32((g.bn/16 + g.producers) * 32) }

// blocks is the 1-D grid: row tiles × column blocks.
func (g tcRowsGeometry) blocks(rows, cols int64) int64 {
	return tcCeilDiv(rows, g.mr) * tcCeilDiv(cols, g.bn)
}

// tcRowsSharedBytes is gemm_tc_rows.cu's dynamic shared memory: per stage,
// mr rows of A (bk wide) and the bk × bn piece of B as it lies in global
// memory (nn: bk rows of bn columns; nt: bn rows of bk), each row padded by
// tcPad halves; then the stages' full and empty mbarriers (8 bytes each).
func tcRowsSharedBytes(t tcTile, l layout) uint32 {
	g := tcRowsGeometries[t]
	b := g.bn * (g.bk + tcPad)
	if l == layoutNN {
		b = g.bk * (g.bn + tcPad)
	}
	return uint32(g.stages * ((g.mr*(g.bk+tcPad)+b)*2 + 16))
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
// call of at most 16 rows that the 16-byte path can read takes the first
// rows tile holding all its rows in one row tile. There gemm_tc's smallest
// tile computes 64 rows to keep at most 16 and its N/64 blocks leave most
// of the memory bandwidth unused: measured on the H200 (bench bf16,
// 2026-11-21), 4096×4096 weights take about 13–19 µs against tc64's 36
// (bench/NOTES-tcrows.md). At 32 rows gemm_tc_rows (two row tiles) wins at
// N = 4096 but loses to tc64 at N = 11008, so the rule stops at 16.
func chooseTCRows(p problem, vec bool, maxShared uint32) (tcTile, bool) {
	for _, t := range tcRowsTiles {
		if p.rows <= tcRowsGeometries[t].mr && tcRowsUsable(t, p, vec, maxShared) {
			return t, true
		}
	}
	return 0, false
}

// launchTCRows enqueues a gemm_tc_rows kernel whose arguments e.args
// already holds.
func (e *Engine) launchTCRows(p problem, k tcKey, fn *cudaload.Function) error {
	g := tcRowsGeometries[k.tile]
	grid := cudaload.Dim3{X: uint32(g.blocks(p.rows, p.cols)), Y: 1, Z: 1}
	return e.launch(p.op, fn, grid, g.threads(), tcRowsSharedBytes(k.tile, k.layout))
}
