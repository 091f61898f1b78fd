package gemm

import "fmt"

// The engine's planning step, on top of every family: the plan of a
// validated problem, and the launch of a plan (or its record, for
// Explain).

// choose is the plan of a validated problem: validate → plan → launch's
// middle step. The tier's planner picks the kernels (chooseTCLaunch for
// the tensor cores, choose for the IEEE tiers), narrowed by f; then what
// depends on this engine's GPU and the call's pointers is resolved — the
// rows path, the tiled grid's tail cut, the one-slab twin — so that the
// launcher and Explain only read the plan.
func (e *device) choose(p problem, f *filter) (plan, error) {
	if p.tier == TierTensorCore {
		// One kernel per call, and gemm_fold where the plan's slabs go to
		// planes (tc_plan.go).
		r, err := chooseTCLaunch(p, e.sms, e.tcShared, e.hasWG, f.tc)
		if err != nil {
			return plan{}, fmt.Errorf("gemm.%s: %w", p.op, err)
		}
		if r.slabs <= 1 && tcTwinTiles[r.k.tile] {
			r.one = tcOneIDs[r.k]
		}
		ws, _ := r.wsBytes(p)
		if !r.planes {
			return plan{strategy: StrategyTiled, slabs: r.slabs, ws: ws, tc: r}, nil
		}
		return plan{strategy: StrategySplitSlab, slabs: r.slabs, perBlock: 1, groups: r.slabs, ws: ws, tc: r}, nil
	}
	pl, err := choose(p.layout, p.rows, p.cols, p.red, e.sms, f)
	if err != nil {
		return plan{}, fmt.Errorf("gemm.%s: %w", p.op, err)
	}
	switch {
	case pl.strategy == StrategyRows:
		pl.path = e.rowsPathFor(&p, pl.mr, f)
	case pl.strategy == StrategyTiled && pl.tailRow == 0:
		pl.cut, pl.cutK = e.tiledCut(&p, &pl, f)
	}
	return pl, nil
}

// plan enqueues (or records) the kernels of plan pl for p.
func (l launcher) plan(p *problem, pl *plan) error {
	if p.tier == TierTensorCore {
		return l.tc(*p, pl.tc) // tc.go
	}
	switch pl.strategy {
	case StrategySplitSlab:
		if err := l.slabs(p, pl); err != nil {
			return err
		}
		return l.fold(p, pl)
	case StrategyStream:
		return l.stream(p, pl) // one kernel, no workspace
	case StrategyRows:
		switch pl.path {
		case rowsPathTMA:
			return l.rowsTMAKernel(p) // every slab of a strip in one block (rows_tma.go)
		case rowsPathOne:
			return l.rowsFused(p, pl) // folds in the same kernel
		}
		if err := l.rows(p, pl); err != nil {
			return err
		}
		return l.fold(p, pl)
	}
	return l.tiled(p, pl)
}
