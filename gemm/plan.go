package gemm

import (
	"errors"

	"github.com/detgemm/detgemm/gemm/ref"
)

// The planner's vocabulary, shared by every kernel family and the engine:
// the strategies, the filter that narrows a choice, the plan — one type
// for the IEEE and the tensor-core tiers — and the family description the
// planner chooses by, with its cost.

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
	// regsumTail, with tc pinning the REGSUM tile, takes a split tail
	// (wgTail's) wherever the plan has more than one row of tiles, gain or
	// not.
	regsumTail bool
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
	regsum bool // gemm_wgmma: a block a tile, its slabs' running sum in registers (Tile::REGSUM)
	// tailRow, for regsum: output rows [tailRow, rows) run on planes with
	// the slab tile tail (one block a tile and slab), then gemm_fold, so
	// that the REGSUM grid keeps whole rounds (wgTail); 0: none.
	tailRow int64
	tail    tcTile
	// toWS: the kernel's result goes to the workspace as f32 (the slab
	// variants write f32 only), rounded to the output type by gemm_fold
	// as one plane: running sums (or a forced slab variant) with a 16-bit
	// output.
	toWS bool
	// run: the running sums' bytes at the start of the workspace
	// (gemm_wgmma's, runBytes), 0 without running sums.
	run uint64
	// one: the kernel's one-slab twin, which runs instead where the plan
	// has one slab (gemm_tc_rows_tma's NAME_one, built without the slab
	// fold); 0 for none.
	one kernelID
}

// family describes one kernel family to the planner: which calls it
// serves, which configuration of it runs a call and at what cost, and how
// that configuration is launched. The planner (planner.go) is one loop
// over the registered descriptions; it never names a family. A family may
// span several CUDA sources where one description chooses among them
// (the tiles family: gemm_simt and gemm_slabs), or share a source with
// another (gemm_rows' one-launch and two-launch kernels).
//
// Every family computes the plan's bits, so the description decides speed
// only: a new family, or a new configuration of one, cannot change an
// output.
type family struct {
	name string
	tc   bool // serves TierTensorCore (else TierF32 and TierTyped)
	// layouts is the ops it serves: nn Forward, nt dX, tn dW. Every dtype
	// pair its tier admits has an entry point (validate.go,
	// TestEveryAcceptedCombinationHasAnEntry).
	layouts layoutSet
	// class is the least cost class plan can return: the planner does not
	// ask a family whose best possible cost cannot beat the best so far.
	class costClass
	// admits reports whether filter f lets the planner consider the
	// family: the zero filter admits every family, a test's filter the
	// families its knobs name (filter).
	admits func(f filter) bool
	// archOK, where set, reports whether the engine has the family's
	// kernels (the sm_90a-only families); nil: every engine has them.
	archOK func(d *device) bool
	// plan returns the family's best configuration for p on d, narrowed by
	// f, and its cost; ok = false where the family does not fit the call.
	// err is a filter's refusal: f pinned a configuration the call cannot
	// run (tests only; the zero filter never gets one). Fitting, choosing
	// the configuration and costing it are one function because they share
	// the grid arithmetic, which the host path would otherwise do twice a
	// call.
	plan func(d *device, p problem, f filter) (pl plan, c cost, ok bool, err error)
	// finish, where set, completes the chosen plan with what never changes
	// which family runs the call: the tiled grid's tail cut, a tensor-core
	// plan's slab fold and its workspace. It runs on the winner only; its
	// error fails the call.
	finish func(d *device, p problem, f filter, pl plan) (plan, error)
	// launch enqueues (or, for Explain, records) the plan's kernels.
	launch func(l launcher, p problem, pl plan) error
}

// The descriptions' functions take the problem, the filter and the plan
// by value: a pointer passed through a function value escapes to the
// heap, which would cost the host path an allocation per call; copies of
// a few hundred bytes cost less.

// cost orders the candidate plans of a call: by class first, then by
// modelled time; among equal costs the family registered first wins (the
// planner's loop keeps the first least cost).
type cost struct {
	class costClass
	// time is the modelled time, in the family's model's units: the IEEE
	// time model's (tiles.go) or the tensor-core tile model's (tc.go).
	// Only the families of one tier compare their times, and those share
	// a model. 0 for the rule class.
	time float64
}

// less reports whether c is cheaper than d.
func (c cost) less(d cost) bool {
	return c.class < d.class || c.class == d.class && c.time < d.time
}

// costClass is the first component of a cost.
type costClass uint8

const (
	// classRule: a family that streams an operand once — the rows and
	// stream families of both tiers, and wgmma's 128×128 tile where its
	// grid is a single round. Each is taken wherever its rule says it fits,
	// before any tiled kernel, in registry order: its rule is drawn from
	// timings against every tiled kernel on the shapes of its range (the
	// bench notes its file cites), which the tiled model does not
	// describe.
	classRule costClass = iota
	// classModel: the tiled families, compared by modelled time.
	classModel
)

// layoutSet is a set of layouts (1 << layout).
type layoutSet uint8

// layoutsOf is the set of ls.
func layoutsOf(ls ...layout) layoutSet {
	var s layoutSet
	for _, l := range ls {
		s |= 1 << l
	}
	return s
}

// has reports whether l is in s.
func (s layoutSet) has(l layout) bool { return s&(1<<l) != 0 }

// ruleCost is the cost of a family taken by rule.
var ruleCost = cost{class: classRule}
