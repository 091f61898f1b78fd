package gemm

import (
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
	"github.com/detgemm/detgemm/gemm/ref"
)

// The rows families: gemm_rows' kernels for Forward and dX with few rows
// (M ≤ 32), one block per slab and run of columns, W read once. Two
// descriptions, one per way the slabs fold: rows-one (the one-launch
// kernels, rowsf: the last block of each column run folds) and rows-two
// (the partials kernels, then gemm_fold).

// The rows families' kernels (kernels/cuda/<family>.cu).
const (
	rowsFamily = entries.RowsFamily // the partials kernels
	// rowsFusedFamily holds the one-launch rows kernels.
	rowsFusedFamily = entries.RowsFusedFamily
)

// rowsMaxM is the largest M the rows strategy takes. Each W element
// feeds M fused multiply-adds: up to 32 rows the product stays near the
// memory roofline (f32: 32 FMA per 4 bytes is about a Hopper GPU's
// FMA-to-bandwidth ratio), while a 128-row tile would waste three quarters of
// its work on padding rows.
const rowsMaxM = 32

// The rows families' lookup tables, from the entry descriptions.
var (
	rowsIDs  = indexOf(func(k entries.Key) rowsKey { return rowsKey{layoutOf(k.Layout), dtypeOf(k.In), k.MR} }, "rows")
	rowsfIDs = indexOf(func(k entries.Key) rowsFusedKey {
		return rowsFusedKey{layoutOf(k.Layout), dtypeOf(k.In), dtypeOf(k.Out), k.MR}
	}, "rowsf")
)

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

// rows: gemm_rows' partials, grid (column runs, slabs, row groups).
func (l launcher) rows(p *problem, pl *plan) error {
	id := rowsIDs[rowsKey{p.layout, p.in, pl.mr}]
	if err := l.need(p, id); err != nil {
		return err
	}
	l.e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(l.e.ws.ptr).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb)
	jt := int64(rowsThreads * pl.cn)
	grid := cudaload.Dim3{X: uint32((p.cols + jt - 1) / jt), Y: uint32(pl.slabs), Z: uint32((p.rows + int64(pl.mr) - 1) / int64(pl.mr))}
	return l.launch(p, id, grid, rowsThreads, rowsSharedBytes(p.in, pl.mr, pl.cn), int64(pl.mr), jt)
}

// rowsAdmits reports whether f lets the planner consider a rows family.
func rowsAdmits(f filter) bool { return f.strategy == 0 || f.strategy == StrategyRows }

// familyRowsOne describes gemm_rows' one-launch kernels: a rows plan
// where rowsOneLaunch's rule takes them (W aligned for their 16-byte
// copies), after gemm_rows_tma (rows_tma.go) and before the two-launch
// kernels.
var familyRowsOne = &family{
	name:    "rows-one",
	layouts: layoutsOf(layoutNN, layoutNT),
	class:   classRule,
	admits:  func(f filter) bool { return rowsAdmits(f) && f.rowsPath != rowsPathTwo },
	plan: func(d *device, p problem, f filter) (pl plan, c cost, ok bool, err error) {
		if ok, err := planRows(&p, &f, &pl); !ok || !d.rowsOneLaunch(p, pl.mr, &f) {
			return pl, cost{}, false, err
		}
		pl.path = rowsPathOne
		return pl, ruleCost, true, nil
	},
	launch: func(l launcher, p problem, pl plan) error { return l.rowsFused(&p, &pl) }, // folds in the same kernel
}

// familyRowsTwo describes gemm_rows' partials kernels, then gemm_fold: a
// rows plan that no rows family before it takes (W unaligned for the
// one-launch kernel's copies, or f32 dX at MR = 4).
var familyRowsTwo = &family{
	name:    "rows-two",
	layouts: layoutsOf(layoutNN, layoutNT),
	class:   classRule,
	admits:  rowsAdmits,
	plan: func(_ *device, p problem, f filter) (pl plan, c cost, ok bool, err error) {
		if ok, err := planRows(&p, &f, &pl); !ok {
			return pl, cost{}, false, err
		}
		pl.path = rowsPathTwo
		return pl, ruleCost, true, nil
	},
	launch: func(l launcher, p problem, pl plan) error {
		if err := l.rows(&p, &pl); err != nil {
			return err
		}
		return l.fold(&p, &pl)
	},
}

// planRows is the rows plan every rows family shares (its path aside):
// Forward or dX (the families' layouts) with at most rowsMaxM rows and a
// workspace of at most maxWorkspaceBytes, S and the row groups within
// grid.y and grid.z — a filter pinning StrategyRows drops the limits on
// the rows and the workspace. The rows a block MR is 4 (rows ≤ 4), 16
// (≤ 16) or 32. The workspace and counters are the two-launch path's,
// whichever path runs the plan: Engine.WorkspaceBytes depends on the
// shape and the GPU, never on the pointers that choose the path.
func planRows(p *problem, f *filter, pl *plan) (bool, error) {
	slabs := ceilDiv(p.red, ref.SlabLen)
	ws, wsOK := workspaceBytes(p.rows, p.cols, p.red)
	mr := rowsMR(p.rows)
	ok := slabs <= maxGridYZ && ceilDiv(p.rows, int64(mr)) <= maxGridYZ && wsOK
	if f.strategy == StrategyRows {
		if !ok {
			return false, fmt.Errorf("%w: rows needs nn or nt, S ≤ %d, at most %d row groups and a countable workspace (layout %v, S = %d, rows = %d)",
				errStrategy, maxGridYZ, maxGridYZ, p.layout, slabs, p.rows)
		}
	} else if !ok || p.rows > rowsMaxM || ws > maxWorkspaceBytes {
		return false, nil
	}
	*pl = plan{strategy: StrategyRows, slabs: slabs, mr: mr, cn: rowsCN(mr), ws: ws, ctrs: rowsCounterBytes(p.rows, p.cols, mr)}
	return true, nil
}

// rowsOneLaunch reports whether a rows call of mr rows a block takes the
// one-launch kernel. Its 16-byte copies of W need W and W's row stride
// 16-byte aligned. Beyond that it is a speed rule (bench/NOTES-engine.md,
// rows.go): one launch wins at MR = 16 and 32; at MR = 4 for 16-bit
// inputs, and for f32 forward while its blocks fit the GPU at once, three
// an SM — a second round of blocks costs it as much as the second launch
// costs the two. f32 dX at MR = 4 stays on two launches: the one-launch
// kernel stages W's rows in 64-byte pieces there.
func (e *device) rowsOneLaunch(p problem, mr int, f *filter) bool {
	es := uintptr(p.in.Size())
	if p.b%16 != 0 || (uintptr(p.ldb)*es)%16 != 0 {
		return false
	}
	switch f.rowsPath {
	case rowsPathOne:
		return true
	case rowsPathTwo:
		return false
	}
	if mr > 4 || p.in.Half() {
		return true
	}
	if p.layout != layoutNN {
		return false
	}
	blocks := ceilDiv(p.cols, rowsFusedCols(mr)) * ceilDiv(p.red, ref.SlabLen) * ceilDiv(p.rows, int64(mr))
	return blocks <= 3*int64(e.sms)
}

// rowsFused: gemm_rows' one-launch kernel (partials, then the last block
// of each column run folds them), grid (column runs, slabs, row groups).
func (l launcher) rowsFused(p *problem, pl *plan) error {
	id := rowsfIDs[rowsFusedKey{p.layout, p.in, p.out, pl.mr}]
	if err := l.need(p, id); err != nil {
		return err
	}
	e := l.e
	e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(e.ws.ptr).Ptr(e.ws.ctr).
		Ptr(cudaload.DevicePtr(p.c)).Ptr(cudaload.DevicePtr(p.bias)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb)
	jt := rowsFusedCols(pl.mr)
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.cols, jt)), Y: uint32(pl.slabs), Z: uint32(ceilDiv(p.rows, int64(pl.mr)))}
	return l.launch(p, id, grid, uint32(rowsFusedThreads(pl.mr)), rowsFusedSharedBytes(p.in, pl.mr, p.layout == layoutNT), int64(pl.mr), jt)
}

// rowsKey names a rows partials kernel: nn or nt, input type, rows per
// block.
type rowsKey struct {
	layout layout
	in     DType
	mr     int
}

func (k rowsKey) name() string { return fmt.Sprintf("detgemm_rows_%v_%v_m%d", k.layout, k.in, k.mr) }

// rowsFusedKey names a one-launch rows kernel: nn or nt, input and output
// type (it stores the folded output itself), rows per block.
type rowsFusedKey struct {
	layout  layout
	in, out DType
	mr      int
}

func (k rowsFusedKey) name() string {
	return fmt.Sprintf("detgemm_rowsf_%v_%v_%v_m%d", k.layout, k.in, k.out, k.mr)
}
