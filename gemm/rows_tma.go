package gemm

import (
	"fmt"
	"math"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
	"github.com/detgemm/detgemm/gemm/ref"
)

// rowsTMAFamily is the IEEE few-row Forward and dX kernel on Hopper
// (kernels/cuda/gemm_rows_tma.cu, sm_90a only): a block owns 32 output
// columns over the whole reduction, TMA streams W's slab boxes into a ring,
// and the block folds its slabs itself — no workspace, no arrival counter,
// no second pass.
const rowsTMAFamily = "gemm_rows_tma"

// Geometry of gemm_rows_tma (rowst:: in the kernel).
const (
	rowsTMACols    = 32 // BN: output columns a block
	rowsTMAMaxRows = 16 // the most output rows a block takes (MR = 1, 4 or 16)
)

// rowsTMAKey names a gemm_rows_tma entry point: layout (nn Forward, nt
// dX), input and output type, rows a block (1, 4 or 16), and for one row
// of 16-bit inputs whether it is the many-wave ring (waves: a shallow ring,
// three blocks an SM, for grids of more strips than SMs).
type rowsTMAKey struct {
	layout  layout
	in, out DType
	mr      int
	waves   bool
}

func (k rowsTMAKey) name() string {
	w := ""
	if k.waves {
		w = "w"
	}
	return fmt.Sprintf("detgemm_rowst_%v_%v_%v_m%d%s", k.layout, k.in, k.out, k.mr, w)
}

// rowsTMAIDs is gemm_rows_tma's lookup table, from the entry descriptions.
var rowsTMAIDs = indexOf(func(k entries.Key) rowsTMAKey {
	return rowsTMAKey{layoutOf(k.Layout), dtypeOf(k.In), dtypeOf(k.Out), k.MR, k.Waves}
}, "rowst")

// rowsTMAMR is the rows a block (the kernel's MR) for a call of rows rows:
// 1 for one row (no padding rows to compute), 4 up to four, else 16.
func rowsTMAMR(rows int64) int {
	switch {
	case rows == 1:
		return 1
	case rows <= 4:
		return 4
	}
	return rowsTMAMaxRows
}

// rowsTMAGroups is the kernel's groups of consumer warps (Cfg::GROUPS),
// each computing every GROUPS-th slab: f32 six (MR = 1), five (MR = 4) or
// four (MR = 16); 16-bit inputs ten, eight or six, four in the many-wave
// ring.
func rowsTMAGroups(in DType, mr int, waves bool) int {
	f32 := in == F32
	switch {
	case waves:
		return 4
	case mr == 16 && f32:
		return 4
	case mr == 16:
		return 6
	case f32 && mr == 1:
		return 6
	case f32:
		return 5
	case mr == 1:
		return 10
	}
	return 8
}

// rowsTMAHalves is Cfg::HALVES, the ring slots a slab takes: f32 at
// MR = 16 stages each slab in two halves of 128 steps (a group computes one
// half while the other's slot refills), the others whole.
func rowsTMAHalves(in DType, mr int) int {
	if mr == 16 && in == F32 {
		return 2
	}
	return 1
}

// rowsTMAStages is the kernel's ring depth (Cfg::STAGES): a slot per half
// slab of every group — f32 six 33 KiB slots (MR = 1), five 36 KiB (MR =
// 4) or eight 24 KiB (MR = 16); 16-bit ten, eight or six.
func rowsTMAStages(in DType, mr int, waves bool) int {
	return rowsTMAGroups(in, mr, waves) * rowsTMAHalves(in, mr)
}

// rowsTMAWarpsPerStage is Cfg::WPS: one consumer warp a stage, two at
// MR = 16, eight rows each, two columns a lane, the half-warps on even and
// odd rows (gemm_rows_tma.cu's slab16): faster than one warp of all
// sixteen rows or four of four (bench/NOTES-simt.md, round 10).
func rowsTMAWarpsPerStage(mr int) int {
	if mr == 16 {
		return 2
	}
	return 1
}

// rowsTMAMaxSlabs is Cfg::MAXS, the slabs a block folds: 16 (R ≤ 4096) at
// MR = 16, whose slab results take 2 KiB a slab, else 32 (R ≤ 8192).
func rowsTMAMaxSlabs(mr int) int64 {
	if mr == 16 {
		return 16
	}
	return 32
}

// rowsTMAThreads is the kernel's block: the consumer warps of every group
// and the producer warp.
func rowsTMAThreads(in DType, mr int, waves bool) uint32 {
	return uint32(32 * (rowsTMAGroups(in, mr, waves)*rowsTMAWarpsPerStage(mr) + 1))
}

// rowsTMASharedBytes is Cfg<DT, MR>::SMEM: 1 KiB of alignment slack, the
// ring (a slot: sub = 256 / halves rows × 32 columns of W and MR rows × sub
// of x, rounded up to 1 KiB), the slab results (MAXS × MR × 32 f32) and two
// mbarriers a slot.
func rowsTMASharedBytes(in DType, mr int, waves bool) uint32 {
	es := in.Size()
	sub := ref.SlabLen / rowsTMAHalves(in, mr)
	stage := (sub*rowsTMACols*es + mr*sub*es + 1023) &^ 1023
	st := rowsTMAStages(in, mr, waves)
	return uint32(1024 + st*stage + int(rowsTMAMaxSlabs(mr))*mr*rowsTMACols*4 + 2*st*8)
}

// rowsTMAFits reports whether gemm_rows_tma can run p at all: Forward or
// dX (layout nn or nt), the row groups within grid.y, every slab foldable
// in the block, and what the TMA maps need — 16-byte aligned bases and row
// pitches, extents below 2^31.
func rowsTMAFits(p problem) bool {
	const lim = math.MaxInt32 - ref.SlabLen
	es := int64(p.in.Size())
	mr := rowsTMAMR(p.rows)
	return p.layout != layoutTN && p.red <= rowsTMAMaxSlabs(mr)*ref.SlabLen &&
		p.a%16 == 0 && p.b%16 == 0 && (p.lda*es)%16 == 0 && (p.ldb*es)%16 == 0 &&
		p.rows <= lim && p.cols <= lim && p.red <= lim && ceilDiv(p.rows, int64(mr)) <= maxGridYZ
}

// familyRowsTMA describes gemm_rows_tma: a rows plan (planRows, rows.go)
// on an engine with the sm_90a family where rowsTMA's rule takes it,
// before gemm_rows' kernels. A filter pinning rowsPathTMA takes it
// wherever it fits, and falls back to the other rows families where it
// does not (as rowsPathAuto would).
var familyRowsTMA = &family{
	name:    "rows-tma",
	layouts: layoutsOf(layoutNN, layoutNT),
	class:   classRule,
	admits: func(f filter) bool {
		return rowsAdmits(f) && f.rowsPath != rowsPathOne && f.rowsPath != rowsPathTwo
	},
	archOK: func(d *device) bool { return d.hasWG },
	plan: func(d *device, p problem, f filter) (pl plan, c cost, ok bool, err error) {
		if ok, err := planRows(&p, &f, &pl); !ok || !d.rowsTMA(p, pl.mr, &f) {
			return pl, cost{}, false, err
		}
		pl.path = rowsPathTMA
		return pl, ruleCost, true, nil
	},
	launch: func(l launcher, p problem, _ plan) error { return l.rowsTMAKernel(&p) }, // every slab of a strip in one block
}

// rowsTMA reports whether a rows call runs gemm_rows_tma: the family is
// loaded (sm_90a), the call has at most 16 rows (MR = 4 or 16 in the rows
// plan) and fits the kernel, and the test forced it or the rule below takes
// it. The rule, from timings of every path (bench/NOTES-simt.md, round
// 9; bench/NOTES-engine.md, rows_tma.go), for M ≤ 4 (MR = 16 below):
// every dX (nt) and every f32 call, and 16-bit Forward while its strips
// run in one wave (the kernel takes most of an SM's shared memory, one
// block an SM, so a partial last wave leaves SMs idle) — except at one
// row, where the many-wave ring (rowsTMAWaves) runs such grids in one wave.
func (e *device) rowsTMA(p problem, mr int, f *filter) bool {
	if !e.hasWG || mr > rowsTMAMaxRows || !rowsTMAFits(p) {
		return false
	}
	switch f.rowsPath {
	case rowsPathTMA:
		return true
	case rowsPathOne, rowsPathTwo:
		return false
	}
	strips, sms := ceilDiv(p.cols, rowsTMACols), int64(max(e.sms, 1))
	if rowsTMAMR(p.rows) == rowsTMAMaxRows {
		// MR = 16 (5-16 rows) is bound by its FMA loop and its shared-memory
		// reads (eight or twelve consumer warps an SM), whatever the grid
		// and the rows, so it wins where the others are slower than that:
		// f32 whenever the strips fill the GPU, and 16-bit in one full wave;
		// it loses with few strips and with a second, partial wave of 16-bit
		// (bench/NOTES-simt.md rounds 9-11 and 15; bench/NOTES-engine.md,
		// rows_tma.go).
		if p.in == F32 {
			return 2*strips > sms
		}
		return 2*strips > sms && strips <= sms
	}
	// One row of 16-bit inputs over more strips than SMs runs the many-wave
	// ring (rowsTMAWaves), faster than the one-launch path.
	return p.layout == layoutNT || p.in == F32 || strips <= sms || rowsTMAMR(p.rows) == 1
}

// rowsTMAKernel encodes the call's TMA maps (x or dY: boxes of a ring
// slot's steps, 256 or 128 for f32 at MR = 16, × MR rows; W nn: 32
// columns × a slot's steps; W nt: 128 bytes of the reduction × 32 rows,
// 128-byte swizzle, as one 3-D box of a slot's boxes where the reduction
// is a whole number of 128-byte chunks; zeros past the matrix) and
// launches gemm_rows_tma, grid (column strips, row groups).
func (l launcher) rowsTMAKernel(p *problem) error {
	e := l.e
	mr := rowsTMAMR(p.rows)
	waves := rowsTMAWaves(*p, e.sms)
	id := rowsTMAIDs[rowsTMAKey{p.layout, p.in, p.out, mr, waves}]
	if err := l.need(p, id); err != nil {
		return err
	}
	if l.rec != nil {
		// Explain: the maps are this call's; only the launch is recorded.
		return l.rowsTMALaunch(p, id, mr, waves, 0)
	}
	dt := cudaload.TensorMapFloat32
	if p.in.Half() {
		dt = cudaload.TensorMapUint16 // raw bits: the kernel widens them
	}
	es := uint64(p.in.Size())
	// L2 promotion: with promotion each 64-byte row of a 16-bit nn box
	// brings its neighbour's row into L2, which the neighbouring strip then
	// hits; with 128-byte rows (f32 nn, every nt box) promotion was slower.
	// For 16-bit nn, 128 bytes beat 256 at one to four rows and lost at 16
	// (bench/NOTES-simt.md, rounds 9 and 12; bench/NOTES-engine.md,
	// rows_tma.go).
	l2 := cudaload.TensorMapL2PromotionNone
	if p.in.Half() && p.layout == layoutNN {
		l2 = cudaload.TensorMapL2Promotion128B
		if mr == 16 {
			l2 = cudaload.TensorMapL2Promotion256B
		}
	}
	const oob = cudaload.TensorMapOOBFillNone
	// x: one plain box a ring slot: faster than four 128-byte swizzled
	// boxes at MR = 16 (bench/NOTES-simt.md, round 15).
	xBox := uint32(ref.SlabLen / rowsTMAHalves(p.in, mr))
	var w3d int64
	err := e.tmEnc.Encode2D(&e.tmA, dt, cudaload.DevicePtr(p.a), uint64(p.red), uint64(p.rows), uint64(p.lda)*es,
		xBox, uint32(mr), cudaload.TensorMapSwizzleNone, l2, oob)
	switch {
	case err != nil:
	case p.layout == layoutNN:
		err = e.tmEnc.Encode2D(&e.tmB, dt, cudaload.DevicePtr(p.b), uint64(p.cols), uint64(p.red), uint64(p.ldb)*es,
			rowsTMACols, uint32(ref.SlabLen/rowsTMAHalves(p.in, mr)), cudaload.TensorMapSwizzleNone, l2, oob)
	case p.red%int64(128/es) == 0:
		// nt, the reduction a whole number of 128-byte chunks: W[cols][red]
		// read as (128 bytes, row, chunk), a slot's boxes in one copy, which
		// is faster (bench/NOTES-simt.md, round 15). Elsewhere the last
		// chunk would run past the row, so the 2-D boxes stay.
		w3d = 1
		chunk := uint64(128 / es)
		boxes := uint32(uint64(ref.SlabLen/rowsTMAHalves(p.in, mr)) / chunk)
		err = e.tmEnc.Encode3D(&e.tmB, dt, cudaload.DevicePtr(p.b),
			[3]uint64{chunk, uint64(p.cols), uint64(p.red) / chunk}, [2]uint64{uint64(p.ldb) * es, 128},
			[3]uint32{uint32(chunk), rowsTMACols, boxes}, cudaload.TensorMapSwizzle128B, l2, oob)
	default: // nt: W[cols][red], boxes of 128 bytes of the reduction × 32 rows
		err = e.tmEnc.Encode2D(&e.tmB, dt, cudaload.DevicePtr(p.b), uint64(p.red), uint64(p.cols), uint64(p.ldb)*es,
			uint32(128/es), rowsTMACols, cudaload.TensorMapSwizzle128B, l2, oob)
	}
	if err != nil {
		// rowsTMAFits admitted the call, so this is a bug, not a user error.
		return fmt.Errorf("gemm.%s: encoding the TMA maps of the TMA rows kernel: %w", p.op, err)
	}
	return l.rowsTMALaunch(p, id, mr, waves, w3d)
}

// rowsTMALaunch packs gemm_rows_tma's arguments around the maps in e.tmA
// and e.tmB and launches it, grid (column strips, row groups).
func (l launcher) rowsTMALaunch(p *problem, id kernelID, mr int, waves bool, w3d int64) error {
	e := l.e
	e.args.Reset().TensorMap(&e.tmA).TensorMap(&e.tmB).
		Ptr(cudaload.DevicePtr(p.c)).Ptr(cudaload.DevicePtr(p.bias)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.ldc).Int64(w3d)
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.cols, rowsTMACols)), Y: uint32(ceilDiv(p.rows, int64(mr))), Z: 1}
	return l.launch(p, id, grid, rowsTMAThreads(p.in, mr, waves), rowsTMASharedBytes(p.in, mr, waves), int64(mr), rowsTMACols)
}

// rowsTMAWaves reports whether a call takes the many-wave ring: one row of
// 16-bit inputs over more column strips than the GPU has SMs, where three
// shallow-ring blocks an SM run the grid as one wave; the deep ring keeps
// grids of one wave (bench/NOTES-engine.md, rows_tma.go).
func rowsTMAWaves(p problem, sms int) bool {
	return p.in.Half() && rowsTMAMR(p.rows) == 1 && ceilDiv(p.cols, rowsTMACols) > int64(max(sms, 1))
}
