package gemm

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
