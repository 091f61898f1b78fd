package gemm

import (
	"fmt"
	"math"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/kernels"
)

// wgFamily is the Hopper tensor-core family (kernels/cuda/gemm_wgmma.cu):
// wgmma fed by TMA, built only for sm_90a. It runs the TC contract's chain
// exactly as gemm_tc does, so the dispatcher may pick it freely.
const wgFamily = "gemm_wgmma"

// wgSlabsFamily holds the slab variants of the wgmma tiles
// (kernels/cuda/gemm_wgmma_slabs.cu), a family apart so that the cold
// build compiles it beside gemm_wgmma.
const wgSlabsFamily = "gemm_wgmma_slabs"

// The wgmma tile shapes: 128×256, 128×192, 128×128 and 192×192 outputs; a
// block is a TMA producer warpgroup and one consumer warpgroup per 64 rows.
const (
	tcTileWG128x256 tcTile = 16 + iota
	tcTileWG128x192
	tcTileWG128x128
	tcTileWG192x192
	// The slab variants (wgmma.cuh's Tile::SLABS, gemm_wgmma_slabs.cu): the same tiles
	// with the code that runs a cut plan's slabs, on planes or as running
	// sums (chooseTCLaunch, tc_plan.go); the plain tiles run one slab.
	tcTileWG128x128S
	tcTileWG128x192S
	tcTileWG128x256S
)

// wgTilesBySize lists the wgmma tiles, largest first.
var wgTilesBySize = []tcTile{tcTileWG192x192, tcTileWG128x256, tcTileWG128x192, tcTileWG128x128}

// wgGeometry describes one wgmma tile shape; relCost is on chooseTC's scale
// (tc256's forward = 1): the time per output and round against tc256 on
// the same shape, all ops alike (bench/NOTES-engine.md, tc_wgmma.go).
type wgGeometry struct {
	name    string
	bm, bn  int64
	stages  int64
	relCost float64 // the same for every op (measured)
}

// wgBK is the reduction per stage of the ring.
const wgBK = 64

var wgGeometries = map[tcTile]wgGeometry{
	tcTileWG128x256:  {"wg128x256", 128, 256, 4, 0.45},
	tcTileWG128x192:  {"wg128x192", 128, 192, 5, 0.47},
	tcTileWG128x128:  {"wg128x128", 128, 128, 6, 0.62},
	tcTileWG192x192:  {"wg192x192", 192, 192, 4, 0.45},
	tcTileWG128x128S: {"wg128x128s", 128, 128, 6, 0.62},
	tcTileWG128x192S: {"wg128x192s", 128, 192, 5, 0.47},
	tcTileWG128x256S: {"wg128x256s", 128, 256, 4, 0.45},
}

// wgSlabTiles are the slab variants, each with the plain tile it stands
// in for.
var wgSlabTiles = map[tcTile]tcTile{
	tcTileWG128x128: tcTileWG128x128S, tcTileWG128x192: tcTileWG128x192S, tcTileWG128x256: tcTileWG128x256S,
}

// threads is a block's size: the producer and one consumer warpgroup per
// 64 rows.
func (g wgGeometry) threads() uint32 { return uint32(128 * (g.bm/64 + 1)) }

func isWG(t tcTile) bool { _, ok := wgGeometries[t]; return ok }

// wgSharedBytes is wgmma.cuh's Tile::SMEM: the ring of A (BM×64) and B
// (64×BN) halves, 1 KiB to align it, the barriers, BN zero floats.
func wgSharedBytes(t tcTile) uint32 {
	g := wgGeometries[t]
	stage := (g.bm*wgBK + g.bn*wgBK) * 2
	return uint32(g.stages*stage + 1024 + 2*g.stages*8 + g.bn*4)
}

// wgArch reports whether the bundle's architecture has the wgmma family.
func wgArch(a kernels.Arch) bool { return a.Major == 9 && a.Minor == 0 && a.Specific }

// wgFits reports whether a wgmma kernel can run p: the TMA maps need
// 16-byte aligned bases and row pitches (tcVecOK), and the copy
// coordinates are 32-bit, so every extent must stay below 2^31 with a
// box to spare.
func wgFits(t tcTile, p problem) bool {
	const lim = math.MaxInt32 - 256
	if !tcVecOK(p) || p.rows > lim || p.cols > lim || p.red > lim {
		return false
	}
	g := wgGeometries[t]
	return ceilDiv(p.rows, g.bm)*ceilDiv(p.cols, g.bn) <= math.MaxInt32
}

// wgCost is a wgmma tile's modelled time on chooseTC's scale.
func wgCost(t tcTile, p problem, sms int) float64 {
	g := wgGeometries[t]
	blocks := ceilDiv(p.rows, g.bm) * ceilDiv(p.cols, g.bn)
	return float64(ceilDiv(blocks, int64(max(sms, 1)))) * float64(g.bm*g.bn) * g.relCost
}

// wg enqueues one gemm_wgmma kernel: the TMA maps of both operands for
// this call, then a persistent one-dimensional grid.
func (l launcher) wg(p problem, r tcLaunch, id kernelID, ws cudaload.DevicePtr) error {
	k := r.k
	if err := l.need(&p, id); err != nil {
		return err
	}
	e := l.e
	g := wgGeometries[k.tile]
	if l.rec == nil {
		if err := e.encodeWG(p, k, g); err != nil {
			return err
		}
	}
	e.args.Reset().TensorMap(&e.tmA).TensorMap(&e.tmB).
		Ptr(cudaload.DevicePtr(p.c)).Ptr(cudaload.DevicePtr(p.bias)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.ldc).Ptr(ws).Int64(r.slabL).Int32(r.wsMode())
	// Persistent: one block per SM at most (the ring fills its shared
	// memory), each looping over items: tiles, or tiles × slabs on planes.
	items := ceilDiv(p.rows, g.bm) * ceilDiv(p.cols, g.bn)
	if r.planes {
		items *= r.slabs
	}
	blocks := min(items, int64(max(e.sms, 1)))
	return l.launch(&p, id, cudaload.Dim3{X: uint32(blocks), Y: 1, Z: 1}, g.threads(), wgSharedBytes(k.tile), g.bm, g.bn)
}

// encodeWG encodes gemm_wgmma's maps of both operands into e.tmA and e.tmB.
func (e *device) encodeWG(p problem, k tcKey, g wgGeometry) error {
	dt := cudaload.TensorMapBFloat16
	if p.in == F16 {
		dt = cudaload.TensorMapFloat16
	}
	const sw, l2, oob = cudaload.TensorMapSwizzle128B, cudaload.TensorMapL2Promotion256B, cudaload.TensorMapOOBFillNone
	var err error
	// A: 64 reduction steps × BM rows where r is contiguous (nn, nt);
	// 64 rows × 64 steps, once per 64 rows, where the rows are (tn).
	if p.layout == layoutTN {
		err = e.tmEnc.Encode2D(&e.tmA, dt, cudaload.DevicePtr(p.a), uint64(p.rows), uint64(p.red), uint64(p.lda)*2, 64, 64, sw, l2, oob)
	} else {
		err = e.tmEnc.Encode2D(&e.tmA, dt, cudaload.DevicePtr(p.a), uint64(p.red), uint64(p.rows), uint64(p.lda)*2, 64, uint32(g.bm), sw, l2, oob)
	}
	if err == nil {
		// B: 64 columns × 64 steps where the columns are contiguous (nn,
		// tn); 64 steps × BN columns where r is (nt).
		if p.layout == layoutNT {
			err = e.tmEnc.Encode2D(&e.tmB, dt, cudaload.DevicePtr(p.b), uint64(p.red), uint64(p.cols), uint64(p.ldb)*2, 64, uint32(g.bn), sw, l2, oob)
		} else {
			err = e.tmEnc.Encode2D(&e.tmB, dt, cudaload.DevicePtr(p.b), uint64(p.cols), uint64(p.red), uint64(p.ldb)*2, 64, 64, sw, l2, oob)
		}
	}
	if err != nil {
		// wgFits admitted the call, so this is a bug, not a user error.
		return fmt.Errorf("gemm.%s: encoding the TMA maps of %s: %w", p.op, g.name, err)
	}
	return nil
}

func (g wgGeometry) tileName() string { return g.name }

// wsMode is the ws_mode argument of the gemm_wgmma_slabs kernels (wgmma.cuh).
func (r tcLaunch) wsMode() int32 {
	switch {
	case r.planes:
		return 1 // WS_PLANES
	case r.runsum:
		return 2 // WS_RUNSUM
	}
	return 0
}

// runBytes is the running sums' part of the workspace: an f32 per element
// of every tile (wgmma.cuh's runsum_add), 0 without running sums.
func (r tcLaunch) runBytes(p problem) uint64 {
	if !r.runsum {
		return 0
	}
	g := wgGeometries[r.k.tile]
	return 4 * uint64(ceilDiv(p.rows, g.bm)*ceilDiv(p.cols, g.bn)) * uint64(g.bm*g.bn)
}

// wgRunSum reports whether wgmma tile t is a slab variant (Tile::SLABS,
// which keep running sums: Tile::RUNSUM).
func wgRunSum(t tcTile) bool {
	return t == tcTileWG128x128S || t == tcTileWG128x192S || t == tcTileWG128x256S
}
