package gemm

import (
	"math"
)

// tcFamily is the tensor-core kernel family (kernels/cuda/gemm_tc.cu).
const tcFamily = "gemm_tc"

const (
	tcTile256 tcTile = iota + 1 // 128×256 output tiles, 8 warps of 64×64; 16-byte path only
	tcTile128                   // 128×128, 8 warps of 64×32
	tcTile64                    // 64×64, 4 warps of 32×32
)

// tcGeometry is what the host needs of a tile shape: its block tile, block
// size, and whether it has an `_any` (element-wise) variant.
type tcGeometry struct {
	name       string
	bm, bn     int64
	threads    uint32
	anyVariant bool
	// relCost is the time of one block per output relative to tc256's on
	// the forward and dX layouts, relCostTN on dW's, as measured
	// (bench/NOTES-engine.md, tc.go): smaller tiles reuse less of each
	// staged operand, and tc256's dW kernel (238 registers, transposed A
	// loads) runs below tc128's.
	relCost, relCostTN float64
}

var tcGeometries = map[tcTile]tcGeometry{
	tcTile256: {"tc256", 128, 256, 256, false, 1.0, 1.15},
	tcTile128: {"tc128", 128, 128, 256, true, 1.04, 1.04},
	tcTile64:  {"tc64", 64, 64, 128, true, 1.44, 1.44},
}

// tcTilesBySize lists the tile shapes from the largest down: the order in
// which the dispatcher tries them.
var tcTilesBySize = []tcTile{tcTile256, tcTile128, tcTile64}

// Staging constants of gemm_tc.cu: k per stage, stages, and the halves of
// padding per shared-memory row.
const (
	tcBK     = 32
	tcStages = 4
	tcPad    = 8
)

// tcSharedBytes is gemm_tc.cu's Tile::smem_bytes for a tile shape and
// layout: tcStages stages of the A and B tiles, each staged as it lies in
// global memory with tcPad halves of padding per row.
func tcSharedBytes(t tcTile, l layout) uint32 {
	g := tcGeometries[t]
	aRC, bJC := l != layoutTN, l != layoutNT
	a := tcBK * (g.bm + tcPad)
	if aRC {
		a = g.bm * (tcBK + tcPad)
	}
	b := g.bn * (tcBK + tcPad)
	if bJC {
		b = tcBK * (g.bn + tcPad)
	}
	return uint32(tcStages * (a + b) * 2)
}

// tcVecOK reports whether the 16-byte path can read both operands: every
// row starts 16-byte aligned when the base pointers are and the leading
// dimensions are multiples of 8 halves.
func tcVecOK(p problem) bool {
	return p.lda%8 == 0 && p.ldb%8 == 0 && p.a%16 == 0 && p.b%16 == 0
}

// tcFits reports whether tile t's grid fits the launch limits (row tiles on
// grid.x, column tiles on grid.y).
func tcFits(t tcTile, rows, cols int64) bool {
	g := tcGeometries[t]
	return ceilDiv(rows, g.bm) <= math.MaxInt32 && ceilDiv(cols, g.bn) <= maxGridYZ
}

// tcCost is the modelled time of gemm_tc tile t on p: the busiest SM's
// blocks times each block's outputs at the tile's relative cost.
func tcCost(t tcTile, p problem, sms int) float64 {
	g := tcGeometries[t]
	blocks := ceilDiv(p.rows, g.bm) * ceilDiv(p.cols, g.bn)
	rel := g.relCost
	if p.layout == layoutTN {
		rel = g.relCostTN
	}
	return float64(ceilDiv(blocks, int64(max(sms, 1)))) * float64(g.bm*g.bn) * rel
}

// tcSharedLimit is the shared memory a gemm_tc block may use on a device
// whose opt-in limit per block is optin bytes (48 KiB needs no opt-in).
func tcSharedLimit(optin int) uint32 { return uint32(max(optin, 48<<10)) }

func (g tcGeometry) tileName() string { return g.name }
