package gemm

import (
	"math/rand"
	"os"
	"strconv"
	"testing"
	"unsafe"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/stretchr/testify/require"
)

// TestTCRowsThroughput times the tensor-core kernels on few-row Forward and
// dX calls (bf16), the shapes gemm_tc_rows is for, with the weights rotated
// over sets larger than the L2 so every launch reads them from memory. It
// runs only with DETGEMM_TC_PERF=1; bench measures the engine for the
// record.
func TestTCRowsThroughput(t *testing.T) {
	eng, ctx := perfEngine(t, "DETGEMM_TC_PERF", "the tensor-core kernels")
	start, end := mustEvent(t, ctx), mustEvent(t, ctx)
	const sets = 6 // 6 × 32 MiB of weights at 4096², 6 × 86 MiB at 4096×11008: beyond the 50 MiB L2
	for _, s := range [][2]int{{4096, 4096}, {4096, 11008}, {11008, 4096}, {4096, 1024}} {
		K, N := s[0], s[1]
		var ws []cudaload.DevicePtr
		for range sets {
			w := alloc(t, ctx, uint64(K*N*2))
			require.NoError(t, ctx.MemsetD8(w, 0x3c, uint64(K*N*2)))
			ws = append(ws, w)
		}
		for _, M := range []int{1, 8, 16, 32} {
			if !perfShape(M, K, N) {
				continue
			}
			x, y := alloc(t, ctx, uint64(M*max(K, N)*2)), alloc(t, ctx, uint64(M*max(K, N)*2))
			require.NoError(t, ctx.MemsetD8(x, 0x3c, uint64(M*max(K, N)*2)))
			for _, op := range []string{"fwd", "dx"} {
				for _, tc := range tcCases {
					if tc.f.path == tcPathAny || tc.f.tile == tcTile256 || tc.f.tile == tcTile128 {
						continue
					}
					launchOn := func(eng caller) func(int) error {
						return func(i int) error {
							w := ws[i%sets]
							if op == "fwd" {
								return eng.Forward(ForwardArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: x, W: w, Y: y, In: BF16, Out: BF16})
							}
							// dX with the reduction over the 4096 side: dY [M, K], W [N, K].
							return eng.DX(DXArgs{Tier: TierTensorCore, M: M, N: K, K: N, DY: x, W: w, DX: y, In: BF16, Out: BF16})
						}
					}
					launch := launchOn(forced(eng, filter{tc: tc.f}))
					if refused(t, tc.f, launch(0)) {
						continue
					}
					bytes := 2 * float64(K*N+M*K+M*N)
					best := bestPerLaunch(t, eng, start, end, 30, launch)
					t.Logf("rowsperf M=%-3d %5dx%-5d %-3s %-12s %7.2f us %6.2f TB/s", M, K, N, op, tc.name,
						float64(best.Nanoseconds())/1e3, bytes/best.Seconds()/1e12)
					if tcRowsGeometries[tc.f.tile].tma {
						// The same kernel launched without the overlap.
						best = bestPerLaunch(t, eng, start, end, 30, launchOn(forced(eng, filter{tc: tc.f, serial: true})))
						t.Logf("rowsperf M=%-3d %5dx%-5d %-3s %-12s %7.2f us %6.2f TB/s", M, K, N, op, tc.name+"-serial",
							float64(best.Nanoseconds())/1e3, bytes/best.Seconds()/1e12)
					}
				}
			}
		}
	}
}

// TestTCTileThroughput times the gemm_tc tiles, each forced, against the
// dispatcher's choice on the shapes whose output gives few 64×64 tiles (the
// figures tcGeometries' relative costs come from). It runs only with
// DETGEMM_TC_PERF=1; DETGEMM_PERF_SHAPES, DETGEMM_TC_PERF_OPS ("fwd dx")
// and DETGEMM_TC_PERF_TILES ("auto wg128x256") narrow it, so that a
// profiler sees only the launches asked for.
func TestTCTileThroughput(t *testing.T) {
	eng, ctx := perfEngine(t, "DETGEMM_TC_PERF", "the tensor-core kernels (DETGEMM_TC_RANDOM=1: random inputs)")
	if v := os.Getenv("DETGEMM_TC_PERF_SMS"); v != "" {
		// Plans and persistent grids for fewer SMs than the card has: the
		// same tiles on a part of the GPU, to see whether a kernel's pace
		// per SM depends on how many SMs share the L2.
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		require.True(t, n > 0 && n <= eng.device.sms, "DETGEMM_TC_PERF_SMS=%d: want 1..%d", n, eng.device.sms)
		old := eng.device.sms
		eng.device.sms = n
		t.Cleanup(func() { eng.device.sms = old })
	}
	start, end := mustEvent(t, ctx), mustEvent(t, ctx)
	for _, s := range []struct {
		op      string
		M, K, N int
	}{
		{"dw", 2048, 768, 512}, {"fwd", 2048, 768, 512}, {"dx", 2048, 768, 512},
		{"dw", 2048, 768, 3072}, {"fwd", 2048, 768, 3072}, {"dx", 2048, 768, 3072},
		{"dx", 128, 4096, 11008}, {"fwd", 128, 4096, 11008}, {"dw", 4096, 1536, 3072},
		// Cut reductions at many rows: dX over 11008 into 4096 columns
		// (2 slabs: running sums, and planes where the forced tile's grid
		// leaves SMs idle) and its single-round size.
		{"dx", 4096, 4096, 11008}, {"dx", 512, 4096, 11008},
		// dW where the master's traffic is a sixth of the time.
		{"dw", 4096, 4096, 4096}, {"fwd", 4096, 4096, 4096},
		// The transformer projections whose reduction is cut (3 slabs):
		// mlp_down's Forward, qkv's and mlp_up's dX.
		{"fwd", 4096, 14336, 4096}, {"dx", 4096, 4096, 12288}, {"dx", 4096, 4096, 14336},
		// The uncut projections and the largest bench shape.
		{"fwd", 4096, 4096, 12288}, {"fwd", 4096, 4096, 14336}, {"fwd", 4096, 1536, 3072}, {"fwd", 8192, 8192, 8192},
	} {
		if !perfShape(s.M, s.K, s.N) || !perfListed("DETGEMM_TC_PERF_OPS", s.op) {
			continue
		}
		x := alloc(t, ctx, uint64(s.M*s.K*2))
		w := alloc(t, ctx, uint64(s.K*s.N*4))
		y := alloc(t, ctx, uint64(s.M*s.N*2))
		for _, p := range []cudaload.DevicePtr{x, w, y} {
			require.NoError(t, ctx.MemsetD8(p, 0x3c, 2*uint64(min(s.M*s.K, s.K*s.N, s.M*s.N))))
		}
		if os.Getenv("DETGEMM_TC_RANDOM") != "" {
			// Random bf16 in (-1, 1) lower the clocks as the bench's inputs
			// do; constant ones flatter every kernel.
			r := rand.New(rand.NewSource(1))
			for _, b := range []struct {
				p cudaload.DevicePtr
				n int
			}{{x, s.M * s.K}, {w, s.K * s.N}, {y, s.M * s.N}} {
				h := make([]uint16, b.n)
				for i := range h {
					h[i] = uint16(0x3800+r.Intn(0x0780)) | uint16(r.Intn(2))<<15
				}
				require.NoError(t, ctx.MemcpyHtoD(b.p, unsafe.Pointer(&h[0]), uint64(2*b.n)))
			}
		}
		launchOn := func(eng caller) func() error {
			return func() error {
				switch s.op {
				case "fwd":
					return eng.Forward(ForwardArgs{Tier: TierTensorCore, M: s.M, K: s.K, N: s.N, X: x, W: w, Y: y, In: BF16, Out: BF16})
				case "dx":
					return eng.DX(DXArgs{Tier: TierTensorCore, M: s.M, N: s.N, K: s.K, DY: y, W: w, DX: x, In: BF16, Out: BF16})
				}
				return eng.DW(DWArgs{Tier: TierTensorCore, M: s.M, K: s.K, N: s.N, X: x, DY: y, DW: w, In: BF16})
			}
		}
		for _, tc := range append([]tcCase{{"auto", tcForce{}}}, tcCases...) {
			if tc.f.path == tcPathAny || !perfListed("DETGEMM_TC_PERF_TILES", tc.name) {
				continue
			}
			launch := launchOn(forced(eng, filter{tc: tc.f}))
			if refused(t, tc.f, launch()) {
				continue
			}
			best := bestPerLaunch(t, eng, start, end, 20, func(int) error { return launch() })
			t.Logf("tileperf %-3s %5dx%-5dx%-5d %-12s %8.2f us", s.op, s.M, s.K, s.N, tc.name, float64(best.Nanoseconds())/1e3)
		}
	}
}
