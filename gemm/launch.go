package gemm

import (
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
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
		return e.launchTC(p) // tc.go
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
	case StrategyStream:
		return e.launchStream(p, pl) // one kernel, no workspace
	case StrategyRows:
		if e.rowsTMA(p, pl.mr) {
			return e.launchRowsTMA(p) // every slab of a strip in one block (rows_tma.go)
		}
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

// launch enqueues one engine kernel on the engine's stream with the
// arguments in e.args. Every engine kernel waits for the kernel ahead of it
// in the stream before it touches global memory (prelude.cuh's
// dg_grid_dependency_wait), so on sm_90 and newer it is launched
// overlapped (programmatic dependent launch): the grid may be scheduled
// while that kernel's last blocks still run, and the launch latency and
// the kernel's set-up hide behind them. Stream order and every bit are
// unchanged; the test-only force.serial launches plainly.
func (e *Engine) launch(op string, fn *cudaload.Function, grid cudaload.Dim3, threads, shared uint32) error {
	cfg := cudaload.LaunchConfig{Grid: grid, Block: cudaload.Dim3{X: threads, Y: 1, Z: 1}, SharedMemBytes: shared, Stream: e.stream,
		Overlap: !e.force.serial && e.arch.Major >= 9}
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
// (detgemm_simt_*) or 64 (detgemm_simt64_*). A plan with a split tail runs
// its last rows split-slab; otherwise, where the grid ends in a short
// partial round, that round goes in a launch of its own (tiledTail).
func (e *Engine) launchTiled(p problem, pl plan) error {
	fn, shared, regBlocks := e.fns.simt[kernelKey{p.layout, p.in, p.out}], uint32(simtSharedBytes), simtRegBlocks
	if pl.width == narrowWidth {
		fn, shared, regBlocks = e.fns.simt64[kernelKey{p.layout, p.in, p.out}], simt64SharedBytes, simt64RegBlocks
	}
	if fn == nil {
		return missing(p, "tiled")
	}
	tx, ty := ceilDiv(p.rows, tileRows), ceilDiv(p.cols, pl.width)
	if pl.tailRow > 0 {
		// The plan's split tail: head rows tiled, the rest split-slab and
		// folded (grids.splitTail); the workspace holds the tail's partials.
		head, tail := p.split(cutRows, pl.tailRow)
		if err := e.launchTileGrid(head, fn, ty, shared); err != nil {
			return err
		}
		tp := plan{strategy: StrategySplitSlab, slabs: pl.slabs, perBlock: pl.tailG,
			groups: ceilDiv(pl.slabs, pl.tailG), width: squareWidth}
		if err := e.launchSlabs(tail, tp); err != nil {
			return err
		}
		return e.launchFold(tail, tp)
	}
	cut, k := cutNone, int64(0)
	if e.loneShared > shared {
		sms := int64(e.sms)
		if e.force.tailSMs > 0 {
			sms = e.force.tailSMs
		}
		cut, k = tiledTail(tx, ty, blocksPerSM(shared, regBlocks, e.smemPerSM), sms)
	}
	if cut == cutNone {
		return e.launchTileGrid(p, fn, ty, shared)
	}
	at, headTY, tailTY := k*tileRows, ty, ty
	if cut == cutCols {
		at, headTY, tailTY = k*pl.width, k, ty-k
	}
	head, tail := p.split(cut, at)
	if err := e.launchTileGrid(head, fn, headTY, shared); err != nil {
		return err
	}
	return e.launchTileGrid(tail, fn, tailTY, e.loneShared)
}

// launchTileGrid launches one tiled kernel over all of p's row tiles and ty
// column tiles, with shared bytes of dynamic shared memory.
func (e *Engine) launchTileGrid(p problem, fn *cudaload.Function, ty int64, shared uint32) error {
	e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(cudaload.DevicePtr(p.c)).Ptr(cudaload.DevicePtr(p.bias)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb).Int64(p.ldc)
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.rows, tileRows)), Y: uint32(ty), Z: 1}
	return e.launch(p.op, fn, grid, simtThreads, shared)
}

// The blocks of a tiled kernel one SM holds by its launch bounds
// (registers); shared memory may allow fewer (blocksPerSM).
const (
	simtRegBlocks   int64 = 2
	simt64RegBlocks int64 = 3
)

// reservedSharedPerBlock is the shared memory the driver sets aside for
// every resident block (sm_80 and later).
const reservedSharedPerBlock = 1024

// blocksPerSM is how many blocks of a kernel with shared bytes of dynamic
// shared memory and regBlocks blocks' worth of registers an SM runs at once.
func blocksPerSM(shared uint32, regBlocks int64, perSM uint32) int64 {
	return min(regBlocks, int64(perSM)/(int64(shared)+reservedSharedPerBlock))
}

// loneShared is the least dynamic shared memory that keeps a block alone
// on its SM (two would need more than the SM has), or 0 where one block may
// not take that much (optin).
func loneShared(perSM, optin int) uint32 {
	need := perSM/2 - reservedSharedPerBlock + 1
	if need <= 0 || need > optin {
		return 0
	}
	return uint32(need)
}

// The ways tiledTail cuts a grid.
const (
	cutNone = iota
	cutCols // the head is column tiles [0, k)
	cutRows // the head is row tiles [0, k)
)

// tiledTail decides whether the tiled grid of tx × ty blocks (x: row tiles,
// y: column tiles), perSM of which run at once on each of sms SMs, runs as
// two launches. A grid that fills whole rounds of perSM·sms blocks and ends
// in a partial round of at most sms blocks would best run that round one
// block per SM, but the hardware starts each block where a slot frees
// first, and it has been seen to double them up on some SMs while others
// idle (2048×768×3072 f32 forward on the H200: up to 4 blocks on one SM,
// 1.2× the time of 3). So whole column (or row) tiles are cut off the end,
// at most sms blocks, and launched after the rest with loneShared bytes of
// shared memory, which no SM can hold twice. The cut is the one with the
// smaller tail (columns on a tie); cutNone where the grid has no such
// partial round or no cut gives a tail of at most sms blocks. Bits do not
// change: every element's chain is the same in any launch.
func tiledTail(tx, ty, perSM, sms int64) (cut int, k int64) {
	tiles, slots := tx*ty, perSM*sms
	if perSM < 2 || tiles <= slots {
		return cutNone, 0
	}
	r := tiles % slots
	if r == 0 || r > sms {
		return cutNone, 0
	}
	full := tiles - r
	best, bestTail := cutNone, int64(0)
	try := func(c int, per, count int64) {
		kk := full / per
		if kk < 1 || kk >= count {
			return
		}
		tail := tiles - kk*per
		if tail <= sms && (best == cutNone || tail < bestTail) {
			best, bestTail, k = c, tail, kk
		}
	}
	try(cutCols, tx, ty)
	try(cutRows, ty, tx)
	return best, k
}

// split returns p restricted to its output columns (cutCols) or rows
// (cutRows) before at, and to those from at on with the pointers moved
// there.
func (p problem) split(cut int, at int64) (head, tail problem) {
	head, tail = p, p
	in, out := int64(p.in.Size()), int64(p.out.Size())
	if cut == cutCols {
		head.cols, tail.cols = at, p.cols-at
		step := in // B(r, j) = W[r, j]
		if p.layout == layoutNT {
			step = p.ldb * in // B(r, j) = W[j, r]
		}
		tail.b += uintptr(at * step)
		tail.c += uintptr(at * out)
		if p.bias != 0 {
			tail.bias += uintptr(at * 4)
		}
		return head, tail
	}
	head.rows, tail.rows = at, p.rows-at
	step := p.lda * in // A(i, r) = X[i, r]
	if p.layout == layoutTN {
		step = in // A(i, r) = X[r, i]
	}
	tail.a += uintptr(at * step)
	tail.c += uintptr(at * p.ldc * out)
	return head, tail
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

// launchStream: gemm_dw_stream, grid (column blocks of 128, row blocks of
// pl.sr).
func (e *Engine) launchStream(p problem, pl plan) error {
	k := streamKey{p.in, pl.sr}
	fn := e.fns.stream[k]
	if fn == nil {
		return missing(p, "stream")
	}
	e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(cudaload.DevicePtr(p.c)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb).Int64(p.ldc)
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.cols, streamCols)), Y: uint32(ceilDiv(p.rows, pl.sr)), Z: 1}
	return e.launch(p.op, fn, grid, streamThreads, k.sharedBytes())
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
// bench/NOTES-simt.md (rounds 4 and 7): one launch wins at MR = 16 and 32
// (M = 16 at 4096x4096: 31-34 µs against 39-42); at MR = 4 for 16-bit
// inputs (M = 1 bf16 at 4096x4096: forward 14.8 µs against 19.0, dX 16.8
// against 20.6), and for f32 forward while its blocks fit the GPU at once,
// three an SM (M = 1 at 4096x4096, 256 blocks: 22.7 against 24.3); a
// second round of blocks (4096x11008: 688) costs it as much as the second
// launch costs the two (53.6 against 53.8, 55.3 against 54.3 at
// 11008x4096). f32 dX at MR = 4 stays on two launches (M = 1: 26.2 against
// 24.3): the one-launch kernel stages W's rows in 64-byte pieces there.
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
	if mr > 4 || p.in.Half() {
		return true
	}
	if p.layout != layoutNN {
		return false
	}
	blocks := ceilDiv(p.cols, rowsFusedCols(mr)) * ceilDiv(p.red, ref.SlabLen) * ceilDiv(p.rows, int64(mr))
	return blocks <= 3*int64(e.sms)
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
