package gemm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/cudaload"
)

// TestGraphReplayEqualsDirectCalls captures one call of every path the
// dispatcher takes — tiled and split-slab (square and narrow tiles), rows
// (two launches and one, whose arrival counters reset themselves), gemm_tc,
// gemm_tc_rows and, on sm_90a, gemm_wgmma with its per-call TMA maps — into
// a CUDA graph, replays it three times over poisoned outputs (dW restored
// each time), and requires the bits of a direct call every time.
func TestGraphReplayEqualsDirectCalls(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	type shape struct{ m, k, n int }
	for _, c := range []struct {
		name string
		op   string
		tier Tier
		in   DType
		out  DType
		s    shape
	}{
		{"f32 tiled forward", "Forward", TierF32, F32, F32, shape{300, 700, 264}},
		{"f32 split-slab forward", "Forward", TierF32, F32, F32, shape{64, 8192, 256}},
		{"f32 narrow tiled forward", "Forward", TierF32, F32, F32, shape{2048, 768, 512}},
		{"bf16 narrow split-slab dW", "DW", TierTyped, BF16, F32, shape{2048, 768, 512}},
		{"f32 rows forward, one launch", "Forward", TierF32, F32, F32, shape{16, 4096, 1024}},
		{"bf16 rows dX", "DX", TierTyped, BF16, BF16, shape{3, 1000, 520}},
		{"f16 dW", "DW", TierTyped, F16, F32, shape{1000, 200, 136}},
		{"tc forward (wgmma on sm_90a)", "Forward", TierTensorCore, BF16, BF16, shape{2048, 1024, 1536}},
		{"tc dW (wgmma on sm_90a)", "DW", TierTensorCore, F16, F32, shape{1024, 1024, 1536}},
		{"tc rows forward", "Forward", TierTensorCore, BF16, F32, shape{4, 2048, 4096}},
		{"tc forward, unaligned", "Forward", TierTensorCore, F16, F16, shape{200, 1001, 300}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, k, n := c.s.m, c.s.k, c.s.n
			var call Call
			var out cudaload.DevicePtr
			var outN, cols int
			var dw0 operand
			switch c.op {
			case "Forward":
				x, w, b := upload(t, ctx, randomOperand(r, c.in, m*k)), upload(t, ctx, randomOperand(r, c.in, k*n)), upload(t, ctx, randomOperand(r, F32, n))
				outN, cols = m*n, n
				out = alloc(t, ctx, uint64(outN*c.out.Size()))
				call = ForwardArgs{Tier: c.tier, M: m, K: k, N: n, X: x, W: w, Bias: b, Y: out, In: c.in, Out: c.out}
			case "DX":
				dy, w := upload(t, ctx, randomOperand(r, c.in, m*n)), upload(t, ctx, randomOperand(r, c.in, k*n))
				outN, cols = m*k, k
				out = alloc(t, ctx, uint64(outN*c.out.Size()))
				call = DXArgs{Tier: c.tier, M: m, N: n, K: k, DY: dy, W: w, DX: out, In: c.in, Out: c.out}
			case "DW":
				x, dy := upload(t, ctx, randomOperand(r, c.in, m*k)), upload(t, ctx, randomOperand(r, c.in, m*n))
				outN, cols = k*n, n
				dw0 = randomOperand(r, F32, outN)
				out = upload(t, ctx, dw0)
				call = DWArgs{Tier: c.tier, M: m, K: k, N: n, X: x, DY: dy, DW: out, In: c.in}
			}
			require.NoError(t, eng.Presize(call))
			if eng.hasWG && strings.Contains(c.name, "wgmma") {
				p, err := call.build(true)
				require.NoError(t, err)
				k, err := chooseTCKernel(p, eng.sms, eng.tcShared, true, tcForce{})
				require.NoError(t, err)
				require.True(t, isWG(k.tile), "the case must exercise gemm_wgmma, not %s", k.name())
			}
			run := func() error { return enqueue(t, eng, call) }
			reset := func() {
				require.NoError(t, eng.Synchronize())
				if c.op == "DW" {
					require.NoError(t, cudaload.CopyToDevice(ctx, out, dw0.values))
				} else {
					require.NoError(t, ctx.MemsetD8(out, 0xFF, uint64(outN*c.out.Size())))
				}
			}
			requireReplaysEqualDirect(t, eng, run, reset, func() []uint32 { return readBits(t, eng, ctx, out, c.out, outN) }, cols, c.name)
		})
	}
}

// requireReplaysEqualDirect runs run directly once, captures it in a CUDA
// graph, and replays the graph three times: every replay (each after
// reset) must give the direct run's bits, read by read.
func requireReplaysEqualDirect(t *testing.T, eng *Engine, run func() error, reset func(), read func() []uint32, cols int, name string) {
	t.Helper()
	reset()
	require.NoError(t, run())
	want := read()
	g, err := eng.Stream().Capture(run)
	require.NoError(t, err)
	defer func() { require.NoError(t, g.Close()) }()
	exec, err := g.Instantiate()
	require.NoError(t, err)
	defer func() { require.NoError(t, exec.Close()) }()
	for i := range 3 {
		reset()
		require.NoError(t, exec.Launch(eng.Stream()))
		requireSameBits(t, want, read(), cols, fmt.Sprintf("%s: replay %d", name, i))
	}
}
