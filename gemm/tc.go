package gemm

import (
	"errors"
	"fmt"
	"math"

	"github.com/detgemm/detgemm/cudaload"
)

// tcFamily is the tensor-core kernel family (kernels/cuda/gemm_tc.cu).
const tcFamily = "gemm_tc"

// tcTile names one tile shape of gemm_tc.cu. The zero value means "let the
// dispatcher choose".
type tcTile uint8

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

func (t tcTile) String() string {
	if g, ok := tcGeometries[t]; ok {
		return g.name
	}
	if g, ok := wgGeometries[t]; ok {
		return g.name
	}
	if g, ok := tcRowsGeometries[t]; ok {
		return g.name
	}
	if g, ok := tcDWGeometries[t]; ok {
		return g.name
	}
	if t == 0 {
		return "auto"
	}
	return fmt.Sprintf("tcTile(%d)", uint8(t))
}

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

// tcKey names one gemm_tc entry point.
type tcKey struct {
	tile    tcTile
	layout  layout
	in, out DType
	vec     bool
}

func (k tcKey) name() string {
	if isWG(k.tile) {
		// gemm_wgmma has the TMA path only.
		return fmt.Sprintf("detgemm_%v_%v_%v_%v", k.tile, k.layout, k.in, k.out)
	}
	path := "any"
	if k.vec {
		path = "vec"
	}
	return fmt.Sprintf("detgemm_%v_%v_%v_%v_%s", k.tile, k.layout, k.in, k.out, path)
}

// tcForce pins the tensor-core kernel (tests run the contract suite once
// per kernel). tile 0 lets the dispatcher choose the tile; path 0 the load
// path.
type tcForce struct {
	tile tcTile
	path tcPath
}

// tcPath is a load path: the 16-byte cp.async path or the element-wise one.
type tcPath uint8

const (
	tcPathVec tcPath = iota + 1
	tcPathAny
)

// errTCKernel is returned when a forced tensor-core kernel cannot run a
// call (tests only: the dispatcher never picks one that cannot).
var errTCKernel = errors.New("tensor-core kernel cannot run this call")

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

// chooseTC picks the tensor-core kernel for a validated problem on a GPU
// with sms multiprocessors. Every kernel computes each element by the same
// chain, so this decides speed only.
//
//   - The load path: _vec when both operands' base pointers are 16-byte
//     aligned and their leading dimensions multiples of 8, _any otherwise.
//   - Few rows: Forward and dX calls of at most 16 rows on the _vec path
//     take a gemm_tc_rows tile (chooseTCRows, tc_rows.go).
//     On sm_90a, launchTC then swaps in gemm_tc_rows_tma for up to 32
//     rows (tcRowsOnHopper).
//   - Short dW: a dW call of at most tcDWMaxRed batch rows takes
//     gemm_tc_dw_stream on either path (chooseTCDW, tc_dw_stream.go).
//   - The tile otherwise: among the shapes whose grid fits the launch limits and
//     whose shared memory fits the GPU's block (maxShared: sm_86 and sm_89
//     hold 99 KiB, too little for tc256), tc256 only on the _vec path, the
//     one with the least modelled time, the larger on a tie. The model is
//     the busiest SM's work: a grid of T blocks leaves ceil(T / sms) blocks
//     on some SM, each bm·bn outputs at the tile's measured relative cost
//     for the layout (whether the SM runs them one after another or several
//     at once). So a shape
//     that fills the GPU with 128×256 tiles takes them, and one whose big
//     tiles would leave most SMs idle in the last wave takes a smaller one.
func chooseTC(p problem, sms int, maxShared uint32, f tcForce) (tcKey, error) {
	if isTCDW(f.tile) {
		return chooseTCDWForced(p, maxShared, f)
	}
	if f == (tcForce{}) {
		if k, ok := chooseTCDW(p, maxShared); ok {
			return k, nil
		}
	}
	k := tcKey{layout: p.layout, in: p.in, out: p.out, vec: tcVecOK(p)}
	switch f.path {
	case 0:
	case tcPathVec:
		if !k.vec {
			return tcKey{}, fmt.Errorf("%w: the 16-byte path needs 16-byte aligned operands and leading dimensions that are multiples of 8 (lda %d, ldb %d)", errTCKernel, p.lda, p.ldb)
		}
	case tcPathAny:
		k.vec = false
	default:
		return tcKey{}, fmt.Errorf("%w: load path %d", errTCKernel, f.path)
	}
	usable := func(t tcTile) bool {
		g, ok := tcGeometries[t]
		return ok && (k.vec || g.anyVariant) && tcFits(t, p.rows, p.cols) && tcSharedBytes(t, p.layout) <= maxShared
	}
	if _, rows := tcRowsGeometries[f.tile]; rows {
		if !tcRowsUsable(f.tile, p, k.vec, maxShared) {
			return tcKey{}, fmt.Errorf("%w: %v (vec %v, layout %v) for %d×%d outputs", errTCKernel, f.tile, k.vec, p.layout, p.rows, p.cols)
		}
		k.tile = f.tile
		return k, nil
	}
	if f.tile != 0 {
		if !usable(f.tile) {
			return tcKey{}, fmt.Errorf("%w: %v (vec %v) for %d×%d outputs", errTCKernel, f.tile, k.vec, p.rows, p.cols)
		}
		k.tile = f.tile
		return k, nil
	}
	if t, ok := chooseTCRows(p, k.vec, maxShared); ok {
		k.tile = t
		return k, nil
	}
	best, bestCost := tcTile(0), 0.0
	for _, t := range tcTilesBySize {
		if !usable(t) {
			continue
		}
		cost := tcCost(t, p, sms)
		if best == 0 || cost < bestCost {
			best, bestCost = t, cost
		}
	}
	if best == 0 {
		// Validation admits only shapes whose 128-wide column tiles fit
		// grid.y, so tc128 always fits; this is a bug, not a user error.
		return tcKey{}, fmt.Errorf("%w: no tile fits %d×%d outputs", errTCKernel, p.rows, p.cols)
	}
	k.tile = best
	return k, nil
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

// tc enqueues a tensor-core call: its kernel (gemm_wgmma's, tc_wgmma.go;
// gemm_tc_rows', tc_rows.go; gemm_tc_dw_stream's, tc_dw_stream.go; or
// gemm_tc's, grid (row tiles, column tiles, slabs on planes)), and where
// the plan's slabs go to planes or the result to the workspace, gemm_fold
// (chooseTCLaunch, tc_slabs.go).
func (l launcher) tc(p problem, r tcLaunch) error {
	if err := l.tcKernel(p, r); err != nil || r.foldPlanes(p) == 0 {
		return err
	}
	return l.tcFold(p, r)
}

// tcKernel enqueues run r's kernel.
func (l launcher) tcKernel(p problem, r tcLaunch) error {
	k := r.k
	e := l.e
	ws := cudaload.DevicePtr(0)
	if r.planes || r.runsum || r.toWS {
		ws = e.ws.ptr
	}
	if isWG(k.tile) {
		if r.toWS {
			// The result goes to the workspace after the running sums,
			// f32, for gemm_fold to round.
			p.c, p.ldc = uintptr(ws)+uintptr(r.runBytes(p)), p.cols
		}
		return l.wg(p, r, ws)
	}
	id := kernelIndex.tc[k]
	if r.one {
		id = kernelIndex.tcOne[k] // the same chain, no fold compiled in
	}
	if err := l.need(p, id); err != nil {
		return err
	}
	e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(cudaload.DevicePtr(p.c)).Ptr(cudaload.DevicePtr(p.bias)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb).Int64(p.ldc)
	if isTCDW(k.tile) {
		return l.tcDW(p, k, id) // tc_dw_stream.go
	}
	e.args.Ptr(ws).Int64(r.slabL)
	if _, rows := tcRowsGeometries[k.tile]; rows {
		return l.tcRows(p, r, id) // tc_rows.go
	}
	g := tcGeometries[k.tile]
	z := uint32(1)
	if r.planes {
		z = uint32(r.slabs)
	}
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.rows, g.bm)), Y: uint32(ceilDiv(p.cols, g.bn)), Z: z}
	return l.launch(p, id, grid, g.threads, tcSharedBytes(k.tile, k.layout), g.bm, g.bn)
}

// tcSharedLimit is the shared memory a gemm_tc block may use on a device
// whose opt-in limit per block is optin bytes (48 KiB needs no opt-in).
func tcSharedLimit(optin int) uint32 { return uint32(max(optin, 48<<10)) }

func (g tcGeometry) tileName() string { return g.name }
