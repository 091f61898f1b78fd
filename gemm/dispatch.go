package gemm

import (
	"errors"
	"fmt"

	"github.com/detgemm/detgemm/gemm/ref"
)

// Strategy is how the engine spreads one call over the GPU. Every strategy
// computes the same plan — the same slab chains, folded by the same
// additions in the same order — so the choice never changes a bit of the
// output. It only changes speed and the workspace a call needs.
type Strategy uint8

// The strategies. The zero Strategy means "let the dispatcher choose".
const (
	// StrategyTiled: one kernel (gemm_simt), 128×128 output tiles, each
	// block running every slab of its tile and folding them in place. No
	// workspace. Best when the tiles fill the GPU.
	StrategyTiled Strategy = iota + 1
	// StrategySplitSlab: the slabs of each 128×128 tile are spread over
	// several blocks (gemm_slabs), each slab's partial written to the
	// workspace, then a fold kernel (gemm_fold) adds them in order. For
	// shapes whose tiles underfill the GPU and whose reduction has several
	// slabs.
	StrategySplitSlab
	// StrategyRows: for Forward and DX with few rows (M ≤ 32): one block per
	// slab and run of columns (gemm_rows), W read once, bandwidth-bound;
	// partials to the workspace, then the fold kernel.
	StrategyRows
)

// String returns "tiled", "split-slab", "rows", or "Strategy(n)".
func (s Strategy) String() string {
	switch s {
	case StrategyTiled:
		return "tiled"
	case StrategySplitSlab:
		return "split-slab"
	case StrategyRows:
		return "rows"
	case 0:
		return "auto"
	}
	return fmt.Sprintf("Strategy(%d)", uint8(s))
}

// Dispatch parameters. They decide speed only.
const (
	// rowsMaxM is the largest M the rows strategy takes. Each W element
	// feeds M fused multiply-adds: up to 32 rows the product stays near the
	// memory roofline (f32: 32 FMA per 4 bytes is about the H200's FMA-to-
	// bandwidth ratio), while a 128-row tile would waste three quarters of
	// its work on padding rows.
	rowsMaxM = 32
	// tiledBlocksPerSM is how many blocks of the tiled kernels an SM runs at
	// once (98 KiB of shared memory, 128 registers a thread); a grid of fewer
	// than this many tiles per SM leaves SMs idle.
	tiledBlocksPerSM = 2
	// splitMinGainNum/Den: split only when the modelled time drops to at
	// most 3/4 of the tiled kernel's (the fold and the workspace traffic
	// must be paid for).
	splitMinGainNum = 3
	splitMinGainDen = 4
	// maxWorkspaceBytes caps the workspace a strategy may need; a shape
	// needing more runs tiled.
	maxWorkspaceBytes = 256 << 20
	// maxGridYZ is the launch limit of grid.y and grid.z.
	maxGridYZ = 65535
)

// errStrategy is returned when a forced strategy cannot run a call (tests
// only: the dispatcher never picks one that cannot).
var errStrategy = errors.New("strategy cannot run this call")

// force pins the strategy (tests run every contract check once per
// strategy). perBlock, for split-slab, pins the slabs each block computes.
type force struct {
	strategy Strategy
	perBlock int64
}

// plan is the dispatcher's decision for one call.
type plan struct {
	strategy Strategy
	slabs    int64 // S = ceil(R / 256)
	perBlock int64 // split-slab: slabs per block (G)
	groups   int64 // split-slab: grid.z = ceil(S / G)
	mr, cn   int   // rows: rows per block (MR) and columns per thread (CN)
	ws       uint64
}

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
//  1. Rows: Forward or DX (never DW, whose reduction is M) with
//     rows ≤ 32, when the workspace is at most 256 MiB and S ≤ 65535. The
//     rows per block MR is 4 (rows ≤ 4), 16 (≤ 16) or 32.
//  2. Split-slab: S ≥ 2, fewer than 2·sms output tiles of 128×128, the
//     workspace at most 256 MiB, and the modelled time at most 3/4 of the
//     tiled kernel's (see splitSlabs).
//  3. Tiled otherwise.
//
// The choice may depend on M and on the GPU, because every strategy gives
// the same bits. f, when set, overrides the choice (tests).
func choose(l layout, rows, cols, red int64, sms int, f force) (plan, error) {
	p := plan{strategy: StrategyTiled, slabs: (red + ref.SlabLen - 1) / ref.SlabLen}
	ws, wsOK := workspaceBytes(rows, cols, red)
	mr := int64(rowsMR(rows))
	rowsOK := l != layoutTN && p.slabs <= maxGridYZ && (rows+mr-1)/mr <= maxGridYZ && wsOK
	tiles := ((rows + tileRows - 1) / tileRows) * ((cols + tileCols - 1) / tileCols)
	slots := int64(max(sms, 1)) * tiledBlocksPerSM

	switch f.strategy {
	case 0:
		switch {
		case rowsOK && rows <= rowsMaxM && ws <= maxWorkspaceBytes:
			p.strategy = StrategyRows
		case p.slabs >= 2 && tiles < slots && wsOK && ws <= maxWorkspaceBytes:
			if g, ok := splitSlabs(tiles, p.slabs, slots); ok {
				p.strategy, p.perBlock = StrategySplitSlab, g
			}
		}
	case StrategyTiled:
	case StrategyRows:
		if !rowsOK {
			return plan{}, fmt.Errorf("%w: rows needs nn or nt, S ≤ %d, at most %d row groups and a countable workspace (layout %v, S = %d, rows = %d)", errStrategy, maxGridYZ, maxGridYZ, l, p.slabs, rows)
		}
		p.strategy = StrategyRows
	case StrategySplitSlab:
		if !wsOK {
			return plan{}, fmt.Errorf("%w: split-slab workspace overflows", errStrategy)
		}
		g := f.perBlock
		if g <= 0 {
			if g, _ = splitSlabs(tiles, p.slabs, slots); g <= 0 {
				g = 1
			}
		}
		if (p.slabs+g-1)/g > maxGridYZ {
			return plan{}, fmt.Errorf("%w: %d slabs in blocks of %d exceed grid.z", errStrategy, p.slabs, g)
		}
		p.strategy, p.perBlock = StrategySplitSlab, g
	default:
		return plan{}, fmt.Errorf("%w: %v", errStrategy, f.strategy)
	}

	switch p.strategy {
	case StrategyRows:
		p.mr = rowsMR(rows)
		p.cn = rowsCN(p.mr)
		p.ws = ws
	case StrategySplitSlab:
		p.perBlock = min(p.perBlock, p.slabs)
		p.groups = (p.slabs + p.perBlock - 1) / p.perBlock
		p.ws = ws
	}
	return p, nil
}

// splitSlabs picks G, the slabs each split-slab block computes, for a grid
// of tiles output tiles, S slabs and slots blocks running at once. The
// model counts time in block-slabs: a grid of n blocks of G slabs takes
// ceil(n / slots) waves of (G + 1/4) (a quarter slab of set-up and partial
// stores per block); the tiled kernel takes ceil(tiles / slots) waves of
// (S + 1/4). Candidates: the largest group count that fits in w = 1..4
// waves, and one slab per block. ok is false when no candidate gains at
// least a quarter.
func splitSlabs(tiles, S, slots int64) (g int64, ok bool) {
	cost := func(g int64) int64 {
		z := (S + g - 1) / g
		return ceilDiv(tiles*z, slots) * (4*g + 1)
	}
	tiled := ceilDiv(tiles, slots) * (4*S + 1)
	best, bestCost := int64(0), int64(0)
	try := func(g int64) {
		g = max(1, min(g, S))
		if (S+g-1)/g > maxGridYZ {
			return
		}
		if c := cost(g); best == 0 || c < bestCost || (c == bestCost && g > best) {
			best, bestCost = g, c
		}
	}
	for w := int64(1); w <= 4; w++ {
		if z := w * slots / tiles; z >= 1 {
			try(ceilDiv(S, z))
		}
	}
	try(1)
	if best == 0 {
		return 0, false
	}
	return best, bestCost*splitMinGainDen <= tiled*splitMinGainNum
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

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
// entry points pair them with MR).
func rowsCN(mr int) int {
	if mr == 4 {
		return 1
	}
	return 2
}

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
