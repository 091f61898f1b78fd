package gemm

import (
	"fmt"
	"math"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
)

// rowsTMAFamily is the IEEE few-row Forward kernel on Hopper
// (kernels/cuda/gemm_rows_tma.cu, sm_90a only): a block owns 32 output
// columns over the whole reduction, TMA streams W's slab boxes into a ring,
// and the block folds its slabs itself — no workspace, no arrival counter,
// no second pass.
const rowsTMAFamily = "gemm_rows_tma"

// Geometry of gemm_rows_tma (rowst:: in the kernel).
const (
	rowsTMACols     = 32 // BN: output columns a block
	rowsTMARows     = 4  // the most output rows a block takes (MR = 1 or 4)
	rowsTMAMaxSlabs = 32 // MAXS: slabs a block folds (R ≤ 8192)
)

// rowsTMAKey names a gemm_rows_tma entry point: input and output type,
// rows a block (1 or 4).
type rowsTMAKey struct {
	in, out DType
	mr      int
}

func (k rowsTMAKey) name() string {
	return fmt.Sprintf("detgemm_rowst_nn_%v_%v_m%d", k.in, k.out, k.mr)
}

// rowsTMAKernels is every gemm_rows_tma entry point.
var rowsTMAKernels = func() (out []rowsTMAKey) {
	for _, mr := range []int{1, rowsTMARows} {
		for _, io := range [][2]DType{{F32, F32}, {BF16, BF16}, {BF16, F32}, {F16, F16}, {F16, F32}} {
			out = append(out, rowsTMAKey{io[0], io[1], mr})
		}
	}
	return out
}()

// rowsTMAMR is the rows a block for a call of rows rows: 1 for one row
// (no padding rows to compute), else 4.
func rowsTMAMR(rows int64) int {
	if rows == 1 {
		return 1
	}
	return rowsTMARows
}

// rowsTMAStages is the kernel's ring depth (Cfg::STAGES): f32 six 33 KiB
// slab boxes (MR = 1) or five 36 KiB ones (MR = 4); 16-bit inputs ten or
// eight.
func rowsTMAStages(in DType, mr int) int {
	switch {
	case in == F32 && mr == 1:
		return 6
	case in == F32:
		return 5
	case mr == 1:
		return 10
	}
	return 8
}

// rowsTMAThreads is the kernel's block: a consumer warp a stage and the
// producer warp.
func rowsTMAThreads(in DType, mr int) uint32 { return uint32(32 * (rowsTMAStages(in, mr) + 1)) }

// rowsTMASharedBytes is Cfg<DT, MR>::SMEM: 1 KiB of alignment slack, the
// ring (a 256-row × 32-column W box and an MR-row × 256 x box a stage), the
// slab results (MAXS × MR × 32 f32) and two mbarriers a stage.
func rowsTMASharedBytes(in DType, mr int) uint32 {
	es := in.Size()
	stage := ref.SlabLen*rowsTMACols*es + mr*ref.SlabLen*es
	st := rowsTMAStages(in, mr)
	return uint32(1024 + st*stage + rowsTMAMaxSlabs*mr*rowsTMACols*4 + 2*st*8)
}

// rowsTMAFits reports whether gemm_rows_tma can run p at all: Forward
// (layout nn), at most one row group's worth of rows per grid row (any M:
// grid.y counts the groups), every slab foldable in the block, and what the
// TMA maps need — 16-byte aligned bases and row pitches, extents below
// 2^31.
func rowsTMAFits(p problem) bool {
	const lim = math.MaxInt32 - ref.SlabLen
	es := int64(p.in.Size())
	return p.layout == layoutNN && p.red <= rowsTMAMaxSlabs*ref.SlabLen &&
		p.a%16 == 0 && p.b%16 == 0 && (p.lda*es)%16 == 0 && (p.ldb*es)%16 == 0 &&
		p.rows <= lim && p.cols <= lim && p.red <= lim && ceilDiv(p.rows, rowsTMARows) <= maxGridYZ
}

// rowsTMA reports whether a rows call runs gemm_rows_tma: the family is
// loaded (sm_90a), the call has at most four rows (MR = 4 in the rows
// plan) and fits the kernel, and either the test forced it or its strips
// run in one wave (at most one block an SM: the kernel takes most of an
// SM's shared memory). Measured on the H200 (bench/NOTES-simt.md, round
// 9): one wave, it beat the one-launch kernel everywhere — 1×4096×4096 f32
// 20.8 µs against 22.5, bf16 13.5 against 14.9, 1×4096×1024 f32 11.9
// against 18.7, 4×4096×4096 f32 21.7 against 25.4 — and with 344 strips
// (2.6 waves, 1×4096×11008) bf16 lost, 35.0 against 31.6.
func (e *Engine) rowsTMA(p problem, mr int) bool {
	if !e.hasWG || mr != rowsTMARows || !rowsTMAFits(p) {
		return false
	}
	switch e.force.rowsPath {
	case rowsPathTMA:
		return true
	case rowsPathOne, rowsPathTwo:
		return false
	}
	return ceilDiv(p.cols, rowsTMACols) <= int64(max(e.sms, 1))
}

// launchRowsTMA encodes the call's TMA maps (x: boxes of 256 of the
// reduction × MR rows; W: 32 columns × 256 rows; no swizzle, zeros past the
// matrix) and launches gemm_rows_tma, grid (column strips, row groups).
func (e *Engine) launchRowsTMA(p problem) error {
	mr := rowsTMAMR(p.rows)
	fn := e.fns.rowsTMA[rowsTMAKey{p.in, p.out, mr}]
	if fn == nil {
		return missing(p, "TMA rows")
	}
	dt := cudaload.TensorMapFloat32
	if p.in.Half() {
		dt = cudaload.TensorMapUint16 // raw bits: the kernel widens them
	}
	es := uint64(p.in.Size())
	const l2, oob = cudaload.TensorMapL2Promotion256B, cudaload.TensorMapOOBFillNone
	err := e.tmEnc.Encode2D(&e.tmA, dt, cudaload.DevicePtr(p.a), uint64(p.red), uint64(p.rows), uint64(p.lda)*es,
		ref.SlabLen, uint32(mr), cudaload.TensorMapSwizzleNone, l2, oob)
	if err == nil {
		err = e.tmEnc.Encode2D(&e.tmB, dt, cudaload.DevicePtr(p.b), uint64(p.cols), uint64(p.red), uint64(p.ldb)*es,
			rowsTMACols, ref.SlabLen, cudaload.TensorMapSwizzleNone, l2, oob)
	}
	if err != nil {
		// rowsTMAFits admitted the call, so this is a bug, not a user error.
		return fmt.Errorf("gemm.%s: encoding the TMA maps of the TMA rows kernel: %w", p.op, err)
	}
	e.args.Reset().TensorMap(&e.tmA).TensorMap(&e.tmB).
		Ptr(cudaload.DevicePtr(p.c)).Ptr(cudaload.DevicePtr(p.bias)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.ldc)
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.cols, rowsTMACols)), Y: uint32(ceilDiv(p.rows, int64(mr))), Z: 1}
	return e.launch(p.op, fn, grid, rowsTMAThreads(p.in, mr), rowsTMASharedBytes(p.in, mr))
}
