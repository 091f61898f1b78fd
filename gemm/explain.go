package gemm

import (
	"fmt"
	"strings"

	"github.com/detgemm/detgemm/cudaload"
)

// Explanation is what the engine would run for one call, without running
// it: the plan (strategy, slabs, workspace) and every kernel launch in
// order. Engine.Explain returns it. It decides speed only: every kernel
// the dispatcher can pick gives the call the same bits.
type Explanation struct {
	Op       string // "Forward", "DW" or "DX"
	Tier     Tier
	In, Out  DType
	M, K, N  int      // the call's dimensions, as named in its Args
	Strategy Strategy // as Engine.Strategy reports it
	// Tile is the outputs one block of the main kernel computes, rows ×
	// columns ("128x128"; "4x256" for the one-launch rows kernel at four
	// rows a block).
	Tile string
	// Slabs is the plan's S: the reduction's slabs, each an ascending chain,
	// folded in a fixed order (1: one chain).
	Slabs int64
	// SlabsPerBlock is split-slab's G, the slabs one block computes (for
	// tiled with a split tail, the tail's G); 0 elsewhere.
	SlabsPerBlock int64
	// WorkspaceBytes is the workspace the call needs, as
	// Engine.WorkspaceBytes reports it.
	WorkspaceBytes uint64
	// Launches are the kernels the call enqueues, in stream order.
	Launches []Launch
}

// Launch is one kernel launch of a call.
type Launch struct {
	Kernel      string        // the CUDA entry point, e.g. "detgemm_simt_nn_f32_f32"
	Family      string        // its source, kernels/cuda/<Family>.cu
	Grid        cudaload.Dim3 // blocks
	Threads     uint32        // threads a block (one-dimensional blocks)
	SharedBytes uint32        // dynamic shared memory a block
}

// String reads "detgemm_fold_store_f32 (gemm_fold) grid (528,1,1) block
// 256 shared 0 B".
func (l Launch) String() string {
	return fmt.Sprintf("%s (%s) grid %v block %d shared %d B", l.Kernel, l.Family, l.Grid, l.Threads, l.SharedBytes)
}

// Kernels is the entry points of x.Launches, in order.
func (x Explanation) Kernels() []string {
	out := make([]string, len(x.Launches))
	for i, l := range x.Launches {
		out[i] = l.Kernel
	}
	return out
}

// String is a one-paragraph summary: the call, the plan, then one line a
// launch.
func (x Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s M=%d K=%d N=%d tier %v %v→%v: %v, tile %s, %d slab", x.Op, x.M, x.K, x.N, x.Tier, x.In, x.Out, x.Strategy, x.Tile, x.Slabs)
	if x.Slabs != 1 {
		b.WriteString("s")
	}
	if x.SlabsPerBlock > 0 {
		fmt.Fprintf(&b, " (%d a block)", x.SlabsPerBlock)
	}
	fmt.Fprintf(&b, ", workspace %d B", x.WorkspaceBytes)
	for i, l := range x.Launches {
		fmt.Fprintf(&b, "\n  %d. %v", i+1, l)
	}
	return b.String()
}

// tileName formats a block's outputs.
func tileName(rows, cols int64) string { return fmt.Sprintf("%dx%d", rows, cols) }
