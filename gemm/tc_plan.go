package gemm

import (
	"fmt"
	"math"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
	"github.com/detgemm/detgemm/gemm/ref"
)

// The tensor-core tier's planning and launching, on top of its families
// (tc.go, tc_rows.go, tc_wgmma.go, tc_dw_stream.go): which kernel a call
// takes, how the plan's slabs fold, and the launch of the chosen kernel.

// tcIDs is every tensor-core entry point (gemm_tc, gemm_tc_rows,
// gemm_tc_rows_tma, gemm_tc_dw_stream, gemm_wgmma, gemm_wgmma_slabs) by
// key; tcOneIDs gemm_tc_rows_tma's one-slab twins. From the descriptions.
var (
	tcIDs    = indexOf(tcKeyOf, "tc", "tcrows", "tmarows", "tcdw", "wg")
	tcOneIDs = indexOf(tcKeyOf, "tmarows_one")
)

// tcTwinTiles marks the tiles whose entry points have one-slab twins (an
// array, so the planner's check costs no map lookup).
var tcTwinTiles = func() (a [256]bool) {
	for k := range tcOneIDs {
		a[k.tile] = true
	}
	return a
}()

// tcKeyOf is the typed key of a tensor-core entry description.
func tcKeyOf(k entries.Key) tcKey {
	return tcKey{tileOf(k.Tile), layoutOf(k.Layout), dtypeOf(k.In), dtypeOf(k.Out), k.Vec}
}

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

// tileOf is the tensor-core tile a description names.
func tileOf(name string) tcTile {
	for _, geoms := range []map[tcTile]string{tileNames(tcGeometries), tileNames(wgGeometries), tileNames(tcRowsGeometries), tileNames(tcDWGeometries)} {
		for t, n := range geoms {
			if n == name {
				return t
			}
		}
	}
	panic("gemm: unknown tensor-core tile " + name)
}

// tileNames is the names of a family's tiles.
func tileNames[G interface{ tileName() string }](m map[tcTile]G) map[tcTile]string {
	out := make(map[tcTile]string, len(m))
	for t, g := range m {
		out[t] = g.tileName()
	}
	return out
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

// tc enqueues a tensor-core call: its kernel (gemm_wgmma's, tc_wgmma.go;
// gemm_tc_rows', tc_rows.go; gemm_tc_dw_stream's, tc_dw_stream.go; or
// gemm_tc's, grid (row tiles, column tiles, slabs on planes)), and where
// the plan's slabs go to planes or the result to the workspace, gemm_fold
// (chooseTCLaunch, tc_plan.go).
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
		return l.wg(p, r, tcIDs[k], ws)
	}
	id := r.one // the same chain, no fold compiled in
	if id == 0 {
		id = tcIDs[k]
	}
	if err := l.need(&p, id); err != nil {
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
	return l.launch(&p, id, grid, g.threads, tcSharedBytes(k.tile, k.layout), g.bm, g.bn)
}

// oneSlabName is the entry point of gemm_tc_rows_tma's twin of k for
// one-slab plans: the same chain without the slab fold compiled in, which
// cost the 16-row nt tile 15 % at 32 rows of dX (bench/NOTES-tcrows.md).
func (k tcKey) oneSlabName() string { return k.name() + "_one" }

// chooseTCKernel picks the tensor-core kernel for p: a forced wgmma tile
// when f names one; otherwise gemm_tc's choice (chooseTC, which sends few
// rows to gemm_tc_rows), replaced by the cheapest wgmma tile when the GPU
// has the family (hasWG), the operands suit TMA and the model says it is
// faster than a gemm_tc tile. Every kernel computes each
// element by the same chain, so this decides speed only.
func chooseTCKernel(p problem, sms int, maxShared uint32, hasWG bool, f tcForce) (tcKey, error) {
	if isWG(f.tile) {
		if !hasWG {
			return tcKey{}, fmt.Errorf("%w: %v needs sm_90a (wgmma)", errTCKernel, f.tile)
		}
		if f.path == tcPathAny || !wgFits(f.tile, p) || wgSharedBytes(f.tile) > maxShared {
			return tcKey{}, fmt.Errorf("%w: %v needs 16-byte aligned operands with leading dimensions that are multiples of 8 and extents below 2^31 (lda %d, ldb %d)", errTCKernel, f.tile, p.lda, p.ldb)
		}
		return tcKey{f.tile, p.layout, p.in, p.out, true}, nil
	}
	k, err := chooseTC(p, sms, maxShared, f)
	if err != nil || f != (tcForce{}) || !hasWG {
		return k, err
	}
	if _, rows := tcRowsGeometries[k.tile]; rows {
		return k, nil // few rows: gemm_tc_rows streams W, which no tile does better
	}
	if isTCDW(k.tile) {
		return k, nil // short dW: gemm_tc_dw_stream streams the master (chooseTCDW)
	}
	// Small outputs: when even the 128×128 wgmma grid is a single round,
	// every block runs alone on its SM, where gemm_tc's small tiles (costed
	// for SMs that hold several blocks) are slow; the 128×128 tile was the
	// fastest, or nearly, on every single-round shape timed
	// (bench/NOTES-engine.md, tc_wgmma.go).
	if wgFits(tcTileWG128x128, p) && wgSharedBytes(tcTileWG128x128) <= maxShared &&
		ceilDiv(p.rows, 128)*ceilDiv(p.cols, 128) <= int64(max(sms, 1)) {
		return tcKey{tcTileWG128x128, p.layout, p.in, p.out, true}, nil
	}
	best, bestCost := tcTile(0), tcCost(k.tile, p, sms)
	for _, t := range wgTilesBySize {
		if !wgFits(t, p) || wgSharedBytes(t) > maxShared {
			continue
		}
		if c := wgCost(t, p, sms); c < bestCost {
			best, bestCost = t, c
		}
	}
	if best != 0 {
		k = tcKey{best, p.layout, p.in, p.out, true}
	}
	return k, nil
}

// tcSlabs is the tensor-core plan's cut of p's reduction into S slabs of L
// terms (the last may be shorter): ref.TCSlabs for Forward and dX (a
// function of the reduction and the other output dimension, never M),
// ref.TCDWSlabs for dW. S = 1, L = red for most shapes.
func tcSlabs(p problem) (S, L int64) {
	var s, l int
	if p.layout == layoutTN {
		s, l = ref.TCDWSlabs(int(p.red), int(p.rows), int(p.cols))
	} else {
		s, l = ref.TCSlabs(int(p.red), int(p.cols))
	}
	return int64(s), int64(l)
}

// foldPlanes is the number of workspace planes gemm_fold adds after the
// kernel: 0 for none (no fold).
func (r tcLaunch) foldPlanes(p problem) int64 {
	switch {
	case r.planes && p.layout == layoutTN:
		return r.slabs - 1
	case r.planes:
		return r.slabs
	case r.toWS:
		return 1
	}
	return 0
}

// wsBytes is the workspace: the running sums (runBytes), then planes of
// f32 outputs for gemm_fold (foldPlanes: every slab's on planes for
// Forward and dX, every slab's but the first for dW, which folds slab 0 in
// place; one where the last sum is rounded by gemm_fold). ok is false on
// overflow.
func (r tcLaunch) wsBytes(p problem) (uint64, bool) {
	n := uint64(r.foldPlanes(p))
	b := n * uint64(p.rows)
	if b/uint64(p.rows) != n {
		return 0, false
	}
	c := b * uint64(p.cols)
	if c/uint64(p.cols) != b || c > math.MaxUint64/8 {
		return 0, false
	}
	return r.runBytes(p) + 4*c, true
}

// chooseTCLaunch picks the kernel of a tensor-core call (chooseTCKernel, then
// tcRowsOnHopper) and how it runs the plan's slabs. Every kernel gives each
// element the plan's bits, so this decides speed only.
//
//   - One slab: the kernel as chosen.
//   - The rows kernels (gemm_tc_rows, gemm_tc_rows_tma): the slabs fold in
//     registers (four or eight more a thread).
//   - gemm_wgmma: the slab variants of 128×128, 128×192 and 128×256
//     (wgSlabTiles, gemm_wgmma_slabs.cu; the plain kernels run one slab, and the variants
//     write f32 only). Where planes are faster (wgPlanesFaster: the
//     128×128 grid leaves SMs idle, the shapes the cut is for), 128×128,
//     one block a tile and slab, partials to planes and gemm_fold.
//     Otherwise each block keeps the running sums of its tile's slabs in
//     the workspace (in L2 between slabs), on the variant of least
//     modelled time; a 16-bit output is then rounded by gemm_fold from
//     f32 in the workspace. dW takes planes (its cut needs a small
//     master). A forced 128×128, 128×192 or 128×256 takes its slab
//     variant, running sums where its grid fills the GPU and planes
//     otherwise; 192×192 is refused.
//   - gemm_tc: planes. tc128's dW has no slabs (its 128-register cap),
//     so the dispatcher takes tc64 there, and a forced tc128 is refused.
//   - gemm_tc_dw_stream takes only dW calls of at most 128 batch rows,
//     whose plan has one slab (ref.TCDWSlabs cuts from 1024).
func chooseTCLaunch(p problem, sms int, maxShared uint32, hasWG bool, f tcForce) (tcLaunch, error) {
	k, err := chooseTCKernel(p, sms, maxShared, hasWG, f)
	if err == nil {
		k, err = tcRowsOnHopper(k, p, hasWG, maxShared, f)
	}
	if err != nil {
		return tcLaunch{}, err
	}
	S, L := tcSlabs(p)
	r := tcLaunch{k: k, slabs: S, slabL: L}
	if S == 1 {
		if wgRunSum(k.tile) { // a slab variant forced: it writes f32 only
			r.k.out, r.toWS = F32, p.out != F32
		}
		return r, nil
	}
	forced := f != (tcForce{})
	switch {
	case isTCDW(k.tile):
		return tcLaunch{}, fmt.Errorf("%w: %v runs one slab; this dW's plan has %d", errTCKernel, k.tile, S)
	case tcRowsGeometries[k.tile].name != "":
		return r, nil
	case isWG(k.tile):
		n := int64(max(sms, 1))
		tiles := func(t tcTile) int64 {
			g := wgGeometries[t]
			return ceilDiv(p.rows, g.bm) * ceilDiv(p.cols, g.bn)
		}
		switch {
		case forced:
			t, ok := wgSlabTiles[k.tile]
			if !ok && !wgRunSum(k.tile) {
				return tcLaunch{}, fmt.Errorf("%w: %v runs one slab; this call's plan has %d", errTCKernel, k.tile, S)
			}
			if ok {
				r.k.tile = t
			}
			r.runsum = p.layout != layoutTN && tiles(r.k.tile) >= n
		case wgPlanesFaster(tiles(tcTileWG128x128), S, n):
			r.k.tile = tcTileWG128x128S
		default:
			r.runsum = p.layout != layoutTN
			best := 0.0
			for _, t := range []tcTile{tcTileWG128x256S, tcTileWG128x192S, tcTileWG128x128S} {
				if c := wgCost(t, p, sms); best == 0 || c < best {
					r.k.tile, best = t, c
				}
			}
		}
		r.planes = !r.runsum
		r.k.out = F32
		r.toWS = r.runsum && p.out != F32
	default:
		if k.tile == tcTile128 && p.layout == layoutTN {
			if forced {
				return tcLaunch{}, fmt.Errorf("%w: tc128's dW runs one slab; this call's plan has %d", errTCKernel, S)
			}
			r.k.tile = tcTile64
		}
		r.planes = true
	}
	if r.planes {
		r.k.out = F32 // the partials; gemm_fold rounds to p.out
	}
	if _, ok := r.wsBytes(p); !ok {
		return tcLaunch{}, fmt.Errorf("%w: %d slabs of %d×%d f32 partials overflow 64 bits", ErrTooLarge, S, p.rows, p.cols)
	}
	return r, nil
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

// tcFold adds a planes run's partials in order: Forward and dX store
// p_0 + p_1 + … (slab 0 started at the bias) rounded to the output type;
// dW adds the planes of slabs 1… to the master, where slab 0 left its
// chain from the old value.
func (l launcher) tcFold(p problem, r tcLaunch) error {
	acc := p.layout == layoutTN && r.planes
	id := foldIDs[foldKey{p.out, acc}]
	if err := l.need(&p, id); err != nil {
		return err
	}
	planes := r.foldPlanes(p)
	n := uint64(p.rows) * uint64(p.cols)
	l.e.args.Reset().
		Ptr(l.e.ws.ptr + cudaload.DevicePtr(r.runBytes(p))).Ptr(cudaload.DevicePtr(p.c)).Ptr(0).
		Uint64(n).Uint64(uint64(p.cols)).Uint64(uint64(planes))
	return l.launch(&p, id, cudaload.Dim3{X: foldBlocks(n, l.e.sms), Y: 1, Z: 1}, foldThreads, 0, 1, 1)
}

// familyTC describes the tensor-core tier's kernels to the planner:
// chooseTCLaunch's choice, as one description until each tensor-core
// family has its own.
var familyTC = &family{
	name:    "tensor-core",
	tc:      true,
	layouts: layoutsOf(layoutNN, layoutNT, layoutTN),
	class:   classModel,
	admits:  func(*filter) bool { return true },
	plan: func(d *device, p *problem, f *filter, pl *plan) (cost, bool, error) {
		r, err := chooseTCLaunch(*p, d.sms, d.tcShared, d.hasWG, f.tc)
		if err != nil {
			return cost{}, false, err
		}
		if r.slabs <= 1 && tcTwinTiles[r.k.tile] {
			r.one = tcOneIDs[r.k]
		}
		ws, _ := r.wsBytes(*p)
		if !r.planes {
			*pl = plan{strategy: StrategyTiled, slabs: r.slabs, ws: ws, tc: r}
		} else {
			*pl = plan{strategy: StrategySplitSlab, slabs: r.slabs, perBlock: 1, groups: r.slabs, ws: ws, tc: r}
		}
		return cost{class: classModel}, true, nil
	},
	launch: func(l launcher, p *problem, pl *plan) error { return l.tc(*p, pl.tc) },
}
