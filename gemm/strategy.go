package gemm

import "fmt"

// Strategy is how the engine spreads one call over the GPU. Every strategy
// computes the same plan — the same slab chains, folded by the same
// additions in the same order — so the choice never changes a bit of the
// output. It only changes speed and the workspace a call needs.
type Strategy uint8

// The strategies. The zero Strategy means "let the dispatcher choose".
const (
	// StrategyTiled: one kernel (gemm_simt), 128×128 output tiles (128×64
	// where the square tiles underfill the GPU), each block running every
	// slab of its tile and folding them in place. No workspace. Best when
	// the tiles fill the GPU.
	StrategyTiled Strategy = iota + 1
	// StrategySplitSlab: the slabs of each 128×128 (or 128×64) tile are
	// spread over several blocks (gemm_slabs), each slab's partial written
	// to the workspace, then a fold kernel (gemm_fold) adds them in order.
	// For shapes whose tiles underfill the GPU and whose reduction has
	// several slabs.
	StrategySplitSlab
	// StrategyRows: for Forward and DX with few rows (M ≤ 32): one block per
	// slab and run of columns (gemm_rows), W read once, bandwidth-bound;
	// partials to the workspace, folded in slab order by the last block of
	// each run to finish (one launch), or, when W is not 16-byte aligned,
	// by the fold kernel (two launches).
	StrategyRows
	// StrategyStream: dW with a short reduction (M ≤ 96): one kernel
	// (gemm_dw_stream) streams the f32 master once, each block copying its
	// 64×128 (M > 16) or 32×128 (M ≤ 16) tile of dW to shared memory
	// asynchronously while it runs the slab chains over M from rows of X and
	// dY staged there, then folding each slab onto the copied values and
	// storing. No workspace. dW only.
	StrategyStream
)

// String returns "tiled", "split-slab", "rows", "stream", "auto" (0), or
// "Strategy(n)".
func (s Strategy) String() string {
	switch s {
	case StrategyTiled:
		return "tiled"
	case StrategySplitSlab:
		return "split-slab"
	case StrategyRows:
		return "rows"
	case StrategyStream:
		return "stream"
	case 0:
		return "auto"
	}
	return fmt.Sprintf("Strategy(%d)", uint8(s))
}
