package gemm

import (
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
)

// gemm_fold: the ordered fold of slab partials from the workspace, the
// second launch of the split-slab and two-launch rows plans and of the
// tensor-core plans on planes. Not a family of its own: no plan runs it
// alone.

// foldFamily is the fold kernels' source.
const foldFamily = entries.FoldFamily

// foldThreads is the fold kernels' block size (no shared memory).
const foldThreads = 256

// foldIDs is the fold kernels' lookup table, from the entry descriptions.
var foldIDs = indexOf(func(k entries.Key) foldKey { return foldKey{dtypeOf(k.Out), k.Acc} }, "fold")

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
