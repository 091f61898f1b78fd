package gemm

import (
	"fmt"
	"math"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
	"github.com/detgemm/detgemm/gemm/ref"
)

// What the tensor-core families (tc.go, tc_rows.go, tc_wgmma.go,
// tc_dw_stream.go) share: their entry keys and load paths, the plan's cut
// of the reduction into slabs and the workspace its fold needs, the
// arguments gemm_tc's kernels and its followers take, and gemm_fold's
// launch over the planes.

// tcKeyIn is the typed key of a tensor-core entry description whose tile
// is one of a family's tiles (geoms): each family's lookup table is
// indexOf(tcKeyIn(its geometries), its kinds).
func tcKeyIn[G interface{ tileName() string }](geoms map[tcTile]G) func(entries.Key) tcKey {
	names := tileNames(geoms)
	return func(k entries.Key) tcKey {
		for t, n := range names {
			if n == k.Tile {
				return tcKey{t, layoutOf(k.Layout), dtypeOf(k.In), dtypeOf(k.Out), k.Vec}
			}
		}
		panic("gemm: entry " + k.Tile + " names no tile of its family")
	}
}

// tileNames is the names of a family's tiles.
func tileNames[G interface{ tileName() string }](m map[tcTile]G) map[tcTile]string {
	out := make(map[tcTile]string, len(m))
	for t, g := range m {
		out[t] = g.tileName()
	}
	return out
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

// wsBytes is the workspace: the running sums (run), then planes of
// f32 outputs for gemm_fold (foldPlanes: every slab's on planes for
// Forward and dX, every slab's but the first for dW, which folds slab 0 in
// place; one where the last sum is rounded by gemm_fold; with a split
// tail, every slab's plane of the tail's rows only). ok is false on
// overflow.
func (r tcLaunch) wsBytes(p problem) (uint64, bool) {
	n, rows := uint64(r.foldPlanes(p)), p.rows
	if r.tailRow > 0 {
		// A split tail: every slab's plane of the tail's rows.
		n, rows = uint64(r.slabs), p.rows-r.tailRow
	}
	b := n * uint64(rows)
	if b/uint64(rows) != n {
		return 0, false
	}
	c := b * uint64(p.cols)
	if c/uint64(p.cols) != b || c > math.MaxUint64/8 {
		return 0, false
	}
	return r.run + 4*c, true
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
		Ptr(l.e.ws.ptr + cudaload.DevicePtr(r.run)).Ptr(cudaload.DevicePtr(p.c)).Ptr(0).
		Uint64(n).Uint64(uint64(p.cols)).Uint64(uint64(planes))
	return l.launch(&p, id, cudaload.Dim3{X: foldBlocks(n, l.e.sms), Y: 1, Z: 1}, foldThreads, 0, 1, 1)
}

// tcAdmitsAny reports whether a tensor-core filter leaves the kernel to
// the planner (the zero filter, or one naming only a load path).
func tcAdmitsAny(f filter) bool { return f.tc.tile == 0 }

// tcPathOf resolves a call's load path: the 16-byte path where vecOK (the
// family's alignment rule holds), the element path otherwise, unless f
// pins one; pinning the 16-byte path where it cannot read the operands is
// refused.
func tcPathOf(vecOK bool, f tcForce) (vec bool, err error) {
	switch f.path {
	case 0:
		return vecOK, nil
	case tcPathVec:
		if !vecOK {
			return false, fmt.Errorf("%w: the 16-byte path needs 16-byte aligned operands and leading dimensions that are multiples of 8 (and, for gemm_tc_dw_stream, dW aligned with ldc and N multiples of 4)", errTCKernel)
		}
		return true, nil
	case tcPathAny:
		return false, nil
	}
	return false, fmt.Errorf("%w: load path %d", errTCKernel, f.path)
}

// tcCut sets the plan's cut of the reduction (tcSlabs): every
// tensor-core family's finish starts with it, and then says where the
// slabs fold.
func tcCut(p *problem, pl *plan) {
	pl.tc.slabs, pl.tc.slabL = tcSlabs(*p)
}

// tcSettle completes a tensor-core plan from its launch: the strategy
// (split-slab where the slabs go to planes, tiled where the kernel folds
// them), the slabs and the workspace, which must be countable.
func tcSettle(p *problem, pl *plan) error {
	r := &pl.tc
	ws, ok := r.wsBytes(*p)
	if !ok {
		return fmt.Errorf("%w: %d slabs of %d×%d f32 partials overflow 64 bits", ErrTooLarge, r.slabs, p.rows, p.cols)
	}
	pl.strategy, pl.slabs, pl.ws = StrategyTiled, r.slabs, ws
	if r.planes {
		pl.strategy, pl.perBlock, pl.groups = StrategySplitSlab, 1, r.slabs
	}
	return nil
}

// tcArgs packs the arguments gemm_tc's kernels start with, and
// gemm_tc_rows' and gemm_tc_dw_stream's are: the operands, the output, the
// bias, the shape and the leading dimensions.
func (l launcher) tcArgs(p *problem) {
	l.e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(cudaload.DevicePtr(p.c)).Ptr(cudaload.DevicePtr(p.bias)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb).Int64(p.ldc)
}

// tcFolded enqueues gemm_fold after a tensor-core kernel where the plan's
// slabs went to planes or its result to the workspace.
func (l launcher) tcFolded(p *problem, r *tcLaunch) error {
	if r.foldPlanes(*p) == 0 {
		return nil
	}
	return l.tcFold(*p, *r)
}
