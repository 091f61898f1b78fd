package gemm

import (
	"fmt"

	"github.com/detgemm/detgemm/gemm/internal/entries"
)

// The kernel families the engine loads (kernels/cuda/<family>.cu).
const (
	simtFamily  = entries.SimtFamily  // StrategyTiled
	slabsFamily = entries.SlabsFamily // StrategySplitSlab partials
	rowsFamily  = entries.RowsFamily  // StrategyRows partials
	foldFamily  = entries.FoldFamily  // the ordered fold of both
	// streamFamily is StrategyStream's (dW with a short reduction).
	streamFamily = entries.DWStreamFamily
	// rowsFusedFamily holds the one-launch rows kernels.
	rowsFusedFamily = entries.RowsFusedFamily
	// tcFamily (tc.go) is TierTensorCore's.
)

// simtSharedBytes is gemm_simt's dynamic shared memory per block of square
// tiles (two staged k-tiles plus the slab totals; gemm_simt.cu asserts the
// same number), simt64SharedBytes its narrow tiles'. The split-slab kernels
// use 33 KiB (square) or 25 KiB (narrow) of static shared memory, the fold
// kernel none; the rows kernels' is rowsSharedBytes.
const (
	simtThreads       = 256
	simtSharedBytes   = 99328
	simt64SharedBytes = 58368
	slabsThreads      = 256
	foldThreads       = 256
)

// kernelKey names a tiled (gemm_simt) entry point: layout, input, output.
type kernelKey struct {
	layout  layout
	in, out DType
}

func (k kernelKey) simtName() string {
	return fmt.Sprintf("detgemm_simt_%v_%v_%v", k.layout, k.in, k.out)
}

// simt64Name is the entry point of the same kernel with 128×64 tiles.
func (k kernelKey) simt64Name() string {
	return fmt.Sprintf("detgemm_simt64_%v_%v_%v", k.layout, k.in, k.out)
}

// slabsKey names a split-slab partials kernel; partials are f32 whatever
// the output type.
type slabsKey struct {
	layout layout
	in     DType
}

func (k slabsKey) name() string { return fmt.Sprintf("detgemm_slabs_%v_%v", k.layout, k.in) }

// name64 is the entry point of the same kernel with 128×64 tiles.
func (k slabsKey) name64() string { return fmt.Sprintf("detgemm_slabs64_%v_%v", k.layout, k.in) }

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

// foldKey names a fold kernel: output type, and whether it accumulates
// onto the output (dW) or stores (Forward, DX).
type foldKey struct {
	out        DType
	accumulate bool
}

func (k foldKey) name() string {
	if k.accumulate {
		return fmt.Sprintf("detgemm_fold_accumulate_%v", k.out)
	}
	return fmt.Sprintf("detgemm_fold_store_%v", k.out)
}

// streamKey names a stream kernel: input type and the rows of dW a block
// owns (streamTall or streamShort).
type streamKey struct {
	in DType
	sr int64
}

func (k streamKey) name() string {
	if k.sr == streamShort {
		return fmt.Sprintf("detgemm_dwstream32_%v", k.in)
	}
	return fmt.Sprintf("detgemm_dwstream_%v", k.in)
}

// sharedBytes is the kernel's dynamic shared memory (gemm_dw_stream.cu's
// SM_BYTES): the master tile and two stages of X and dY rows.
func (k streamKey) sharedBytes() uint32 {
	if k.sr == streamShort {
		return 36864
	}
	return 57344
}

// The IEEE families' lookup tables, from the entry descriptions.
var (
	simtIDs    = indexOf(func(k entries.Key) kernelKey { return kernelKey{layoutOf(k.Layout), dtypeOf(k.In), dtypeOf(k.Out)} }, "simt")
	simt64IDs  = indexOf(func(k entries.Key) kernelKey { return kernelKey{layoutOf(k.Layout), dtypeOf(k.In), dtypeOf(k.Out)} }, "simt64")
	slabsIDs   = indexOf(func(k entries.Key) slabsKey { return slabsKey{layoutOf(k.Layout), dtypeOf(k.In)} }, "slabs")
	slabs64IDs = indexOf(func(k entries.Key) slabsKey { return slabsKey{layoutOf(k.Layout), dtypeOf(k.In)} }, "slabs64")
	rowsIDs    = indexOf(func(k entries.Key) rowsKey { return rowsKey{layoutOf(k.Layout), dtypeOf(k.In), k.MR} }, "rows")
	rowsfIDs   = indexOf(func(k entries.Key) rowsFusedKey {
		return rowsFusedKey{layoutOf(k.Layout), dtypeOf(k.In), dtypeOf(k.Out), k.MR}
	}, "rowsf")
	foldIDs   = indexOf(func(k entries.Key) foldKey { return foldKey{dtypeOf(k.Out), k.Acc} }, "fold")
	streamIDs = indexOf(func(k entries.Key) streamKey { return streamKey{dtypeOf(k.In), int64(k.SR)} }, "dwstream")
)
