package gemm

import (
	"fmt"
	"math"

	"github.com/detgemm/detgemm/cudaload"
)

// tcRowsFamily is the tensor-core family for few rows
// (kernels/cuda/gemm_tc_rows.cu): Forward and dX, 16-byte path only. Its
// kernels run the same per-element chain as gemm_tc's, so the dispatcher
// may send any row count to either.
const tcRowsFamily = "gemm_tc_rows"

// tcRowsTMAFamily is the same tiles with the stages filled by TMA bulk
// tensor copies (kernels/cuda/gemm_tc_rows_tma.cu), built for sm_90a only
// and loaded with gemm_wgmma; same chain, same bits.
const tcRowsTMAFamily = "gemm_tc_rows_tma"

// The tile shapes of gemm_tc_rows.cu, numbered apart from gemm_tc's.
const (
	tcTileRows8     tcTile = 32 + iota // 8 rows × 32 columns: 2 consumer warps of 16 columns, 2 producer warps
	tcTileRows16                       // 16 rows × 32 columns
	tcTileRowsTMA8                     // gemm_tc_rows_tma: 8 rows × 32 columns, 2 consumer warps, 1 TMA producer warp
	tcTileRowsTMA16                    // 16 rows × 32 columns, 4 consumer warps of 16 columns × 8 rows
)

// tcRowsIDs is gemm_tc_rows' and gemm_tc_rows_tma's lookup table,
// tcOneIDs gemm_tc_rows_tma's one-slab twins', from the entry descriptions.
var (
	tcRowsIDs = indexOf(tcKeyIn(tcRowsGeometries), "tcrows", "tmarows")
	tcOneIDs  = indexOf(tcKeyIn(tcRowsGeometries), "tmarows_one")
)

// tcRowsGeometry is a gemm_tc_rows tile: mr rows × bn columns per block
// (one consumer warp per 16 columns), bk of the reduction per stage,
// stages deep, filled by `producers` producer warps; tma: the
// gemm_tc_rows_tma tiles (one consumer warp per 16 columns × 8 rows, the
// producer warp issuing TMA copies).
type tcRowsGeometry struct {
	name                          string
	mr, bn, bk, stages, producers int64
	tma                           bool
}

var tcRowsGeometries = map[tcTile]tcRowsGeometry{
	tcTileRows8:     {"tcrows8", 8, 32, 128, 6, 2, false},
	tcTileRows16:    {"tcrows16", 16, 32, 128, 5, 2, false},
	tcTileRowsTMA8:  {"tmarows8", 8, 32, 128, 7, 1, true},
	tcTileRowsTMA16: {"tmarows16", 16, 32, 128, 6, 1, true},
}

// tcRowsTiles lists the rows tiles, the fewest rows first.
var tcRowsTiles = []tcTile{tcTileRows8, tcTileRows16}

// tcRowsTMATiles lists the gemm_tc_rows_tma tiles, the fewest rows first.
var tcRowsTMATiles = []tcTile{tcTileRowsTMA8, tcTileRowsTMA16}

func isTCRowsTMA(t tcTile) bool { return tcRowsGeometries[t].tma }

func (g tcRowsGeometry) threads() uint32 {
	if g.tma {
		return uint32((g.bn/16*(g.mr/8) + g.producers) * 32)
	}
	return uint32((g.bn/16 + g.producers) * 32)
}

// blocks is the 1-D grid: row tiles × column blocks.
func (g tcRowsGeometry) blocks(rows, cols int64) int64 {
	return ceilDiv(rows, g.mr) * ceilDiv(cols, g.bn)
}

// tcRowsSharedBytes is gemm_tc_rows.cu's dynamic shared memory: per stage,
// mr rows of A (bk wide) and the bk × bn piece of B as it lies in global
// memory (nn: bk rows of bn columns; nt: bn rows of bk), each row padded by
// tcPad halves; then the stages' full and empty mbarriers (8 bytes each).
// gemm_tc_rows_tma's (Rows::SMEM) has no padding (TMA swizzles instead)
// and 1 KiB of slack to align the ring.
func tcRowsSharedBytes(t tcTile, l layout) uint32 {
	g := tcRowsGeometries[t]
	if g.tma {
		return uint32(g.stages*((g.mr+g.bn)*g.bk*2+16) + 1024)
	}
	b := g.bn * (g.bk + tcPad)
	if l == layoutNN {
		b = g.bk * (g.bn + tcPad)
	}
	return uint32(g.stages * ((g.mr*(g.bk+tcPad)+b)*2 + 16))
}

// tcRowsUsable reports whether rows tile t can run p on the path vec: the
// 16-byte path, Forward or dX, a grid within grid.x, and shared memory
// within the GPU's block; a TMA tile also needs every extent below 2^31
// with a box to spare (its copy coordinates are 32-bit).
func tcRowsUsable(t tcTile, p problem, vec bool, maxShared uint32) bool {
	g, ok := tcRowsGeometries[t]
	const lim = math.MaxInt32 - 256
	if g.tma && (p.rows > lim || p.cols > lim || p.red > lim) {
		return false
	}
	return ok && vec && p.layout != layoutTN && g.blocks(p.rows, p.cols) <= math.MaxInt32 &&
		tcRowsSharedBytes(t, p.layout) <= maxShared
}

// tcRowsTMAMaxRows is the most rows gemm_tc_rows_tma takes by rule:
// faster than every other kernel up to 32 rows (more were not timed).
const tcRowsTMAMaxRows = 32

// tcRowsAdmits reports whether f lets the planner consider a rows family
// whose tiles are tma's: a filter leaving the kernel to the planner, or
// pinning one of the family's tiles.
func tcRowsAdmits(f filter, tma bool) bool {
	_, ok := tcRowsGeometries[f.tc.tile]
	return ok && isTCRowsTMA(f.tc.tile) == tma
}

// familyTCRowsTMA describes gemm_tc_rows_tma (sm_90a, loaded with
// gemm_wgmma): a Forward or dX call on the 16-byte path with at most 8
// rows takes tmarows8, one with 9 to 32 rows tmarows16 (two row tiles
// above 16), before every other kernel: faster than gemm_tc_rows, gemm_tc
// and gemm_wgmma on every shape timed (bench/NOTES-tcrows.md;
// bench/NOTES-engine.md, tc_rows.go). A filter naming a load path only
// leaves it out (gemm_tc's choice, as before the family).
var familyTCRowsTMA = &family{
	name:    "gemm_tc_rows_tma",
	tc:      true,
	layouts: layoutsOf(layoutNN, layoutNT),
	class:   classRule,
	admits:  func(f filter) bool { return f.tc == (tcForce{}) || tcRowsAdmits(f, true) },
	archOK:  func(d *device) bool { return d.hasWG },
	plan: func(d *device, p problem, f filter) (pl plan, c cost, ok bool, err error) {
		if f.tc.tile != 0 {
			return planTCRowsForced(d, p, f)
		}
		if !tcVecOK(p) || p.rows > tcRowsTMAMaxRows {
			return pl, cost{}, false, nil
		}
		t := tcTileRowsTMA16
		if p.rows <= tcRowsGeometries[tcTileRowsTMA8].mr {
			t = tcTileRowsTMA8
		}
		if !tcRowsUsable(t, p, true, d.tcShared) {
			return pl, cost{}, false, nil
		}
		pl.tc = tcLaunch{k: tcKey{t, p.layout, p.in, p.out, true}}
		return pl, ruleCost, true, nil
	},
	finish: func(_ *device, p problem, _ filter, pl plan) (plan, error) {
		tcCut(&p, &pl) // the slabs fold in registers
		if pl.tc.slabs <= 1 {
			pl.tc.one = tcOneIDs[pl.tc.k] // the same chain, no fold compiled in
		}
		return pl, tcSettle(&p, &pl)
	},
	launch: func(l launcher, p problem, pl plan) error { return l.tcRows(&p, &pl.tc) },
}

// familyTCRows describes gemm_tc_rows: a Forward or dX call of at most 16
// rows that the 16-byte path can read takes the first rows tile holding
// all its rows in one row tile, before gemm_tc and gemm_wgmma. There
// gemm_tc's smallest tile computes 64 rows to keep at most 16 and its N/64
// blocks leave most of the memory bandwidth unused (bench/NOTES-tcrows.md).
// At 32 rows gemm_tc_rows (two row tiles) wins at N = 4096 but loses to
// tc64 at N = 11008, so the rule stops at 16.
var familyTCRows = &family{
	name:    "gemm_tc_rows",
	tc:      true,
	layouts: layoutsOf(layoutNN, layoutNT),
	class:   classRule,
	admits:  func(f filter) bool { return tcAdmitsAny(f) || tcRowsAdmits(f, false) },
	plan: func(d *device, p problem, f filter) (pl plan, c cost, ok bool, err error) {
		if f.tc.tile != 0 {
			return planTCRowsForced(d, p, f)
		}
		vec, err := tcPathOf(tcVecOK(p), f.tc)
		if err != nil {
			return pl, cost{}, false, err
		}
		for _, t := range tcRowsTiles {
			if p.rows <= tcRowsGeometries[t].mr && tcRowsUsable(t, p, vec, d.tcShared) {
				pl.tc = tcLaunch{k: tcKey{t, p.layout, p.in, p.out, vec}}
				return pl, ruleCost, true, nil
			}
		}
		return pl, cost{}, false, nil
	},
	finish: func(_ *device, p problem, _ filter, pl plan) (plan, error) {
		tcCut(&p, &pl) // the slabs fold in registers
		return pl, tcSettle(&p, &pl)
	},
	launch: func(l launcher, p problem, pl plan) error { return l.tcRows(&p, &pl.tc) },
}

// planTCRowsForced is a rows family's plan for the tile f pins: any row
// count of Forward and dX on the 16-byte path, where the grid and the
// shared memory fit.
func planTCRowsForced(d *device, p problem, f filter) (pl plan, c cost, ok bool, err error) {
	vec, err := tcPathOf(tcVecOK(p), f.tc)
	if err != nil {
		return pl, cost{}, false, err
	}
	if !tcRowsUsable(f.tc.tile, p, vec, d.tcShared) {
		return pl, cost{}, false, fmt.Errorf("%w: %v (vec %v, layout %v) for %d×%d outputs", errTCKernel, f.tc.tile, vec, p.layout, p.rows, p.cols)
	}
	pl.tc = tcLaunch{k: tcKey{f.tc.tile, p.layout, p.in, p.out, vec}}
	return pl, ruleCost, true, nil
}

// tcRows enqueues a gemm_tc_rows kernel (gemm_tc's arguments), or a
// gemm_tc_rows_tma kernel with this call's TMA maps: a one-dimensional
// grid of row tiles × column blocks.
func (l launcher) tcRows(p *problem, r *tcLaunch) error {
	k := r.k
	id := r.one // the one-slab twin, where the plan has one
	if id == 0 {
		id = tcRowsIDs[k]
	}
	if err := l.need(p, id); err != nil {
		return err
	}
	e := l.e
	g := tcRowsGeometries[k.tile]
	if g.tma {
		if l.rec == nil {
			if err := e.encodeTCRowsTMA(*p, g); err != nil {
				return err
			}
		}
		e.args.Reset().TensorMap(&e.tmA).TensorMap(&e.tmB).
			Ptr(cudaload.DevicePtr(p.c)).Ptr(cudaload.DevicePtr(p.bias)).
			Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.ldc).Int64(r.slabL)
	} else {
		l.tcArgs(p)
		e.args.Ptr(0).Int64(r.slabL) // no workspace: the slabs fold in registers
	}
	grid := cudaload.Dim3{X: uint32(g.blocks(p.rows, p.cols)), Y: 1, Z: 1}
	return l.launch(p, id, grid, g.threads(), tcRowsSharedBytes(k.tile, k.layout), g.mr, g.bn)
}

// encodeTCRowsTMA encodes gemm_tc_rows_tma's maps into e.tmA (X or dY:
// boxes of 64 of the reduction × mr rows, 128-byte swizzle) and e.tmB (W
// nn: 32 columns × bk of the reduction, 64-byte swizzle; nt: 64 of the
// reduction × 32 columns, 128-byte swizzle), zeros past the matrix.
func (e *device) encodeTCRowsTMA(p problem, g tcRowsGeometry) error {
	dt := cudaload.TensorMapBFloat16
	if p.in == F16 {
		dt = cudaload.TensorMapFloat16
	}
	const l2, oob = cudaload.TensorMapL2Promotion256B, cudaload.TensorMapOOBFillNone
	err := e.tmEnc.Encode2D(&e.tmA, dt, cudaload.DevicePtr(p.a), uint64(p.red), uint64(p.rows), uint64(p.lda)*2,
		64, uint32(g.mr), cudaload.TensorMapSwizzle128B, l2, oob)
	if err == nil {
		if p.layout == layoutNN {
			// W's 64-byte box rows: 128-byte L2 promotion (the neighbouring
			// strip's row) was faster than 256 and than none on every shape timed
			// (bench/NOTES-tcrows.md; bench/NOTES-engine.md, tc_rows.go).
			err = e.tmEnc.Encode2D(&e.tmB, dt, cudaload.DevicePtr(p.b), uint64(p.cols), uint64(p.red), uint64(p.ldb)*2,
				uint32(g.bn), uint32(g.bk), cudaload.TensorMapSwizzle64B, cudaload.TensorMapL2Promotion128B, oob)
		} else {
			err = e.tmEnc.Encode2D(&e.tmB, dt, cudaload.DevicePtr(p.b), uint64(p.red), uint64(p.cols), uint64(p.ldb)*2,
				64, uint32(g.bn), cudaload.TensorMapSwizzle128B, l2, oob)
		}
	}
	if err != nil {
		// tcRowsUsable admitted the call, so this is a bug, not a user error.
		return fmt.Errorf("gemm.%s: encoding the TMA maps of %s: %w", p.op, g.name, err)
	}
	return nil
}

func (g tcRowsGeometry) tileName() string { return g.name }
