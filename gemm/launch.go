package gemm

import (
	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
)

// tiledGeometry is the shared memory of gemm_simt's tiles of a width and
// the blocks an SM holds by their registers.
func tiledGeometry(width int64) (shared uint32, regBlocks int64) {
	if width == narrowWidth {
		return simt64SharedBytes, simt64RegBlocks
	}
	return simtSharedBytes, simtRegBlocks
}

// tiledKernel is the tiled kernel of a width: gemm_simt's square
// (detgemm_simt_*) or narrow (detgemm_simt64_*) tiles.
func tiledKernel(p *problem, width int64) kernelID {
	if width == narrowWidth {
		return simt64IDs[kernelKey{p.layout, p.in, p.out}]
	}
	return simtIDs[kernelKey{p.layout, p.in, p.out}]
}

// tiled: gemm_simt, grid (row tiles, column tiles). A plan with a split
// tail runs its last rows split-slab; one with a cut (tiledTail) runs the
// grid's short last round in a launch of its own.
func (l launcher) tiled(p *problem, pl *plan) error {
	id := tiledKernel(p, pl.width)
	shared, _ := tiledGeometry(pl.width)
	if err := l.need(p, id); err != nil {
		return err
	}
	ty := ceilDiv(p.cols, pl.width)
	if pl.tailRow > 0 {
		// The plan's split tail: head rows tiled, the rest split-slab and
		// folded (grids.splitTail); the workspace holds the tail's partials.
		head, tail := p.split(cutRows, pl.tailRow)
		if err := l.tileGrid(&head, id, ty, shared, pl.width); err != nil {
			return err
		}
		tp := plan{strategy: StrategySplitSlab, slabs: pl.slabs, perBlock: pl.tailG,
			groups: ceilDiv(pl.slabs, pl.tailG), width: squareWidth}
		if err := l.slabs(&tail, &tp); err != nil {
			return err
		}
		return l.fold(&tail, &tp)
	}
	if pl.cut == cutNone {
		return l.tileGrid(p, id, ty, shared, pl.width)
	}
	at, headTY, tailTY := pl.cutK*tileRows, ty, ty
	if pl.cut == cutCols {
		at, headTY, tailTY = pl.cutK*pl.width, pl.cutK, ty-pl.cutK
	}
	head, tail := p.split(pl.cut, at)
	if err := l.tileGrid(&head, id, headTY, shared, pl.width); err != nil {
		return err
	}
	return l.tileGrid(&tail, id, tailTY, l.e.loneShared, pl.width)
}

// tileGrid launches one tiled kernel over all of p's row tiles and ty
// column tiles of width w, with shared bytes of dynamic shared memory.
func (l launcher) tileGrid(p *problem, id kernelID, ty int64, shared uint32, w int64) error {
	l.e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(cudaload.DevicePtr(p.c)).Ptr(cudaload.DevicePtr(p.bias)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb).Int64(p.ldc)
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.rows, tileRows)), Y: uint32(ty), Z: 1}
	return l.launch(p, id, grid, simtThreads, shared, tileRows, w)
}

// tiledCut is the cut of a tiled plan without a split tail (tiledTail):
// none unless a block can be kept alone on its SM (loneShared); f.tailSMs
// stands in for the SM count.
func (e *device) tiledCut(p *problem, pl *plan, f *filter) (cut int, k int64) {
	shared, regBlocks := tiledGeometry(pl.width)
	if e.loneShared <= shared {
		return cutNone, 0
	}
	sms := int64(e.sms)
	if f.tailSMs > 0 {
		sms = f.tailSMs
	}
	return tiledTail(ceilDiv(p.rows, tileRows), ceilDiv(p.cols, pl.width), blocksPerSM(shared, regBlocks, e.smemPerSM), sms)
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
// idle (bench/NOTES-engine.md, launch.go). So whole column (or row) tiles are cut off the end,
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

// slabs: gemm_slabs, grid (row tiles, column tiles, slab groups), tiles
// 128 wide (detgemm_slabs_*) or 64 (detgemm_slabs64_*).
func (l launcher) slabs(p *problem, pl *plan) error {
	id := slabsIDs[slabsKey{p.layout, p.in}]
	if pl.width == narrowWidth {
		id = slabs64IDs[slabsKey{p.layout, p.in}]
	}
	if err := l.need(p, id); err != nil {
		return err
	}
	l.e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(l.e.ws.ptr).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb).Int64(pl.perBlock)
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.rows, tileRows)), Y: uint32(ceilDiv(p.cols, pl.width)), Z: uint32(pl.groups)}
	return l.launch(p, id, grid, slabsThreads, 0, tileRows, pl.width)
}

// stream: gemm_dw_stream, grid (column blocks of 128, row blocks of
// pl.sr).
func (l launcher) stream(p *problem, pl *plan) error {
	k := streamKey{p.in, pl.sr}
	id := streamIDs[k]
	if err := l.need(p, id); err != nil {
		return err
	}
	l.e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(cudaload.DevicePtr(p.c)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb).Int64(p.ldc)
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.cols, streamCols)), Y: uint32(ceilDiv(p.rows, pl.sr)), Z: 1}
	return l.launch(p, id, grid, streamThreads, k.sharedBytes(), pl.sr, streamCols)
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

// rowsPathFor is the path a rows plan of mr rows a block runs on this
// engine: gemm_rows_tma (rowsTMA), the one-launch kernel (rowsOneLaunch),
// or partials and fold.
func (e *device) rowsPathFor(p *problem, mr int, f *filter) rowsPath {
	switch {
	case e.rowsTMA(*p, mr, f):
		return rowsPathTMA
	case e.rowsOneLaunch(*p, mr, f):
		return rowsPathOne
	}
	return rowsPathTwo
}

// rowsOneLaunch reports whether a rows call of mr rows a block takes the
// one-launch kernel. Its 16-byte copies of W need W and W's row stride
// 16-byte aligned. Beyond that it is a speed rule (bench/NOTES-engine.md,
// launch.go): one launch wins at MR = 16 and 32; at MR = 4 for 16-bit
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

// fold: gemm_fold over the rows·cols outputs (row stride cols: every
// output of the triad is contiguous), a grid-stride loop.
func (l launcher) fold(p *problem, pl *plan) error {
	id := foldIDs[foldKey{p.out, p.layout == layoutTN}]
	if err := l.need(p, id); err != nil {
		return err
	}
	n := uint64(p.rows) * uint64(p.cols)
	l.e.args.Reset().
		Ptr(l.e.ws.ptr).Ptr(cudaload.DevicePtr(p.c)).Ptr(cudaload.DevicePtr(p.bias)).
		Uint64(n).Uint64(uint64(p.cols)).Uint64(uint64(pl.slabs))
	return l.launch(p, id, cudaload.Dim3{X: foldBlocks(n, l.e.sms), Y: 1, Z: 1}, foldThreads, 0, 1, 1)
}

// foldBlocks covers n elements with one per thread, capped at 16 blocks
// per SM (the loop strides over the rest).
func foldBlocks(n uint64, sms int) uint32 {
	b := (n + foldThreads - 1) / foldThreads
	return uint32(max(1, min(b, uint64(max(sms, 1))*16)))
}
