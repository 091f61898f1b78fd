package gemm

import (
	"fmt"
	"math"

	"github.com/detgemm/detgemm/cudaload"
)

// tcFamily is the tensor-core kernel family (kernels/cuda/gemm_tc.cu).
const tcFamily = "gemm_tc"

const (
	tcTile256 tcTile = iota + 1 // 128×256 output tiles, 8 warps of 64×64; 16-byte path only
	tcTile128                   // 128×128, 8 warps of 64×32
	tcTile64                    // 64×64, 4 warps of 32×32
)

// tcTileIDs is gemm_tc's lookup table, from the entry descriptions.
var tcTileIDs = indexOf(tcKeyIn(tcGeometries), "tc")

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
	return tcSharedBytesRC(t, l != layoutTN, l != layoutNT)
}

// tcSharedBytesRC is tcSharedBytes for operands staged as A_RC, B_JC say
// (Matmul's four layouts).
func tcSharedBytesRC(t tcTile, aRC, bJC bool) uint32 {
	g := tcGeometries[t]
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

// familyTC describes gemm_tc: the tensor-core tier's tiles for every op,
// on either load path (tc256 on the 16-byte path only), costed by tcCost.
// Among the tiles whose grid fits the launch limits and whose shared
// memory fits the GPU's block (sm_86 and sm_89 hold 99 KiB, too little for
// tc256), the one of least modelled time, the larger on a tie. The model
// is the busiest SM's work: a grid of T blocks leaves ceil(T / sms) blocks
// on some SM, each bm·bn outputs at the tile's measured relative cost for
// the layout. So a shape that fills the GPU with 128×256 tiles takes them,
// and one whose big tiles would leave most SMs idle in the last wave takes
// a smaller one. Registered before gemm_wgmma, which must model strictly
// faster to replace it.
var familyTC = &family{
	name:    "gemm_tc",
	tc:      true,
	layouts: layoutsOf(layoutNN, layoutNT, layoutTN),
	class:   classModel,
	admits: func(f filter) bool {
		_, ok := tcGeometries[f.tc.tile]
		return tcAdmitsAny(f) || ok
	},
	plan:   planTC,
	finish: finishTC,
	launch: func(l launcher, p problem, pl plan) error { return l.tcTiles(&p, &pl.tc) },
}

// planTC is familyTC's plan: the tile of least tcCost on the call's load
// path (_vec where tcVecOK, _any otherwise), or the tile f pins.
func planTC(d *device, p problem, f filter) (pl plan, c cost, ok bool, err error) {
	vec, err := tcPathOf(tcVecOK(p), f.tc)
	if err != nil {
		return pl, cost{}, false, err
	}
	usable := func(t tcTile) bool {
		g, ok := tcGeometries[t]
		return ok && (vec || g.anyVariant) && tcFits(t, p.rows, p.cols) && tcSharedBytes(t, p.layout) <= d.tcShared
	}
	best, bestCost := f.tc.tile, 0.0
	if best != 0 {
		if !usable(best) {
			return pl, cost{}, false, fmt.Errorf("%w: %v (vec %v) for %d×%d outputs", errTCKernel, best, vec, p.rows, p.cols)
		}
	} else {
		for _, t := range tcTilesBySize {
			if !usable(t) {
				continue
			}
			if c := tcCost(t, p, d.sms); best == 0 || c < bestCost {
				best, bestCost = t, c
			}
		}
		if best == 0 {
			// Validation admits only shapes whose 128-wide column tiles fit
			// grid.y, so tc128 always fits; this is a bug, not a user error.
			return pl, cost{}, false, fmt.Errorf("%w: no tile fits %d×%d outputs", errTCKernel, p.rows, p.cols)
		}
	}
	pl.tc = tcLaunch{k: tcKey{best, p.layout, p.in, p.out, vec}}
	return pl, cost{class: classModel, time: bestCost}, true, nil
}

// finishTC folds a cut plan's slabs on planes (gemm_fold adds them, so the
// kernel writes f32 partials). tc128's dW has no slabs (its 128-register
// cap): a cut dW takes tc64 instead, and a filter pinning tc128 (or any
// tensor-core kernel) is refused.
func finishTC(_ *device, p problem, f filter, pl plan) (plan, error) {
	tcCut(&p, &pl)
	r := &pl.tc
	if r.slabs > 1 {
		if r.k.tile == tcTile128 && p.layout == layoutTN {
			if f.tc != (tcForce{}) {
				return pl, fmt.Errorf("%w: tc128's dW runs one slab; this call's plan has %d", errTCKernel, r.slabs)
			}
			r.k.tile = tcTile64
		}
		r.planes, r.k.out = true, F32 // the partials; gemm_fold rounds to p.out
	}
	return pl, tcSettle(&p, &pl)
}

// tcTiles enqueues a gemm_tc kernel, grid (row tiles, column tiles, slabs
// on planes), then the fold of its planes.
func (l launcher) tcTiles(p *problem, r *tcLaunch) error {
	id := tcTileIDs[r.k]
	if err := l.need(p, id); err != nil {
		return err
	}
	ws := cudaload.DevicePtr(0)
	if r.planes {
		ws = l.e.ws.ptr
	}
	l.tcArgs(p)
	l.e.args.Ptr(ws).Int64(r.slabL)
	g := tcGeometries[r.k.tile]
	z := uint32(1)
	if r.planes {
		z = uint32(r.slabs)
	}
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.rows, g.bm)), Y: uint32(ceilDiv(p.cols, g.bn)), Z: z}
	if err := l.launch(p, id, grid, g.threads, tcSharedBytes(r.k.tile, r.k.layout), g.bm, g.bn); err != nil {
		return err
	}
	return l.tcFolded(p, r)
}
