package gemm

import "fmt"

// The engine's planning step, on top of every family: the registry of
// family descriptions, the one loop that plans a validated problem from
// them, and the launch of a plan (or its record, for Explain).

// families is every registered family description, each tier's in the
// order that breaks ties of cost (the earlier wins). The IEEE tiers: the
// stream family (dW) and the rows families (Forward, dX) by rule, the
// rows families in the order their paths are preferred, then the tiles
// family by its model. The tensor-core tier: the dW stream and the rows
// families by rule (gemm_tc_rows_tma before gemm_tc_rows), then gemm_tc
// and gemm_wgmma by the tile model, gemm_tc first so that wgmma must
// model strictly faster (and wgmma's single-round rule, a classRule cost,
// yields to the rows families).
var families = []*family{
	familyStream, familyRowsTMA, familyRowsOne, familyRowsTwo, familyTiles,
	familyTCDW, familyTCRowsTMA, familyTCRows, familyTC, familyWG,
}

// ieeeFamilies and tcFamilies are families split by tier, in order.
var ieeeFamilies, tcFamilies = func() (ieee, tc []*family) {
	for _, fam := range families {
		if fam.tc {
			tc = append(tc, fam)
		} else {
			ieee = append(ieee, fam)
		}
	}
	return ieee, tc
}()

// choose is the plan of a validated problem: validate → plan → launch's
// middle step. For every registered family of p's tier that serves p's op
// and that f admits, the family's plan is its best configuration and its
// cost; the plan is the least cost's (the first family's among equals),
// completed by that family's finish. A family whose least possible cost
// (its class) cannot beat the best so far is not asked, so a call the rows
// or stream families take never runs the tiled model. The choice may
// depend on the GPU and, for the load paths, on the pointers — never on
// anything that changes a bit of the output, since every family computes
// the same plan's bits.
func (e *device) choose(p problem, f *filter) (plan, error) {
	fams := ieeeFamilies
	if p.tier == TierTensorCore {
		fams = tcFamilies
	}
	var (
		best     plan
		bestCost cost
		found    bool
		refusal  error   // the first filter refusal
		unloaded *family // the first admitted family this engine lacks
	)
	fv := *f
	for _, fam := range fams {
		if !fam.layouts.has(p.layout) || !fam.admits(fv) || found && !(cost{class: fam.class}).less(bestCost) {
			continue
		}
		if fam.archOK != nil && !fam.archOK(e) {
			if unloaded == nil {
				unloaded = fam
			}
			continue
		}
		cand, c, ok, err := fam.plan(e, p, fv)
		if err != nil && refusal == nil {
			refusal = err
		}
		if !ok || found && !c.less(bestCost) {
			continue
		}
		cand.fam = fam
		best, bestCost, found = cand, c, true
	}
	if !found {
		return plan{}, fmt.Errorf("gemm.%s: %w", p.op, noFamily(p, f, refusal, unloaded))
	}
	if fin := best.fam.finish; fin != nil {
		fam := best.fam
		var err error
		if best, err = fin(e, p, fv, best); err != nil {
			return plan{}, fmt.Errorf("gemm.%s: %w", p.op, err)
		}
		best.fam = fam
	}
	return best, nil
}

// noFamily is why no family runs p under f: a family's refusal of the
// filter's configuration, else a family this engine lacks, else none
// admitted. Only a filter gets here: every call the zero filter plans fits
// a family that every engine has (the tiles family, gemm_tc's tc128).
func noFamily(p problem, f *filter, refusal error, unloaded *family) error {
	sentinel := errStrategy
	if p.tier == TierTensorCore {
		sentinel = errTCKernel
	}
	switch {
	case refusal != nil:
		return refusal
	case unloaded != nil:
		return fmt.Errorf("%w: %s is not loaded on this GPU (sm_90a only)", sentinel, unloaded.name)
	}
	return fmt.Errorf("%w: no registered family serves %v %v %v→%v under %+v", sentinel, p.op, p.tier, p.in, p.out, *f)
}

// plan enqueues (or records) the kernels of plan pl for p: its family's
// launch.
func (l launcher) plan(p *problem, pl *plan) error { return pl.fam.launch(l, *p, *pl) }
