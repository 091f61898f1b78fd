package gemm

import (
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
)

// run dispatches a validated call and enqueues its kernels: one for the
// tiled strategy, partials then fold for the others. Nothing is allocated
// unless the workspace must grow (see Presize).
func (e *Engine) run(p problem, err error) error {
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	if p.tier == TierTensorCore {
		return e.launchTC(p) // one kernel, no workspace (tc.go)
	}
	pl, err := e.choose(p)
	if err != nil {
		return err
	}
	if err := e.ws.ensure(p.op, pl.ws, e.stream.IsCapturing, e.ctx.MemAlloc); err != nil {
		return err
	}
	if err := e.ws.ensureCounters(p.op, pl.ctrs, e.stream.IsCapturing, e.ctx.MemAlloc, e.zero); err != nil {
		return err
	}
	switch pl.strategy {
	case StrategySplitSlab:
		err = e.launchSlabs(p, pl)
	case StrategyRows:
		if e.rowsOneLaunch(p, pl.mr) {
			return e.launchRowsFused(p, pl) // folds in the same kernel
		}
		err = e.launchRows(p, pl)
	default:
		return e.launchTiled(p, pl)
	}
	if err != nil {
		return err
	}
	return e.launchFold(p, pl)
}

func (e *Engine) launch(op string, fn *cudaload.Function, grid cudaload.Dim3, threads, shared uint32) error {
	cfg := cudaload.LaunchConfig{Grid: grid, Block: cudaload.Dim3{X: threads, Y: 1, Z: 1}, SharedMemBytes: shared, Stream: e.stream}
	if err := fn.Launch(cfg, &e.args); err != nil {
		return fmt.Errorf("gemm.%s: %w", op, err)
	}
	return nil
}

// missing reports a kernel the tables lack; validation admits only
// combinations that have one, so this is a bug, not a user error.
func missing(p problem, what string) error {
	return fmt.Errorf("gemm.%s: no %s kernel for %v %v→%v", p.op, what, p.layout, p.in, p.out)
}

// launchTiled: gemm_simt, grid (row tiles, column tiles), tiles 128 wide
// (detgemm_simt_*) or 64 (detgemm_simt64_*).
func (e *Engine) launchTiled(p problem, pl plan) error {
	fn, shared := e.fns.simt[kernelKey{p.layout, p.in, p.out}], uint32(simtSharedBytes)
	if pl.width == narrowWidth {
		fn, shared = e.fns.simt64[kernelKey{p.layout, p.in, p.out}], simt64SharedBytes
	}
	if fn == nil {
		return missing(p, "tiled")
	}
	e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(cudaload.DevicePtr(p.c)).Ptr(cudaload.DevicePtr(p.bias)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb).Int64(p.ldc)
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.rows, tileRows)), Y: uint32(ceilDiv(p.cols, pl.width)), Z: 1}
	return e.launch(p.op, fn, grid, simtThreads, shared)
}

// launchSlabs: gemm_slabs, grid (row tiles, column tiles, slab groups),
// tiles 128 wide (detgemm_slabs_*) or 64 (detgemm_slabs64_*).
func (e *Engine) launchSlabs(p problem, pl plan) error {
	fn := e.fns.slabs[slabsKey{p.layout, p.in}]
	if pl.width == narrowWidth {
		fn = e.fns.slabs64[slabsKey{p.layout, p.in}]
	}
	if fn == nil {
		return missing(p, "split-slab")
	}
	e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(e.ws.ptr).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb).Int64(pl.perBlock)
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.rows, tileRows)), Y: uint32(ceilDiv(p.cols, pl.width)), Z: uint32(pl.groups)}
	return e.launch(p.op, fn, grid, slabsThreads, 0)
}

// launchRows: gemm_rows, grid (column runs, slabs, row groups).
func (e *Engine) launchRows(p problem, pl plan) error {
	fn := e.fns.rows[rowsKey{p.layout, p.in, pl.mr}]
	if fn == nil {
		return missing(p, "rows")
	}
	e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(e.ws.ptr).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb)
	jt := int64(rowsThreads * pl.cn)
	grid := cudaload.Dim3{X: uint32((p.cols + jt - 1) / jt), Y: uint32(pl.slabs), Z: uint32((p.rows + int64(pl.mr) - 1) / int64(pl.mr))}
	return e.launch(p.op, fn, grid, rowsThreads, rowsSharedBytes(p.in, pl.mr, pl.cn))
}

// rowsOneLaunch reports whether a rows call of mr rows a block takes the
// one-launch kernel. Its 16-byte copies of W need W and W's row stride
// 16-byte aligned. Beyond that it is a speed rule, from the H200 figures in
// bench/NOTES-simt.md (round 4): one launch wins at MR = 16 and 32 (M = 16
// at 4096x4096: 31-34 µs against 39-42) and for forward with 16-bit inputs
// at MR = 4 (M = 1: 15.8 µs against 19.5); at MR = 4 the f32 forward is a
// tie at 4096 columns and 6 % slower at 11008, and dX (nt) is slower (f32
// M = 1: 33 µs against 24), so those stay on two launches.
func (e *Engine) rowsOneLaunch(p problem, mr int) bool {
	es := uintptr(p.in.Size())
	if p.b%16 != 0 || (uintptr(p.ldb)*es)%16 != 0 {
		return false
	}
	switch e.force.rowsPath {
	case rowsPathOne:
		return true
	case rowsPathTwo:
		return false
	}
	return mr > 4 || (p.layout == layoutNN && p.in.Half())
}

// launchRowsFused: gemm_rows' one-launch kernel (partials, then the last
// block of each column run folds them), grid (column runs, slabs, row
// groups).
func (e *Engine) launchRowsFused(p problem, pl plan) error {
	fn := e.fns.rowsf[rowsFusedKey{p.layout, p.in, p.out, pl.mr}]
	if fn == nil {
		return missing(p, "one-launch rows")
	}
	e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(e.ws.ptr).Ptr(e.ws.ctr).
		Ptr(cudaload.DevicePtr(p.c)).Ptr(cudaload.DevicePtr(p.bias)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb)
	jt := rowsFusedCols(pl.mr)
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.cols, jt)), Y: uint32(pl.slabs), Z: uint32(ceilDiv(p.rows, int64(pl.mr)))}
	return e.launch(p.op, fn, grid, uint32(rowsFusedThreads(pl.mr)), rowsFusedSharedBytes(p.in, pl.mr, p.layout == layoutNT))
}

// launchFold: gemm_fold over the rows·cols outputs (row stride cols: every
// output of the triad is contiguous), a grid-stride loop.
func (e *Engine) launchFold(p problem, pl plan) error {
	fn := e.fns.fold[foldKey{p.out, p.layout == layoutTN}]
	if fn == nil {
		return missing(p, "fold")
	}
	n := uint64(p.rows) * uint64(p.cols)
	e.args.Reset().
		Ptr(e.ws.ptr).Ptr(cudaload.DevicePtr(p.c)).Ptr(cudaload.DevicePtr(p.bias)).
		Uint64(n).Uint64(uint64(p.cols)).Uint64(uint64(pl.slabs))
	return e.launch(p.op, fn, cudaload.Dim3{X: foldBlocks(n, e.sms), Y: 1, Z: 1}, foldThreads, 0)
}

// foldBlocks covers n elements with one per thread, capped at 16 blocks
// per SM (the loop strides over the rest).
func foldBlocks(n uint64, sms int) uint32 {
	b := (n + foldThreads - 1) / foldThreads
	return uint32(max(1, min(b, uint64(max(sms, 1))*16)))
}
