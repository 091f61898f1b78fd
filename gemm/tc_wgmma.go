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
	// sums (finishWG); the plain tiles run one slab.
	tcTileWG128x128S
	tcTileWG128x192S
	tcTileWG128x256S
	// The slab variant of 128×192 that keeps the running sum in registers
	// (wgmma.cuh's Tile::REGSUM): any output type, Forward and dX only.
	tcTileWG128x192R
	// The narrow tiles, for outputs whose 128×128 grid leaves SMs idle
	// (planWG's single-round rule); 128×96 reads B along the reduction
	// only (dX's layout).
	tcTileWG128x96
	tcTileWG128x64
	// The ping-pong tile of Matmul's fused kernels
	// (gemm_wgmma_matmul.cu's wgp): each consumer warpgroup computes whole
	// 128×128 tiles, the two in turn, blocks in clusters of two sharing A.
	tcTileWG128x128P
)

// wgNarrowTiles are the single-round rule's candidates beside 128×128,
// widest first.
var wgNarrowTiles = []tcTile{tcTileWG128x96, tcTileWG128x64}

// wgTilesBySize lists the wgmma tiles, largest first.
var wgTilesBySize = []tcTile{tcTileWG192x192, tcTileWG128x256, tcTileWG128x192, tcTileWG128x128}

// wgGeometry describes one wgmma tile shape; relCost is on tcCost's scale
// (tc256's forward = 1): the time per output and round against tc256 on
// the same shape, all ops alike (bench/NOTES-engine.md, tc_wgmma.go).
type wgGeometry struct {
	name    string
	bm, bn  int64
	stages  int64
	relCost float64 // the same for every op (measured)
	// ntOnly: the tile has entries for dX's layout only (B read along
	// the reduction).
	ntOnly bool
	// cluster: blocks a cluster (0: alone); a cluster's blocks take the
	// tiles of one item side by side along n, each loading its share of
	// A's rows and multicasting it (box rows bm/cluster).
	cluster int64
}

// wgBK is the reduction per stage of the ring.
const wgBK = 64

var wgGeometries = map[tcTile]wgGeometry{
	tcTileWG128x256:  {"wg128x256", 128, 256, 4, 0.45, false, 0},
	tcTileWG128x192:  {"wg128x192", 128, 192, 5, 0.47, false, 0},
	tcTileWG128x128:  {"wg128x128", 128, 128, 6, 0.62, false, 0},
	tcTileWG192x192:  {"wg192x192", 192, 192, 4, 0.45, false, 0},
	tcTileWG128x128S: {"wg128x128s", 128, 128, 6, 0.62, false, 0},
	tcTileWG128x192S: {"wg128x192s", 128, 192, 5, 0.47, false, 0},
	tcTileWG128x256S: {"wg128x256s", 128, 256, 4, 0.45, false, 0},
	tcTileWG128x192R: {"wg128x192r", 128, 192, 5, 0.47, false, 0},
	// The narrow tiles run only where a round of them is the whole grid
	// (planWG), so their relative costs are never compared.
	tcTileWG128x96: {"wg128x96", 128, 96, 7, 0.62, true, 0},
	tcTileWG128x64: {"wg128x64", 128, 64, 8, 0.62, false, 0},
	// Matmul's fused kernels only; its cost is not on the planner's scale.
	tcTileWG128x128P: {"wg128x128p", 128, 128, 6, 0.45, false, 2},
}

// wgIDs is gemm_wgmma's and gemm_wgmma_slabs' lookup table, from the
// entry descriptions.
var wgIDs = indexOf(tcKeyIn(wgGeometries), "wg")

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
// (64×BN) halves, 1 KiB to align it, the barriers, BN zero floats, then
// 128 bytes to align the 16-bit store's staging, 2 KiB per consumer warp.
func wgSharedBytes(t tcTile) uint32 {
	g := wgGeometries[t]
	stage := (g.bm*wgBK + g.bn*wgBK) * 2
	staging := 4 * (g.bm / 64) * 16 * 64 * 2
	return uint32(g.stages*stage + 1024 + 2*g.stages*8 + g.bn*4 + 128 + staging)
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
	if g.ntOnly && p.layout != layoutNT {
		return false
	}
	return ceilDiv(p.rows, g.bm)*ceilDiv(p.cols, g.bn) <= math.MaxInt32
}

// wgCost is a wgmma tile's modelled time on tcCost's scale.
func wgCost(t tcTile, p problem, sms int) float64 {
	g := wgGeometries[t]
	blocks := ceilDiv(p.rows, g.bm) * ceilDiv(p.cols, g.bn)
	return float64(ceilDiv(blocks, int64(max(sms, 1)))) * float64(g.bm*g.bn) * g.relCost
}

// familyWG describes gemm_wgmma and its slab variants (gemm_wgmma_slabs),
// on engines with the sm_90a family, for every op on the 16-byte path
// (TMA). Registered after gemm_tc: a wgmma tile replaces gemm_tc's choice
// only where it models strictly faster (wgCost against tcCost, one scale),
// or where even the 128×128 wgmma grid is a single round — there every
// block runs alone on its SM, where gemm_tc's small tiles (costed for SMs
// that hold several blocks) are slow, and the 128×128 tile was the
// fastest, or nearly, on every single-round shape timed
// (bench/NOTES-engine.md, tc_wgmma.go): that rule is the family's
// classRule cost, which only the rows and stream families, registered
// before it, tie.
var familyWG = &family{
	name:    "gemm_wgmma",
	tc:      true,
	layouts: layoutsOf(layoutNN, layoutNT, layoutTN),
	class:   classRule,
	admits:  func(f filter) bool { return f.tc == (tcForce{}) || isWG(f.tc.tile) },
	archOK:  func(d *device) bool { return d.hasWG },
	plan:    planWG,
	finish:  finishWG,
	launch:  func(l launcher, p problem, pl plan) error { return l.wgRun(p, &pl.tc) },
}

// planWG is familyWG's plan: the single-round 128×128 tile by rule, else
// the tile of least wgCost (the larger on a tie), or the tile f pins.
func planWG(d *device, p problem, f filter) (pl plan, c cost, ok bool, err error) {
	usable := func(t tcTile) bool { return wgFits(t, p) && wgSharedBytes(t) <= d.tcShared }
	if t := f.tc.tile; t != 0 {
		if f.tc.path == tcPathAny || !usable(t) {
			return pl, cost{}, false, fmt.Errorf("%w: %v needs 16-byte aligned operands with leading dimensions that are multiples of 8 and extents below 2^31 (lda %d, ldb %d)", errTCKernel, t, p.lda, p.ldb)
		}
		pl.tc = tcLaunch{k: tcKey{t, p.layout, p.in, p.out, true}}
		return pl, cost{class: classModel}, true, nil
	}
	if usable(tcTileWG128x128) && ceilDiv(p.rows, 128)*ceilDiv(p.cols, 128) <= int64(max(d.sms, 1)) {
		pl.tc = tcLaunch{k: tcKey{wgSingleRound(p, d.sms, usable), p.layout, p.in, p.out, true}}
		return pl, ruleCost, true, nil
	}
	best, bestCost := tcTile(0), 0.0
	for _, t := range wgTilesBySize {
		if !usable(t) {
			continue
		}
		if c := wgCost(t, p, d.sms); best == 0 || c < bestCost {
			best, bestCost = t, c
		}
	}
	if best == 0 {
		return pl, cost{}, false, nil
	}
	pl.tc = tcLaunch{k: tcKey{best, p.layout, p.in, p.out, true}}
	return pl, cost{class: classModel, time: bestCost}, true, nil
}

// wgSingleRound is the tile of a grid whose 128×128 tiles fit one round:
// of 128×128 and the narrow tiles usable here, the one whose grid, still
// one round, holds the most blocks (a block's time is about its share of
// the output, and every block runs alone on its SM).
func wgSingleRound(p problem, sms int, usable func(tcTile) bool) tcTile {
	n := int64(max(sms, 1))
	best, most := tcTileWG128x128, ceilDiv(p.rows, 128)*ceilDiv(p.cols, 128)
	for _, t := range wgNarrowTiles {
		g := wgGeometries[t]
		if b := ceilDiv(p.rows, g.bm) * ceilDiv(p.cols, g.bn); usable(t) && b <= n && b > most {
			best, most = t, b
		}
	}
	return best
}

// finishWG says how a wgmma plan runs its slabs. The plain tiles run one
// slab; a cut plan takes the slab variants of 128×128, 128×192 and 128×256
// (wgSlabTiles, which write f32 only). Where planes are faster
// (wgPlanesFaster: the 128×128 grid leaves SMs idle, the shapes the cut is
// for), 128×128, one block a tile and slab, partials to planes and
// gemm_fold. Otherwise (Forward and dX) each block keeps the running sum of
// its tile's slabs in registers: 128×192's REGSUM variant, whose result is
// final (any output type, no workspace, no fold), where it fits the call;
// else in the workspace (in L2 between slabs) on the variant of least
// modelled time, a 16-bit output then rounded by gemm_fold from f32 in the
// workspace. dW takes planes (its cut needs a small master). A pinned
// 128×128, 128×192 or 128×256 takes its slab variant, running sums where
// its grid fills the GPU and planes otherwise; 192×192 is refused; a
// pinned slab variant on a one-slab plan writes its f32 result to the
// workspace for gemm_fold to round. A pinned REGSUM tile runs any plan of
// Forward or dX as it is and refuses dW.
func finishWG(d *device, p problem, f filter, pl plan) (plan, error) {
	tcCut(&p, &pl)
	r := &pl.tc
	if r.k.tile == tcTileWG128x192R && p.layout == layoutTN {
		return pl, fmt.Errorf("%w: %v runs Forward and dX only", errTCKernel, r.k.tile)
	}
	if r.slabs == 1 {
		if wgRunSum(r.k.tile) {
			r.k.out, r.toWS = F32, p.out != F32
		}
		return pl, tcSettle(&p, &pl)
	}
	n := int64(max(d.sms, 1))
	tiles := func(t tcTile) int64 {
		g := wgGeometries[t]
		return ceilDiv(p.rows, g.bm) * ceilDiv(p.cols, g.bn)
	}
	switch {
	case r.k.tile == tcTileWG128x192R:
		r.regsum = true
		if f.regsumTail && p.rows > wgGeometries[tcTileWG128x192R].bm {
			r.tailRow, r.tail = (ceilDiv(p.rows, 128)-1)*128, tcTileWG128x192S
		}
	case f.tc != (tcForce{}):
		t, ok := wgSlabTiles[r.k.tile]
		if !ok && !wgRunSum(r.k.tile) {
			return pl, fmt.Errorf("%w: %v runs one slab; this call's plan has %d", errTCKernel, r.k.tile, r.slabs)
		}
		if ok {
			r.k.tile = t
		}
		r.runsum = p.layout != layoutTN && tiles(r.k.tile) >= n
	case wgPlanesFaster(tiles(tcTileWG128x128), r.slabs, n):
		r.k.tile = tcTileWG128x128S
	case p.layout != layoutTN && wgFits(tcTileWG128x192R, p):
		r.k.tile, r.regsum = tcTileWG128x192R, true
		r.tailRow, r.tail = wgTail(d, p, r.slabs)
	default:
		r.runsum = p.layout != layoutTN
		best := 0.0
		for _, t := range []tcTile{tcTileWG128x256S, tcTileWG128x192S, tcTileWG128x128S} {
			if c := wgCost(t, p, d.sms); best == 0 || c < best {
				r.k.tile, best = t, c
			}
		}
	}
	if r.regsum {
		return pl, tcSettle(&p, &pl)
	}
	r.planes = !r.runsum
	r.k.out = F32
	r.toWS = r.runsum && p.out != F32
	r.run = r.runBytes(p)
	return pl, tcSettle(&p, &pl)
}

// wgTailGain is the least share of a REGSUM grid's modelled time that a
// split tail must save to be taken: the tail adds two launches and a
// fold, which the model counts only through its planes' traffic.
const wgTailGain = 0.05

// wgTail is where a REGSUM plan's rows leave its grid for planes (a
// multiple of 128; 0: nowhere) and the slab tile that runs them there. A
// REGSUM grid of T tiles runs ⌈T/SMs⌉ rounds of whole reductions, so a
// short last round leaves SMs idle for a whole tile's time (704 tiles of a
// 4096 × 4096 output on 132 SMs: 5.33 rounds of work in 6). Its rows can
// run on planes instead, one block a tile and slab, in rounds of 1/S of
// the reduction, and gemm_fold adds their planes in the plan's order: the
// head keeps k whole rounds (k = ⌈T/SMs⌉ − 1 or − 2: the most rows of
// tiles that fit them) and the tail's S·tiles blocks fill the SMs
// (704 tiles: 660 in 5 rounds, then 44 × 3 blocks in one round of a
// third). Modelled as wgPlanesFaster does (a quarter of a tile's time per
// tile an SM for the planes' traffic), in REGSUM tiles; taken where it
// saves wgTailGain of the grid. A row's bits are the same either way: the
// plan's slabs and their order are the plan's, not the grid's.
func wgTail(d *device, p problem, slabs int64) (int64, tcTile) {
	n := int64(max(d.sms, 1))
	g := wgGeometries[tcTileWG128x192R]
	unit := float64(g.bm*g.bn) * g.relCost
	tm, tn := ceilDiv(p.rows, g.bm), ceilDiv(p.cols, g.bn)
	whole := ceilDiv(tm*tn, n)
	row, tile, best := int64(0), tcTile(0), float64(whole)*(1-wgTailGain)
	for k := whole - 1; k >= max(whole-2, 1); k-- {
		m1 := min(k*n/tn, tm-1) // rows of tiles in k rounds
		if m1 < 1 {
			continue
		}
		tail := p
		tail.rows = p.rows - m1*g.bm
		for _, t := range []tcTile{tcTileWG128x192S, tcTileWG128x128S} {
			if !wgFits(t, tail) || wgSharedBytes(t) > d.tcShared {
				continue
			}
			tg := wgGeometries[t]
			tiles := ceilDiv(tail.rows, tg.bm) * ceilDiv(p.cols, tg.bn)
			per := float64(tg.bm*tg.bn) * tg.relCost / unit
			c := float64(ceilDiv(m1*tn, n)) + per*(float64(ceilDiv(tiles*slabs, n))/float64(slabs)+0.25*float64(tiles)/float64(n))
			if c < best {
				row, tile, best = m1*g.bm, t, c
			}
		}
	}
	return row, tile
}

// wgRun enqueues a gemm_wgmma plan: its kernel, then where the slabs went
// to planes or the result to the workspace, gemm_fold. A split tail runs
// the head's rows on the REGSUM grid, the tail's on planes (every slab's,
// with the tail tile), then gemm_fold over the tail.
func (l launcher) wgRun(p problem, r *tcLaunch) error {
	if r.tailRow > 0 {
		head, tail := p.split(cutRows, r.tailRow)
		if err := l.wg(head, *r, wgIDs[r.k], 0); err != nil {
			return err
		}
		t := *r
		t.k.tile, t.k.out, t.regsum, t.planes, t.tailRow, t.tail = r.tail, F32, false, true, 0, 0
		if err := l.wg(tail, t, wgIDs[t.k], l.e.ws.ptr); err != nil {
			return err
		}
		return l.tcFold(tail, t)
	}
	ws := cudaload.DevicePtr(0)
	if r.planes || r.runsum || r.toWS {
		ws = l.e.ws.ptr
	}
	q := p
	if r.toWS {
		// The result goes to the workspace after the running sums, f32,
		// for gemm_fold to round.
		q.c, q.ldc = uintptr(ws)+uintptr(r.run), p.cols
	}
	if err := l.wg(q, *r, wgIDs[r.k], ws); err != nil {
		return err
	}
	return l.tcFolded(&p, r)
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

// wgPlanesFaster reports whether a grid of tiles 128×128 tiles runs an
// S-slab plan faster on planes (tiles·S blocks of a slab each, rounds of
// 1/S the work) than as running sums (tiles blocks): by the rounds of the
// busiest SM, the planes paying for their traffic about a quarter of a
// tile's time per tile an SM (S planes written and read against a
// reduction of several thousand steps). 32 tiles of 3 slabs on 132 SMs:
// 0.33 + 0.06 against 1, planes; 128 tiles: 1 + 0.24 against 1, running
// sums.
func wgPlanesFaster(tiles, S, sms int64) bool {
	planes := float64(ceilDiv(tiles*S, sms))/float64(S) + 0.25*float64(tiles)/float64(sms)
	return planes < float64(ceilDiv(tiles, sms))
}
