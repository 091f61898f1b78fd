package gemm

import (
	"fmt"

	"github.com/detgemm/detgemm/gemm/ref"
)

// Dispatch parameters. They decide speed only.
const (
	// rowsMaxM is the largest M the rows strategy takes. Each W element
	// feeds M fused multiply-adds: up to 32 rows the product stays near the
	// memory roofline (f32: 32 FMA per 4 bytes is about a Hopper GPU's
	// FMA-to-bandwidth ratio), while a 128-row tile would waste three quarters of
	// its work on padding rows.
	rowsMaxM = 32
	// tiledBlocksPerSM is how many blocks of the tiled kernels an SM runs at
	// once (98 KiB of shared memory, 128 registers a thread).
	tiledBlocksPerSM = 2
	// maxWorkspaceBytes caps the workspace an IEEE strategy may need; a
	// shape needing more runs tiled. 512 MiB admits the split of the
	// mid-size dW shapes (4096×1536×3072: 16 slabs of 1536×3072 partials,
	// 302 MB). The tensor-core tier's cut plans are not capped (tc_plan.go).
	maxWorkspaceBytes = 512 << 20
)

// The tile widths of the tiled and split-slab kernels (simt_tile.cuh's BN):
// square 128×128 tiles, and narrow 128×64 ones, which give twice the blocks
// where the square grid underfills the GPU. Both run the same chains.
const (
	squareWidth = tileCols
	narrowWidth = 64
)

// workspaceBytes is the workspace of the strategies that write slab
// partials: S·rows·cols f32, laid out [S][rows][cols]. It is a function of
// the shape alone; it returns ok = false when the product overflows.
func workspaceBytes(rows, cols, red int64) (uint64, bool) {
	s := uint64(ref.Slabs(int(red)))
	n := s * uint64(rows)
	if rows != 0 && n/uint64(rows) != s {
		return 0, false
	}
	b := n * uint64(cols)
	if cols != 0 && b/uint64(cols) != n {
		return 0, false
	}
	if b > (1<<62)/4 {
		return 0, false
	}
	return b * 4, true
}

// choose decides how to run the tile problem C[rows, cols] = A(rows, red) ·
// B(red, cols) in layout l on a GPU with sms multiprocessors:
//
//  0. Stream: DW with M ≤ streamMaxM = 96 (and at most 65535 blocks of
//     dW rows), in 32-row blocks for M ≤ 16, 64-row ones beyond
//     (streamRowsFor).
//  1. Rows: Forward or DX (never DW, whose reduction is M) with
//     rows ≤ 32, when the workspace is at most 512 MiB and S ≤ 65535. The
//     rows per block MR is 4 (rows ≤ 4), 16 (≤ 16) or 32.
//  2. Split-slab or tiled, and the tile width, by modelled time (see
//     grids.pick: the model counts the grid's quantisation over the SMs,
//     the narrow tile's cost per slab and the fold's memory traffic).
//     Split-slab needs S ≥ 2 and the workspace at most 512 MiB and a
//     modelled gain of at least 5 % over tiled; narrow tiles are scored
//     only where the square grid underfills one wave (fewer tiles than
//     block slots), so full grids keep square tiles, and are taken only
//     with a modelled gain of at least 5 % over the square choice.
//  3. Square tiled otherwise.
//
// The choice may depend on M and on the GPU, because every strategy gives
// the same bits. f, when set, overrides the choice (tests).
func choose(l layout, rows, cols, red int64, sms int, f *filter) (plan, error) {
	p := plan{strategy: StrategyTiled, slabs: (red + ref.SlabLen - 1) / ref.SlabLen, width: squareWidth}
	ws, wsOK := workspaceBytes(rows, cols, red)
	mr := int64(rowsMR(rows))
	rowsOK := l != layoutTN && p.slabs <= maxGridYZ && (rows+mr-1)/mr <= maxGridYZ && wsOK
	smCount := int64(max(sms, 1))
	acc := l == layoutTN
	out, _ := mulOK(rows, cols)
	g := grids{rows: rows, cols: cols, slabs: p.slabs, out: out, sms: smCount, acc: acc,
		splitOK: p.slabs >= 2 && wsOK && ws <= maxWorkspaceBytes}

	switch f.width {
	case 0, squareWidth:
	case narrowWidth:
		if ceilDiv(cols, narrowWidth) > maxGridYZ {
			return plan{}, fmt.Errorf("%w: %d columns need more than %d narrow tiles", errStrategy, cols, maxGridYZ)
		}
	default:
		return plan{}, fmt.Errorf("%w: tile width %d", errStrategy, f.width)
	}

	switch f.strategy {
	case 0:
		switch {
		case streamFits(l, rows, red, streamShort) && red <= streamMaxM:
			p.strategy, p.sr = StrategyStream, streamRowsFor(red)
		case rowsOK && rows <= rowsMaxM && ws <= maxWorkspaceBytes:
			p.strategy = StrategyRows
		default:
			p.strategy, p.width, p.perBlock = g.pick(f.width)
			if p.width == squareWidth {
				// The square choice against the square grid with a split tail.
				_, _, cost := g.pickFor(squareWidth, splitMinGainPct)
				if row, gb, c := g.splitTail(); gb > 0 && c*100 <= cost*(100-splitMinGainPct) {
					p.strategy, p.perBlock, p.tailRow, p.tailG = StrategyTiled, 0, row, gb
				}
			}
		}
	case StrategyTiled:
		if f.width != 0 {
			p.width = f.width
		}
		if f.splitTail && p.width == squareWidth {
			tg := g
			if f.tailSMs > 0 {
				tg.sms = f.tailSMs
			}
			if row, gb, _ := tg.splitTail(); gb > 0 {
				p.tailRow, p.tailG = row, gb
			}
		}
	case StrategyRows:
		if !rowsOK {
			return plan{}, fmt.Errorf("%w: rows needs nn or nt, S ≤ %d, at most %d row groups and a countable workspace (layout %v, S = %d, rows = %d)", errStrategy, maxGridYZ, maxGridYZ, l, p.slabs, rows)
		}
		p.strategy = StrategyRows
	case StrategyStream:
		sr := f.streamRows
		if sr == 0 {
			sr = streamRowsFor(red)
		}
		if (sr != streamTall && sr != streamShort) || !streamFits(l, rows, red, sr) {
			return plan{}, fmt.Errorf("%w: stream needs dW, M ≤ 2^30 and at most %d blocks of %d or %d rows (layout %v, rows = %d, M = %d, block rows %d)",
				errStrategy, maxGridYZ, streamTall, streamShort, l, rows, red, sr)
		}
		p.strategy, p.sr = StrategyStream, sr
	case StrategySplitSlab:
		if !wsOK {
			return plan{}, fmt.Errorf("%w: split-slab workspace overflows", errStrategy)
		}
		p.width = squareWidth
		if f.width != 0 {
			p.width = f.width
		}
		gb := f.perBlock
		if gb <= 0 {
			if gb, _ = g.split(p.width); gb <= 0 {
				gb = 1
			}
		}
		if (p.slabs+gb-1)/gb > maxGridYZ {
			return plan{}, fmt.Errorf("%w: %d slabs in blocks of %d exceed grid.z", errStrategy, p.slabs, gb)
		}
		p.strategy, p.perBlock = StrategySplitSlab, gb
	default:
		return plan{}, fmt.Errorf("%w: %v", errStrategy, f.strategy)
	}

	switch p.strategy {
	case StrategyStream:
		p.width = 0
	case StrategyRows:
		p.width = 0
		p.mr = rowsMR(rows)
		p.cn = rowsCN(p.mr)
		p.ws = ws
		p.ctrs = rowsCounterBytes(rows, cols, p.mr)
	case StrategySplitSlab:
		p.perBlock = min(p.perBlock, p.slabs)
		p.groups = (p.slabs + p.perBlock - 1) / p.perBlock
		p.ws = ws
	case StrategyTiled:
		if p.tailRow > 0 {
			p.ws, _ = workspaceBytes(rows-p.tailRow, cols, red)
		}
	}
	return p, nil
}

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
// fit and its error in bench/NOTES-engine.md, dispatch.go). Times are in
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

// pick is the model's choice: square tiles, tiled unless split-slab models
// at least splitMinGainPct faster; then, where narrowOK, the faster of
// narrow tiled and narrow split-slab, taken only when it models at least
// splitMinGainPct below the square choice (the narrow kernels' cost varies
// more from shape to shape: bench/NOTES-simt.md, round 5). w, when not 0,
// pins the width.
func (g grids) pick(w int64) (s Strategy, width, perBlock int64) {
	if w != 0 {
		s, perBlock, _ = g.pickFor(w, splitMinGainPct)
		return s, w, perBlock
	}
	s, perBlock, cost := g.pickFor(squareWidth, splitMinGainPct)
	width = squareWidth
	if g.narrowOK() {
		if ns, ng, nc := g.pickFor(narrowWidth, 0); nc*100 <= cost*(100-splitMinGainPct) {
			s, width, perBlock = ns, narrowWidth, ng
		}
	}
	return s, width, perBlock
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

// rowsMR is the rows-per-block configuration of the rows kernels.
func rowsMR(rows int64) int {
	switch {
	case rows <= 4:
		return 4
	case rows <= 16:
		return 16
	}
	return 32
}

// rowsCN is the columns each thread of a rows kernel owns (gemm_rows.cu's
// entry points pair them with MR): one for every MR, which gives the most
// blocks, and so the most loads in flight, at the small M the rows
// strategy is for.
func rowsCN(mr int) int { return 1 }

// rowsThreads is the block size of the rows kernels.
const rowsThreads = 128

// rowsSharedBytes is gemm_rows.cu's Geo<DT, MR, CN>::SMEM: the block's rows
// of A over one slab in f32, then two staged chunks of B in the input type.
// The kernel traps when launched with less.
func rowsSharedBytes(in DType, mr, cn int) uint32 {
	es := in.Size()
	rc := 64 / cn
	if in == F32 || cn > 1 {
		rc = 32 / cn
	}
	pad := 2
	if in == F32 {
		pad = 1
	}
	jt := rowsThreads * cn
	bs := (2*rc*(jt+pad)*es + 15) / 16 * 16
	return uint32(mr*ref.SlabLen*4 + bs)
}

// The one-launch rows kernels (gemm_rows.cu, namespace rowsf): 64, 256 or
// 128 compute threads (MR = 4, 16, 32), each owning 4 columns and MT rows
// (MT = 8 for MR = 32, else 4); W streamed through four shared-memory
// stages of 16 KiB (8 KiB at MR = 32). At MR = 4 two more warps only copy
// W, into a ring of those stages with a full and an empty mbarrier a stage.

// rowsFusedProducers is gemm_rows.cu's producer_warps(MR).
func rowsFusedProducers(mr int) int {
	if mr == 4 {
		return 2
	}
	return 0
}

// rowsFusedThreads is the block size of the one-launch rows kernel.
func rowsFusedThreads(mr int) int {
	switch mr {
	case 4:
		return 64 + 32*rowsFusedProducers(mr)
	case 16:
		return 256
	}
	return 128
}

// rowsFusedCols is the columns one block of the one-launch rows kernel
// covers: Cfg<DT, MR, NT>::JT, 4 columns a compute thread of a row group.
func rowsFusedCols(mr int) int64 {
	if mr == 32 {
		return 128
	}
	return 256
}

// rowsFusedSharedBytes is Cfg<DT, MR, NT>::SMEM: the block's rows of A over
// one slab in f32 (rows padded to 260 floats), then the staged chunks of B
// in the input type (nn: [KC][JT]; nt: [JT][KC + 16 bytes]), then with
// producer warps a full and an empty mbarrier (8 bytes each) a stage.
func rowsFusedSharedBytes(in DType, mr int, nt bool) uint32 {
	es := in.Size()
	jt := int(rowsFusedCols(mr))
	stage := 16384
	if mr == 32 {
		stage = 8192
	}
	kc := stage / (jt * es)
	elems := kc * jt
	if nt {
		elems = jt * (kc + 16/es)
	}
	bars := 0
	if rowsFusedProducers(mr) > 0 {
		bars = 2 * 4 * 8
	}
	return uint32(mr*(ref.SlabLen+4)*4 + 4*elems*es + bars)
}

// rowsCounterBytes is the arrival counters the one-launch rows kernel
// needs: a u32 per column run and row group (grid.x · grid.z). A function
// of the shape alone, like the workspace; the two-launch path needs none.
func rowsCounterBytes(rows, cols int64, mr int) uint64 {
	return uint64(ceilDiv(cols, rowsFusedCols(mr))) * uint64(ceilDiv(rows, int64(mr))) * 4
}

// The stream strategy's parameters. They decide speed only.
const (
	// streamMaxM is the largest M (dW's reduction) the dispatcher streams:
	// beyond it the tiled kernels, whose inner loop runs nearer the FMA
	// rate, win back the master's prologue they pay (bench/NOTES-dw.md,
	// round 2; bench/NOTES-engine.md, dispatch.go).
	streamMaxM = 96
	// streamStage is gemm_dw_stream.cu's CH: the rows of M one stage holds.
	streamStage = 16
	// streamTall and streamShort are the rows of dW one stream block owns
	// (gemm_dw_stream.cu's BR: 8 or 4 rows a thread, 128 columns).
	streamTall  = 64
	streamShort = 32
	// streamCols is the columns of dW one stream block owns.
	streamCols = 128
	// streamThreads is the stream kernels' block size.
	streamThreads = 256
)

// streamFits reports whether the stream kernel with blocks of sr dW rows
// can run the tile problem: DW (layout tn), M at most 2^30 (the kernel
// counts M in 32 bits), the row blocks within grid.y.
func streamFits(l layout, rows, red, sr int64) bool {
	return l == layoutTN && red <= 1<<30 && ceilDiv(rows, sr) <= maxGridYZ
}

// streamRowsFor is the block height the stream strategy uses for a
// reduction of red rows: 32-row blocks (five an SM, 80 KiB of master in
// flight) while M fits one stage and the call is a pure stream; 64-row
// blocks (three an SM, 96 KiB; 32 fmas per three shared-memory reads
// against 16 per two) beyond, where the fmas start to count
// (bench/NOTES-dw.md, round 2; bench/NOTES-engine.md, dispatch.go).
func streamRowsFor(red int64) int64 {
	if red <= streamStage {
		return streamShort
	}
	return streamTall
}
