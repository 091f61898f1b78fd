package gemm

import (
	"errors"
	"fmt"

	"github.com/detgemm/detgemm/gemm/ref"
)

// The planner's vocabulary, shared by every kernel family and the engine:
// the strategies, the filter that narrows a choice, and the plan — one
// type for the IEEE and the tensor-core tiers.

// Strategy is how the engine spreads one call over the GPU. Every strategy
// computes the same plan — the same slab chains, folded by the same
// additions in the same order — so the choice never changes a bit of the
// output. It only changes speed and the workspace a call needs.
type Strategy uint8

// The strategies. The zero Strategy means "let the dispatcher choose".
const (
	// StrategyTiled: one kernel (gemm_simt), 128×128 output tiles (128×64
	// where the square tiles underfill the GPU), each block running every
	// slab of its tile and folding them in place. No workspace. Best when
	// the tiles fill the GPU.
	StrategyTiled Strategy = iota + 1
	// StrategySplitSlab: the slabs of each 128×128 (or 128×64) tile are
	// spread over several blocks (gemm_slabs), each slab's partial written
	// to the workspace, then a fold kernel (gemm_fold) adds them in order.
	// For shapes whose tiles underfill the GPU and whose reduction has
	// several slabs.
	StrategySplitSlab
	// StrategyRows: for Forward and DX with few rows (M ≤ 32): one block per
	// slab and run of columns (gemm_rows), W read once, bandwidth-bound;
	// partials to the workspace, folded in slab order by the last block of
	// each run to finish (one launch), or, when W is not 16-byte aligned,
	// by the fold kernel (two launches).
	StrategyRows
	// StrategyStream: dW with a short reduction (M ≤ 96): one kernel
	// (gemm_dw_stream) streams the f32 master once, each block copying its
	// 64×128 (M > 16) or 32×128 (M ≤ 16) tile of dW to shared memory
	// asynchronously while it runs the slab chains over M from rows of X and
	// dY staged there, then folding each slab onto the copied values and
	// storing. No workspace. dW only.
	StrategyStream
)

// String returns "tiled", "split-slab", "rows", "stream", "auto" (0), or
// "Strategy(n)".
func (s Strategy) String() string {
	switch s {
	case StrategyTiled:
		return "tiled"
	case StrategySplitSlab:
		return "split-slab"
	case StrategyRows:
		return "rows"
	case StrategyStream:
		return "stream"
	case 0:
		return "auto"
	}
	return fmt.Sprintf("Strategy(%d)", uint8(s))
}

// maxGridYZ is the launch limit of grid.y and grid.z.
const maxGridYZ = 65535

// errStrategy is returned when a forced strategy cannot run a call (tests
// only: the dispatcher never picks one that cannot).
var errStrategy = errors.New("strategy cannot run this call")

// filter narrows the planner's choice to the kernels a test wants to
// run; the zero filter, which every public call passes, lets it choose
// freely. A filter never changes a bit of the output, only which kernel
// computes it, and a call the filtered choice cannot run fails with
// errStrategy or errTCKernel.
//
// For the IEEE tiers: strategy pins the strategy; perBlock, for
// split-slab, the slabs each block computes; rowsPath the rows strategy's
// path; width, for tiled and split-slab, the tile width (squareWidth or
// narrowWidth; 0: the model's); tailSMs, for tiled, the SM count the tail
// cut assumes (tiledTail; 0: the device's), so small grids exercise the
// cut; splitTail, for square tiled, takes the split tail (grids.splitTail)
// wherever the grid has one, gain or not; streamRows, for stream, the rows
// of dW a block owns (streamTall or streamShort; 0: streamRowsFor's). For
// the tensor-core tier, tc pins the kernel. serial launches the kernels
// plainly, without the overlap (launcher.launch).
type filter struct {
	strategy   Strategy
	perBlock   int64
	rowsPath   rowsPath
	width      int64
	tailSMs    int64
	splitTail  bool
	serial     bool
	streamRows int64
	tc         tcForce
}

// rowsPath is how a rows call runs: the one-launch kernel (gemm_rows'
// rowsf: partials and fold in one launch), two launches (gemm_rows'
// partials, then gemm_fold), or on sm_90a Forward with M ≤ 4 the
// gemm_rows_tma kernel (a block folds all the slabs of its columns).
type rowsPath uint8

const (
	rowsPathAuto rowsPath = iota // rowsOneLaunch's rule
	rowsPathOne                  // one launch wherever W is aligned for it
	rowsPathTwo                  // always two launches
	rowsPathTMA                  // gemm_rows_tma wherever it fits (rows_tma.go)
)

// plan is the dispatcher's decision for one call.
type plan struct {
	strategy Strategy
	slabs    int64 // S = ceil(R / 256)
	perBlock int64 // split-slab: slabs per block (G)
	groups   int64 // split-slab: grid.z = ceil(S / G)
	width    int64 // tiled and split-slab: tile width, squareWidth or narrowWidth
	mr, cn   int   // rows: rows per block (MR) and columns per thread (CN)
	// tiled, square: output rows [tailRow, rows) run split-slab with
	// tailG slabs a block, then the fold (grids.splitTail); 0: no split tail.
	tailRow, tailG int64
	ws             uint64
	ctrs           uint64 // rows: bytes of arrival counters (one u32 per column run and row group)
	sr             int64  // stream: rows of dW a block owns (streamTall or streamShort)
	// rows: the path that runs the plan (rowsPathTMA, rowsPathOne or
	// rowsPathTwo: the rows family that runs the plan, chosen from the
	// pointers and the GPU; rows.go, rows_tma.go).
	path rowsPath
	// tiled without a split tail: how the grid's short last round is cut
	// off into a launch of its own (tiledTail) and the head's column or row
	// tiles; cutNone: one grid.
	cut  int
	cutK int64
	// tc: the tensor-core tier's kernel and where its slabs fold (strategy
	// tiled where they fold in the kernel, split-slab on planes).
	tc tcLaunch
	// fam is the family that runs the plan (planner.go's choose sets it).
	fam *family
}

// maxWorkspaceBytes caps the workspace an IEEE plan may need; a shape
// needing more runs tiled. 512 MiB admits the split of the mid-size dW
// shapes (4096×1536×3072: 16 slabs of 1536×3072 partials, 302 MB). The
// tensor-core tier's cut plans are not capped.
const maxWorkspaceBytes = 512 << 20

// workspaceBytes is the workspace of the IEEE plans that write slab
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

// ceilDiv is ⌈a/b⌉ for positive b.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// mulOK is a·b for non-negative a, b, with ok = false (and the product
// capped) on overflow.
func mulOK(a, b int64) (int64, bool) {
	if a != 0 && b > (1<<62)/a {
		return 1 << 62, false
	}
	return a * b, true
}

// tcTile names one tile shape of gemm_tc.cu. The zero value means "let the
// dispatcher choose".
type tcTile uint8

// tcKey names one gemm_tc entry point.
type tcKey struct {
	tile    tcTile
	layout  layout
	in, out DType
	vec     bool
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

// tcLaunch is how a tensor-core call runs: the kernel, the plan's slabs, and
// where they are folded.
type tcLaunch struct {
	k      tcKey
	slabs  int64
	slabL  int64
	planes bool // one block a tile and slab, each slab's chain to a partial plane, then gemm_fold
	runsum bool // gemm_wgmma: a block a tile, its slabs' running sum in the workspace (L2)
	// toWS: the kernel's result goes to the workspace as f32 (the slab
	// variants write f32 only), rounded to the output type by gemm_fold
	// as one plane: running sums (or a forced slab variant) with a 16-bit
	// output.
	toWS bool
	// one: the kernel's one-slab twin, which runs instead where the plan
	// has one slab (gemm_tc_rows_tma's NAME_one, built without the slab
	// fold); 0 for none.
	one kernelID
}
