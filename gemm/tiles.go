package gemm

import (
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
	"github.com/detgemm/detgemm/gemm/ref"
)

// The tiles family: gemm_simt's tiled kernels (a block runs every slab of
// its output tile and folds them in place) and gemm_slabs' split-slab
// kernels (a tile's slabs spread over blocks, partials to the workspace,
// then gemm_fold), over square 128×128 or narrow 128×64 tiles. One
// description serves both because one time model (grids) chooses between
// them: the tiled grid, the split one and the tiled grid with a split
// tail are its configurations, each kept only with a margin over the one
// before it, which a single cost per configuration cannot order (see
// planTiles).

// The tiles family's kernels (kernels/cuda/<family>.cu).
const (
	simtFamily  = entries.SimtFamily  // StrategyTiled
	slabsFamily = entries.SlabsFamily // StrategySplitSlab partials
)

// simtSharedBytes is gemm_simt's dynamic shared memory per block of square
// tiles (two staged k-tiles plus the slab totals; gemm_simt.cu asserts the
// same number), simt64SharedBytes its narrow tiles'. The split-slab kernels
// use 33 KiB (square) or 25 KiB (narrow) of static shared memory.
const (
	simtThreads       = 256
	simtSharedBytes   = 99328
	simt64SharedBytes = 58368
	slabsThreads      = 256
)

// tiledBlocksPerSM is how many blocks of the tiled kernels an SM runs at
// once (98 KiB of shared memory, 128 registers a thread).
const tiledBlocksPerSM = 2

// The tiles family's lookup tables, from the entry descriptions.
var (
	simtIDs    = indexOf(func(k entries.Key) kernelKey { return kernelKey{layoutOf(k.Layout), dtypeOf(k.In), dtypeOf(k.Out)} }, "simt")
	simt64IDs  = indexOf(func(k entries.Key) kernelKey { return kernelKey{layoutOf(k.Layout), dtypeOf(k.In), dtypeOf(k.Out)} }, "simt64")
	slabsIDs   = indexOf(func(k entries.Key) slabsKey { return slabsKey{layoutOf(k.Layout), dtypeOf(k.In)} }, "slabs")
	slabs64IDs = indexOf(func(k entries.Key) slabsKey { return slabsKey{layoutOf(k.Layout), dtypeOf(k.In)} }, "slabs64")
)

// familyTiles describes the tiles family. It serves every op; its plan
// (planTiles) is the time model's choice among its configurations; the
// tiled grid's tail cut is settled once the family has won (finishTiles).
var familyTiles = &family{
	name:    "tiles",
	layouts: layoutsOf(layoutNN, layoutNT, layoutTN),
	class:   classModel,
	admits: func(f filter) bool {
		return f.strategy == 0 || f.strategy == StrategyTiled || f.strategy == StrategySplitSlab
	},
	plan:   planTiles,
	finish: finishTiles,
	launch: func(l launcher, p problem, pl plan) error {
		if pl.strategy == StrategySplitSlab {
			if err := l.slabs(&p, &pl); err != nil {
				return err
			}
			return l.fold(&p, &pl)
		}
		return l.tiled(&p, &pl)
	},
}

// planTiles is the tiles family's plan for the tile problem C[rows, cols]
// = A(rows, red) · B(red, cols) of p: split-slab or tiled, and the tile
// width, by modelled time (grids.pick: the model counts the grid's
// quantisation over the SMs, the narrow tile's cost per slab and the
// fold's memory traffic). Split-slab needs S ≥ 2, the workspace at most
// maxWorkspaceBytes and a modelled gain of at least splitMinGainPct over
// tiled; narrow tiles are scored only where the square grid underfills one
// wave (fewer tiles than block slots), so full grids keep square tiles,
// and are taken only with a modelled gain of at least splitMinGainPct over
// the square choice; a square choice gives way, with the same margin, to
// the square tiled grid whose short last round runs split-slab
// (grids.splitTail). Each margin is against the configuration before it,
// not against the best so far, so no single cost per configuration
// orders them: the family compares its own configurations, and its cost
// is the chosen one's modelled time.
//
// A filter pins the strategy (f.strategy), the width (f.width), split-slab's
// slabs a block (f.perBlock) and, for square tiled, the split tail
// wherever the grid has one (f.splitTail, on f.tailSMs SMs); a pinned plan
// is the only candidate, so its cost is not modelled.
func planTiles(d *device, p problem, f filter) (pl plan, c cost, ok bool, err error) {
	rows, cols, red := p.rows, p.cols, p.red
	pl = plan{strategy: StrategyTiled, slabs: ceilDiv(red, ref.SlabLen), width: squareWidth}
	ws, wsOK := workspaceBytes(rows, cols, red)
	out, _ := mulOK(rows, cols)
	g := grids{rows: rows, cols: cols, slabs: pl.slabs, out: out, sms: int64(max(d.sms, 1)), acc: p.layout == layoutTN,
		splitOK: pl.slabs >= 2 && wsOK && ws <= maxWorkspaceBytes}

	switch f.width {
	case 0, squareWidth:
	case narrowWidth:
		if ceilDiv(cols, narrowWidth) > maxGridYZ {
			return pl, cost{}, false, fmt.Errorf("%w: %d columns need more than %d narrow tiles", errStrategy, cols, maxGridYZ)
		}
	default:
		return pl, cost{}, false, fmt.Errorf("%w: tile width %d", errStrategy, f.width)
	}

	c = cost{class: classModel}
	switch f.strategy {
	case 0:
		var t int64
		pl.strategy, pl.width, pl.perBlock, t = g.pick(f.width)
		if pl.width == squareWidth {
			// The square choice against the square grid with a split tail.
			if row, gb, tc := g.splitTail(); gb > 0 && tc*100 <= t*(100-splitMinGainPct) {
				pl.strategy, pl.perBlock, pl.tailRow, pl.tailG, t = StrategyTiled, 0, row, gb, tc
			}
		}
		c.time = float64(t)
	case StrategyTiled:
		if f.width != 0 {
			pl.width = f.width
		}
		if f.splitTail && pl.width == squareWidth {
			tg := g
			if f.tailSMs > 0 {
				tg.sms = f.tailSMs
			}
			if row, gb, _ := tg.splitTail(); gb > 0 {
				pl.tailRow, pl.tailG = row, gb
			}
		}
	case StrategySplitSlab:
		if !wsOK {
			return pl, cost{}, false, fmt.Errorf("%w: split-slab workspace overflows", errStrategy)
		}
		if f.width != 0 {
			pl.width = f.width
		}
		gb := f.perBlock
		if gb <= 0 {
			if gb, _ = g.split(pl.width); gb <= 0 {
				gb = 1
			}
		}
		if ceilDiv(pl.slabs, gb) > maxGridYZ {
			return pl, cost{}, false, fmt.Errorf("%w: %d slabs in blocks of %d exceed grid.z", errStrategy, pl.slabs, gb)
		}
		pl.strategy, pl.perBlock = StrategySplitSlab, gb
	}

	switch {
	case pl.strategy == StrategySplitSlab:
		pl.perBlock = min(pl.perBlock, pl.slabs)
		pl.groups = ceilDiv(pl.slabs, pl.perBlock)
		pl.ws = ws
	case pl.tailRow > 0:
		pl.ws, _ = workspaceBytes(rows-pl.tailRow, cols, red)
	}
	return pl, c, true, nil
}

// finishTiles cuts a tiled grid without a split tail whose last round is
// short (tiledCut): the plan's launches, never its family or strategy.
func finishTiles(d *device, p problem, f filter, pl plan) (plan, error) {
	if pl.strategy == StrategyTiled && pl.tailRow == 0 {
		pl.cut, pl.cutK = d.tiledCut(&p, &pl, &f)
	}
	return pl, nil
}

// The tile widths of the tiled and split-slab kernels (simt_tile.cuh's BN):
// square 128×128 tiles, and narrow 128×64 ones, which give twice the blocks
// where the square grid underfills the GPU. Both run the same chains.
const (
	squareWidth = tileCols
	narrowWidth = 64
)

// The time model that picks between tiled and split-slab and the tile
// width, in units of one slab of one 128×128 tile on an SM that runs two
// such blocks at once:
//   - an SM runs its blocks two at a time; a block alone on its SM runs its
//     slabs in loneFrac of that time (the SM's throughput barely depends on
//     whether one or two blocks share it), so an SM with c blocks of g slabs
//     takes (⌊c/2⌋ + (c mod 2)·loneFrac)·(g + blockOverhead);
//   - the slowest SM sets the time: the grid's n blocks spread evenly, so
//     it has ⌈n/sms⌉;
//   - narrow 128×64 blocks run three at a time on an SM: an SM with c of
//     them takes (⌊c/3⌋·narrowRound + narrowRest[c mod 3])·(g +
//     blockOverhead) (see smCostW);
//   - split-slab adds the fold: a second launch, then every partial read and
//     the output written (dW: read and written) once. smUnitBytes is what
//     one SM's share of the memory bandwidth moves in one unit.
//
// The constants are a least-squares fit to timings of every strategy and
// G on the bench's shapes (bench/NOTES-simt.md, rounds 2, 5 and 11; the
// fit and its error in bench/NOTES-engine.md, tiles.go). Times are in
// hundredths of a unit so the arithmetic stays in integers.
const (
	loneFrac      = 60      // hundredths
	blockOverhead = 3       // hundredths of a slab: prologue, pipeline fill, epilogue
	smUnitBytes   = 1490000 // bytes per SM per unit
	foldLaunch    = 12      // hundredths: the second launch
	// splitMinGainPct: split only when the model gains at least this much
	// over tiled, and narrow the tiles only when it gains this much over
	// the square choice.
	splitMinGainPct = 5
	// narrowRound is the time, in hundredths of a unit, an SM takes to run
	// one slab of each of three 128×64 blocks at once (bench/NOTES-simt.md,
	// round 5).
	narrowRound = 88
)

// narrowRest is the time, in hundredths of a unit, an SM takes for one
// slab of its last 0, 1 or 2 narrow blocks (a round of fewer than three).
var narrowRest = [3]int64{0, 37, 59}

// grids is a tile problem as the time model sees it: the output (rows ×
// cols, out elements), S slabs, the GPU's SMs, whether the fold
// accumulates (dW), and whether split-slab may run it.
type grids struct {
	rows, cols, slabs, out, sms int64
	acc, splitOK                bool
}

// tiles is the number of output tiles of width w.
func (g grids) tiles(w int64) int64 {
	return ceilDiv(g.rows, tileRows) * ceilDiv(g.cols, w)
}

// smCostW is smCost for blocks of width w: the square tiles' model, or
// the narrow tiles' (three blocks an SM).
func smCostW(n, g, sms, w int64) int64 {
	if w != narrowWidth {
		return smCost(n, g, sms)
	}
	c := ceilDiv(n, sms)
	return ((c/3)*narrowRound + narrowRest[c%3]) * (g*100 + blockOverhead) / 100
}

// narrowOK reports whether narrow tiles are scored: the square grid
// underfills one wave of blocks, and the narrow one fits grid.y.
func (g grids) narrowOK() bool {
	return g.tiles(squareWidth) < tiledBlocksPerSM*g.sms && ceilDiv(g.cols, narrowWidth) <= maxGridYZ
}

// split is the best split-slab G for tiles of width w and its modelled
// cost (fold included); g = 0 when split-slab cannot run.
func (g grids) split(w int64) (int64, int64) {
	if !g.splitOK {
		return 0, 0
	}
	gb, c := splitSlabsCost(g.tiles(w), g.slabs, g.sms, w)
	return gb, c + foldCost(g.slabs, g.out, g.sms, g.acc)
}

// splitTail models the square tiled grid cut at whole row tiles after its
// last whole round of two blocks an SM, the head run tiled and the tail
// rows split-slab (the tail's own best G) then folded: a tiled grid with a
// short last round and a long reduction otherwise spends that round's
// whole reduction on a few SMs (dW 4096×1536×3072: 288 tiles of 16 slabs,
// 264 + 24). Only a row cut: the fold writes the tail's rows as one
// contiguous range. It returns the first tail row, G and the modelled cost;
// gb = 0 where the grid has no such tail or split-slab cannot run.
func (g grids) splitTail() (row, gb, cost int64) {
	tx, ty := ceilDiv(g.rows, tileRows), ceilDiv(g.cols, squareWidth)
	tiles, slots := tx*ty, tiledBlocksPerSM*g.sms
	if !g.splitOK || tiles <= slots || tiles%slots == 0 {
		return 0, 0, 0
	}
	k := (tiles - tiles%slots) / ty // head row tiles: whole rounds at most
	if k < 1 || k >= tx {
		return 0, 0, 0
	}
	row = k * tileRows
	gb, c := splitSlabsCost((tx-k)*ty, g.slabs, g.sms, squareWidth)
	if gb == 0 {
		return 0, 0, 0
	}
	cost = smCost(k*ty, g.slabs, g.sms) + c + foldCost(g.slabs, (g.rows-row)*g.cols, g.sms, g.acc)
	return row, gb, cost
}

// pick is the model's choice and its modelled cost: square tiles, tiled
// unless split-slab models at least splitMinGainPct faster; then, where
// narrowOK, the faster of narrow tiled and narrow split-slab, taken only
// when it models at least splitMinGainPct below the square choice (the
// narrow kernels' cost varies more from shape to shape:
// bench/NOTES-simt.md, round 5). w, when not 0, pins the width.
func (g grids) pick(w int64) (s Strategy, width, perBlock, cost int64) {
	if w != 0 {
		s, perBlock, cost = g.pickFor(w, splitMinGainPct)
		return s, w, perBlock, cost
	}
	s, perBlock, cost = g.pickFor(squareWidth, splitMinGainPct)
	width = squareWidth
	if g.narrowOK() {
		if ns, ng, nc := g.pickFor(narrowWidth, 0); nc*100 <= cost*(100-splitMinGainPct) {
			s, width, perBlock, cost = ns, narrowWidth, ng, nc
		}
	}
	return s, width, perBlock, cost
}

// pickFor is tiled or split-slab for tiles of width w: split-slab (at its
// best G) when it models at least gainPct below tiled; and the modelled
// cost of the choice.
func (g grids) pickFor(w, gainPct int64) (s Strategy, perBlock, cost int64) {
	s, cost = StrategyTiled, smCostW(g.tiles(w), g.slabs, g.sms, w)
	if gb, c := g.split(w); gb > 0 && c*100 <= cost*(100-gainPct) && c < cost {
		s, perBlock, cost = StrategySplitSlab, gb, c
	}
	return s, perBlock, cost
}

// smCost is the modelled time, in hundredths of a unit, of n blocks of g
// slabs each on sms SMs.
func smCost(n, g, sms int64) int64 {
	c := ceilDiv(n, sms)
	return ((c/2)*100 + (c%2)*loneFrac) * (g*100 + blockOverhead) / 100
}

// foldCost is the modelled time of the fold of S partials of an output of
// out elements.
func foldCost(S, out, sms int64, accumulate bool) int64 {
	S, _ = mulOK(S, out)
	bytes := S*4 + out*4 // partials read, output written
	if accumulate {
		bytes += out * 4 // dW reads the old value too
	}
	return foldLaunch + bytes/(sms*smUnitBytes/100)
}

// splitSlabsCost is the G of least modelled block time (fold not counted:
// it does not depend on G) for tiles of width w, and that time.
func splitSlabsCost(tiles, S, sms, w int64) (best, bestCost int64) {
	sms = max(sms, 1)
	// Every distinct G, largest first: z is the least grid for G = ⌈S/z⌉,
	// and ⌈S/(G-1)⌉ the least grid of the next smaller G (O(√S) steps).
	for z := int64(1); z <= maxGridYZ; {
		gz := ceilDiv(S, z)
		if n, ok := mulOK(tiles, ceilDiv(S, gz)); ok {
			if c := smCostW(n, gz, sms, w); best == 0 || c < bestCost {
				best, bestCost = gz, c
			}
		}
		if gz == 1 {
			break
		}
		z = ceilDiv(S, gz-1)
	}
	return best, bestCost
}

// tiledGeometry is the shared memory of gemm_simt's tiles of a width and
// the blocks an SM holds by their registers.
func tiledGeometry(width int64) (shared uint32, regBlocks int64) {
	if width == narrowWidth {
		return simt64SharedBytes, simt64RegBlocks
	}
	return simtSharedBytes, simtRegBlocks
}

// tiledKernel is the tiled kernel of a width: gemm_simt's square
// (detgemm_simt_*) or narrow (detgemm_simt64_*) tiles.
func tiledKernel(p *problem, width int64) kernelID {
	if width == narrowWidth {
		return simt64IDs[kernelKey{p.layout, p.in, p.out}]
	}
	return simtIDs[kernelKey{p.layout, p.in, p.out}]
}

// tiled: gemm_simt, grid (row tiles, column tiles). A plan with a split
// tail runs its last rows split-slab; one with a cut (tiledTail) runs the
// grid's short last round in a launch of its own.
func (l launcher) tiled(p *problem, pl *plan) error {
	id := tiledKernel(p, pl.width)
	shared, _ := tiledGeometry(pl.width)
	if err := l.need(p, id); err != nil {
		return err
	}
	ty := ceilDiv(p.cols, pl.width)
	if pl.tailRow > 0 {
		// The plan's split tail: head rows tiled, the rest split-slab and
		// folded (grids.splitTail); the workspace holds the tail's partials.
		head, tail := p.split(cutRows, pl.tailRow)
		if err := l.tileGrid(&head, id, ty, shared, pl.width); err != nil {
			return err
		}
		tp := plan{strategy: StrategySplitSlab, slabs: pl.slabs, perBlock: pl.tailG,
			groups: ceilDiv(pl.slabs, pl.tailG), width: squareWidth}
		if err := l.slabs(&tail, &tp); err != nil {
			return err
		}
		return l.fold(&tail, &tp)
	}
	if pl.cut == cutNone {
		return l.tileGrid(p, id, ty, shared, pl.width)
	}
	at, headTY, tailTY := pl.cutK*tileRows, ty, ty
	if pl.cut == cutCols {
		at, headTY, tailTY = pl.cutK*pl.width, pl.cutK, ty-pl.cutK
	}
	head, tail := p.split(pl.cut, at)
	if err := l.tileGrid(&head, id, headTY, shared, pl.width); err != nil {
		return err
	}
	return l.tileGrid(&tail, id, tailTY, l.e.loneShared, pl.width)
}

// tileGrid launches one tiled kernel over all of p's row tiles and ty
// column tiles of width w, with shared bytes of dynamic shared memory.
func (l launcher) tileGrid(p *problem, id kernelID, ty int64, shared uint32, w int64) error {
	l.e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(cudaload.DevicePtr(p.c)).Ptr(cudaload.DevicePtr(p.bias)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb).Int64(p.ldc)
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.rows, tileRows)), Y: uint32(ty), Z: 1}
	return l.launch(p, id, grid, simtThreads, shared, tileRows, w)
}

// tiledCut is the cut of a tiled plan without a split tail (tiledTail):
// none unless a block can be kept alone on its SM (loneShared); f.tailSMs
// stands in for the SM count.
func (e *device) tiledCut(p *problem, pl *plan, f *filter) (cut int, k int64) {
	shared, regBlocks := tiledGeometry(pl.width)
	if e.loneShared <= shared {
		return cutNone, 0
	}
	sms := int64(e.sms)
	if f.tailSMs > 0 {
		sms = f.tailSMs
	}
	return tiledTail(ceilDiv(p.rows, tileRows), ceilDiv(p.cols, pl.width), blocksPerSM(shared, regBlocks, e.smemPerSM), sms)
}

// The blocks of a tiled kernel one SM holds by its launch bounds
// (registers); shared memory may allow fewer (blocksPerSM).
const (
	simtRegBlocks   int64 = 2
	simt64RegBlocks int64 = 3
)

// reservedSharedPerBlock is the shared memory the driver sets aside for
// every resident block (sm_80 and later).
const reservedSharedPerBlock = 1024

// blocksPerSM is how many blocks of a kernel with shared bytes of dynamic
// shared memory and regBlocks blocks' worth of registers an SM runs at once.
func blocksPerSM(shared uint32, regBlocks int64, perSM uint32) int64 {
	return min(regBlocks, int64(perSM)/(int64(shared)+reservedSharedPerBlock))
}

// loneShared is the least dynamic shared memory that keeps a block alone
// on its SM (two would need more than the SM has), or 0 where one block may
// not take that much (optin).
func loneShared(perSM, optin int) uint32 {
	need := perSM/2 - reservedSharedPerBlock + 1
	if need <= 0 || need > optin {
		return 0
	}
	return uint32(need)
}

// The ways tiledTail cuts a grid.
const (
	cutNone = iota
	cutCols // the head is column tiles [0, k)
	cutRows // the head is row tiles [0, k)
)

// tiledTail decides whether the tiled grid of tx × ty blocks (x: row tiles,
// y: column tiles), perSM of which run at once on each of sms SMs, runs as
// two launches. A grid that fills whole rounds of perSM·sms blocks and ends
// in a partial round of at most sms blocks would best run that round one
// block per SM, but the hardware starts each block where a slot frees
// first, and it has been seen to double them up on some SMs while others
// idle (bench/NOTES-engine.md, tiles.go). So whole column (or row) tiles are cut off the end,
// at most sms blocks, and launched after the rest with loneShared bytes of
// shared memory, which no SM can hold twice. The cut is the one with the
// smaller tail (columns on a tie); cutNone where the grid has no such
// partial round or no cut gives a tail of at most sms blocks. Bits do not
// change: every element's chain is the same in any launch.
func tiledTail(tx, ty, perSM, sms int64) (cut int, k int64) {
	tiles, slots := tx*ty, perSM*sms
	if perSM < 2 || tiles <= slots {
		return cutNone, 0
	}
	r := tiles % slots
	if r == 0 || r > sms {
		return cutNone, 0
	}
	full := tiles - r
	best, bestTail := cutNone, int64(0)
	try := func(c int, per, count int64) {
		kk := full / per
		if kk < 1 || kk >= count {
			return
		}
		tail := tiles - kk*per
		if tail <= sms && (best == cutNone || tail < bestTail) {
			best, bestTail, k = c, tail, kk
		}
	}
	try(cutCols, tx, ty)
	try(cutRows, ty, tx)
	return best, k
}

// split returns p restricted to its output columns (cutCols) or rows
// (cutRows) before at, and to those from at on with the pointers moved
// there.
func (p problem) split(cut int, at int64) (head, tail problem) {
	head, tail = p, p
	in, out := int64(p.in.Size()), int64(p.out.Size())
	if cut == cutCols {
		head.cols, tail.cols = at, p.cols-at
		step := in // B(r, j) = W[r, j]
		if p.layout == layoutNT {
			step = p.ldb * in // B(r, j) = W[j, r]
		}
		tail.b += uintptr(at * step)
		tail.c += uintptr(at * out)
		if p.bias != 0 {
			tail.bias += uintptr(at * 4)
		}
		return head, tail
	}
	head.rows, tail.rows = at, p.rows-at
	step := p.lda * in // A(i, r) = X[i, r]
	if p.layout == layoutTN {
		step = in // A(i, r) = X[r, i]
	}
	tail.a += uintptr(at * step)
	tail.c += uintptr(at * p.ldc * out)
	return head, tail
}

// slabs: gemm_slabs, grid (row tiles, column tiles, slab groups), tiles
// 128 wide (detgemm_slabs_*) or 64 (detgemm_slabs64_*).
func (l launcher) slabs(p *problem, pl *plan) error {
	id := slabsIDs[slabsKey{p.layout, p.in}]
	if pl.width == narrowWidth {
		id = slabs64IDs[slabsKey{p.layout, p.in}]
	}
	if err := l.need(p, id); err != nil {
		return err
	}
	l.e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(l.e.ws.ptr).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb).Int64(pl.perBlock)
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.rows, tileRows)), Y: uint32(ceilDiv(p.cols, pl.width)), Z: uint32(pl.groups)}
	return l.launch(p, id, grid, slabsThreads, 0, tileRows, pl.width)
}

// kernelKey names a tiled (gemm_simt) entry point: layout, input, output.
type kernelKey struct {
	layout  layout
	in, out DType
}

func (k kernelKey) simtName() string {
	return fmt.Sprintf("detgemm_simt_%v_%v_%v", k.layout, k.in, k.out)
}

// simt64Name is the entry point of the same kernel with 128×64 tiles.
func (k kernelKey) simt64Name() string {
	return fmt.Sprintf("detgemm_simt64_%v_%v_%v", k.layout, k.in, k.out)
}

// slabsKey names a split-slab partials kernel; partials are f32 whatever
// the output type.
type slabsKey struct {
	layout layout
	in     DType
}

func (k slabsKey) name() string { return fmt.Sprintf("detgemm_slabs_%v_%v", k.layout, k.in) }

// name64 is the entry point of the same kernel with 128×64 tiles.
func (k slabsKey) name64() string { return fmt.Sprintf("detgemm_slabs64_%v_%v", k.layout, k.in) }
