package gemm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCallsAllocateNothing: once the workspace is sized (Presize), a call
// allocates no Go memory, whichever strategy or family runs it — the rows
// and split-slab paths, the tiled SIMT kernel, gemm_tc, and on sm_90a the
// wgmma family with its per-call TMA maps.
func TestCallsAllocateNothing(t *testing.T) {
	eng, ctx := gpuEngine(t)
	const M, K, N = 1024, 512, 768
	x, w := alloc(t, ctx, M*K*4), alloc(t, ctx, K*N*4)
	y, dw, bias := alloc(t, ctx, M*N*4), alloc(t, ctx, K*N*4), alloc(t, ctx, N*4)
	calls := []struct {
		name string
		call Call
	}{
		{"f32 forward, tiled", ForwardArgs{Tier: TierF32, M: M, K: K, N: N, X: x, W: w, Bias: bias, Y: y, In: F32, Out: F32}},
		{"f32 forward, rows", ForwardArgs{Tier: TierF32, M: 1, K: K, N: N, X: x, W: w, Y: y, In: F32, Out: F32}},
		{"typed dX", DXArgs{Tier: TierTyped, M: 64, N: N, K: K, DY: x, W: w, DX: y, In: BF16, Out: BF16}},
		{"typed dW", DWArgs{Tier: TierTyped, M: M, K: K, N: N, X: x, DY: y, DW: dw, In: F16}},
		{"tc forward", ForwardArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: x, W: w, Bias: bias, Y: y, In: BF16, Out: BF16}},
		{"tc forward, unaligned ld", ForwardArgs{Tier: TierTensorCore, M: M, K: K - 1, N: N, X: x, W: w, Y: y, In: BF16, Out: F32}},
		{"tc dW", DWArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: x, DY: y, DW: dw, In: F16}},
		{"tc dX", DXArgs{Tier: TierTensorCore, M: M, N: N, K: K, DY: x, W: w, DX: y, In: BF16, Out: BF16}},
	}
	for _, c := range calls {
		require.NoError(t, eng.Presize(c.call), c.name)
	}
	run := func(c Call) error { return enqueue(t, eng, c) }
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, run(c.call))
			var err error
			allocs := testing.AllocsPerRun(20, func() { err = run(c.call) })
			require.NoError(t, err)
			require.Zero(t, allocs)
		})
	}
	require.NoError(t, eng.Synchronize())
}
