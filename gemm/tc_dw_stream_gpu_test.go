package gemm

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// tcDWCases is the dispatcher's choice and every gemm_tc_dw_stream kernel
// forced: the cases of tcCases that run short dW calls this file checks.
func tcDWCases() []tcCase {
	out := []tcCase{tcCases[0]}
	for _, c := range tcCases {
		if isTCDW(c.f.tile) {
			out = append(out, c)
		}
	}
	return out
}

// tcDWGuard is the poisoned f32 elements kept before and after a dW
// buffer, so a store outside dW shows.
const tcDWGuard = 64

// uploadAt copies o to a fresh device buffer at an offset of shift
// elements (shift = 1 takes a half operand off 4-byte alignment and an
// f32 one off 8-byte alignment).
func uploadAt(t *testing.T, ctx *cudaload.Context, o operand, shift int) cudaload.DevicePtr {
	t.Helper()
	s := operand{d: o.d, values: append(make([]float32, shift), o.values...)}
	if o.d.Half() {
		s.half = append(make([]uint16, shift), o.half...)
	}
	return upload(t, ctx, s) + cudaload.DevicePtr(shift*o.d.Size())
}

// guardedDW uploads dW0 shift elements into a buffer of NaN guards
// (tcDWGuard elements on each side) and returns dW's address and a reader
// that checks the guards are untouched and returns dW's bits.
func guardedDW(t *testing.T, eng caller, ctx *cudaload.Context, dw0 []float32, shift int) (cudaload.DevicePtr, func() []uint32) {
	t.Helper()
	n := len(dw0)
	all := make([]float32, tcDWGuard+shift+n+tcDWGuard)
	nan := math.Float32frombits(0xffffffff)
	for i := range all {
		all[i] = nan
	}
	copy(all[tcDWGuard+shift:], dw0)
	base := upload(t, ctx, operand{d: F32, values: all})
	read := func() []uint32 {
		got := readBits(t, eng, ctx, base, F32, len(all))
		for i, b := range got {
			if i < tcDWGuard+shift || i >= tcDWGuard+shift+n {
				require.Equal(t, uint32(0xffffffff), b, "element %d outside dW was written", i-tcDWGuard-shift)
			}
		}
		return got[tcDWGuard+shift : tcDWGuard+shift+n]
	}
	return base + cudaload.DevicePtr((tcDWGuard+shift)*4), read
}

// TestTCDWStreamThroughput times dW (bf16) under the dispatcher, the
// gemm_tc and gemm_wgmma tiles and the stream tiles forced, at K = N =
// 4096 and 4096×11008 over M = 1 … 512, and on the element path, to place
// chooseTCDW's crossover. It runs only with DETGEMM_TC_PERF=1.
func TestTCDWStreamThroughput(t *testing.T) {
	eng, ctx := perfEngine(t, "DETGEMM_TC_PERF", "the tensor-core kernels")
	start, end := mustEvent(t, ctx), mustEvent(t, ctx)
	names := []string{"auto", "tc128-vec", "tc64-vec", "wg128x128", "wg128x256", "wg192x192", "tcdw64-vec"}
	anyNames := []string{"auto", "tc128-any", "tc64-any", "tcdw64-any"}
	byName := map[string]tcForce{}
	for _, c := range tcCases {
		byName[c.name] = c.f
	}
	const maxM, maxK, maxN = 512, 4096, 11008
	x, dy := alloc(t, ctx, maxM*maxK*2+16), alloc(t, ctx, maxM*maxN*2+16)
	dw := alloc(t, ctx, maxK*maxN*4)
	require.NoError(t, ctx.MemsetD8(x, 0x3c, maxM*maxK*2+16))
	require.NoError(t, ctx.MemsetD8(dy, 0x3c, maxM*maxN*2+16))
	require.NoError(t, ctx.MemsetD8(dw, 0, maxK*maxN*4))
	timeOne := func(args DWArgs, f tcForce) (time.Duration, bool) {
		eng := forced(eng, filter{tc: f})
		if refused(t, f, eng.DW(args)) {
			return 0, false
		}
		const reps = 10
		best := time.Duration(math.MaxInt64)
		for range 3 {
			require.NoError(t, start.Record(eng.Stream()))
			for range reps {
				require.NoError(t, eng.DW(args))
			}
			require.NoError(t, end.Record(eng.Stream()))
			require.NoError(t, end.Synchronize())
			d, err := cudaload.ElapsedTime(start, end)
			require.NoError(t, err)
			best = min(best, d/reps)
		}
		return best, true
	}
	report := func(M, K, N int, what string, names []string, args DWArgs) {
		line := fmt.Sprintf("dwperf %-4s %4dx%5dx%5d", what, M, K, N)
		for _, n := range names {
			if d, ok := timeOne(args, byName[n]); ok {
				line += fmt.Sprintf(" %s=%.1f", n, float64(d.Nanoseconds())/1e3)
			}
		}
		t.Log(line)
	}
	for _, kn := range [][2]int{{4096, 4096}, {4096, 11008}} {
		for _, M := range []int{1, 16, 64, 128, 256, 512} {
			K, N := kn[0], kn[1]
			report(M, K, N, "vec", names, DWArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: x, DY: dy, DW: dw, In: BF16})
		}
	}
	// The element path: X one element off alignment.
	for _, M := range []int{1, 16, 128} {
		report(M, 4096, 4096, "any", anyNames, DWArgs{Tier: TierTensorCore, M: M, K: 4096, N: 4096, X: x + 2, DY: dy, DW: dw, In: BF16})
	}
}

// TestTCDWStreamMatchesModelOnOddShapes: short and odd dW shapes (M = 1, 3,
// 17, 33, 100, 300 batch rows; K and N from 1 to 1000: partial chunks of 32
// rows, partial 16-row steps, partial 64- and 128-wide tiles, leading
// dimensions that are not multiples of 8), with X, dY and dW aligned, all
// one element off alignment, or dW alone off 8-byte alignment, under the
// dispatcher and every gemm_tc_dw_stream kernel: dW's bits are the model's
// and nothing outside dW is written.
func TestTCDWStreamMatchesModelOnOddShapes(t *testing.T) {
	eng, ctx, m := tcEngine(t)
	r := newRand(t)
	dims := []int{1, 7, 63, 129, 1000}
	for _, d := range []DType{BF16, F16} {
		for _, M := range []int{1, 3, 17, 33, 100, 300} {
			for _, K := range dims {
				for _, N := range dims {
					name := fmt.Sprintf("%v/%dx%dx%d", d, M, K, N)
					t.Run(name, func(t *testing.T) {
						x, dy, dw0 := randomOperand(r, d, M*K), randomOperand(r, d, M*N), randomOperand(r, F32, K*N)
						want := append([]float32(nil), dw0.values...)
						require.NoError(t, refTC(m, d).DW(want, ref.Values(x.values), ref.Values(dy.values), M, K, N))
						for _, sh := range []struct{ x, dy, dw int }{{0, 0, 0}, {1, 1, 1}, {0, 0, 1}} {
							xP, dyP := uploadAt(t, ctx, x, sh.x), uploadAt(t, ctx, dy, sh.dy)
							for _, tc := range tcDWCases() {
								dwP, read := guardedDW(t, eng, ctx, dw0.values, sh.dw)
								eng := forced(eng, filter{tc: tc.f})
								err := eng.DW(DWArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: xP, DY: dyP, DW: dwP, In: d})
								if refused(t, tc.f, err) {
									continue // the 16-byte path on unaligned operands
								}
								requireSameBitsClassified(t, F32, refBits(F32, want), read(), N, fmt.Sprintf("%s shift %v %s", name, sh, tc.name))
							}
						}
					})
				}
			}
		}
	}
}

// TestTCDWSpecialsAsModel: NaN, ±Inf and signed zeros in X, dY and the
// master itself, under every kernel that runs dW, against the model's
// rules.
func TestTCDWSpecialsAsModel(t *testing.T) {
	eng, ctx, m := tcEngine(t)
	r := newRand(t)
	const M, K, N = 40, 72, 264
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1))}
	for _, d := range []DType{BF16, F16} {
		x, dy, dw0 := randomOperand(r, d, M*K), randomOperand(r, d, M*N), randomOperand(r, F32, K*N)
		for range 30 {
			x.values[r.IntN(M*K)] = specials[r.IntN(len(specials))]
			dy.values[r.IntN(M*N)] = specials[r.IntN(len(specials))]
			dw0.values[r.IntN(K*N)] = specials[r.IntN(len(specials))]
		}
		x, dy = fromValues(d, x.values), fromValues(d, dy.values)
		want := append([]float32(nil), dw0.values...)
		require.NoError(t, refTC(m, d).DW(want, ref.Values(x.values), ref.Values(dy.values), M, K, N))
		xP, dyP := upload(t, ctx, x), upload(t, ctx, dy)
		for _, tc := range tcCases {
			dw := upload(t, ctx, dw0)
			eng := forced(eng, filter{tc: tc.f})
			err := eng.DW(DWArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: xP, DY: dyP, DW: dw, In: d})
			if refused(t, tc.f, err) {
				continue // Forward/dX-only kernels
			}
			requireSameBitsClassified(t, F32, refBits(F32, want), readBits(t, eng, ctx, dw, F32, K*N), N, fmt.Sprintf("%v %s", d, tc.name))
		}
	}
}

// TestTCDWStreamInGraphsWithoutAllocation: a short dW call the dispatcher
// sends to gemm_tc_dw_stream (the 16-byte path and the element path)
// allocates no Go memory once issued, and captured into a CUDA graph and
// replayed three times over the restored master gives the direct call's
// bits every time.
func TestTCDWStreamInGraphsWithoutAllocation(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	for _, s := range [][3]int{{16, 1000, 1000}, {33, 129, 63}} {
		M, K, N := s[0], s[1], s[2]
		name := fmt.Sprintf("%dx%dx%d", M, K, N)
		t.Run(name, func(t *testing.T) {
			x, dy := upload(t, ctx, randomOperand(r, BF16, M*K)), upload(t, ctx, randomOperand(r, BF16, M*N))
			dw0 := randomOperand(r, F32, K*N)
			dw := upload(t, ctx, dw0)
			call := DWArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: x, DY: dy, DW: dw, In: BF16}
			p, err := call.build(true)
			require.NoError(t, err)
			k, err := chooseTCKernel(p, eng.sms, eng.tcShared, eng.hasWG, tcForce{})
			require.NoError(t, err)
			require.True(t, isTCDW(k.tile), "the case must exercise gemm_tc_dw_stream, not %s", k.name())
			reset := func() {
				require.NoError(t, eng.Synchronize())
				require.NoError(t, cudaload.CopyToDevice(ctx, dw, dw0.values))
			}
			require.NoError(t, eng.DW(call))
			allocs := testing.AllocsPerRun(20, func() { err = eng.DW(call) })
			require.NoError(t, err)
			require.Zero(t, allocs)

			requireReplaysEqualDirect(t, eng, func() error { return eng.DW(call) }, reset,
				func() []uint32 { return readBits(t, eng, ctx, dw, F32, K*N) }, N, name)
		})
	}
}
