package gemm

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/stretchr/testify/require"
)

// TestTCKernelsRepeatTheirBits runs each tensor-core kernel many times on
// the same inputs, back to back on the stream, and requires every run to
// give the first run's bits: the run-to-run promise under load, where a
// ring slot refilled while a warp still reads it would show as a few
// differing rows. The first run of each kernel must also equal the first
// kernel's (every TC kernel gives the same bits), so a kernel that never
// writes its output cannot pass on the poison. repeatSettings reads how
// many runs and which kernels.
func TestTCKernelsRepeatTheirBits(t *testing.T) {
	eng, ctx, _ := tcEngine(t)
	r := newRand(t)
	reps, only := repeatSettings(t)
	const M, N, K = 1024, 2000, 1280 // dX: dY [M,N] · W [K,N]ᵀ; Forward: X [M,N] · W [N,K]
	for _, d := range []DType{F16, BF16} {
		a, w := randomOperand(r, d, M*N), randomOperand(r, d, K*N)
		aP, wP := upload(t, ctx, a), upload(t, ctx, w)
		outs := make([]cudaload.DevicePtr, reps)
		for i := range outs {
			outs[i] = alloc(t, ctx, uint64(M*K*d.Size()))
		}
		base := map[string][]uint32{} // op -> the first kernel's bits
		for _, tc := range tcCases {
			if !only.MatchString(tc.name) {
				continue
			}
			for _, op := range []string{"dX", "Forward"} {
				eng := forced(eng, filter{tc: tc.f})
				var err error
				for _, o := range outs {
					require.NoError(t, ctx.MemsetD8(o, 0xFF, uint64(M*K*d.Size())))
				}
				for i := range outs {
					if op == "dX" {
						err = eng.DX(DXArgs{Tier: TierTensorCore, M: M, N: N, K: K, DY: aP, W: wP, DX: outs[i], In: d, Out: d})
					} else {
						err = eng.Forward(ForwardArgs{Tier: TierTensorCore, M: M, K: N, N: K, X: aP, W: wP, Y: outs[i], In: d, Out: d})
					}
					if err != nil {
						break
					}
				}
				if refused(t, tc.f, err) {
					continue
				}
				first := requireRunsRepeat(t, eng, ctx, outs, d, M, K, fmt.Sprintf("%v %s %s", d, op, tc.name))
				if b, ok := base[op]; ok {
					requireSameBits(t, b, first, K, fmt.Sprintf("%v %s %s vs the first kernel", d, op, tc.name))
				} else {
					base[op] = first
				}
			}
		}
	}
}

// repeatSettings reads the repeat tests' settings: DETGEMM_REPEATS, the
// runs of each kernel (default 3, at least 2), and DETGEMM_REPEAT_CASES, a
// regular expression of the kernels to run (default all).
func repeatSettings(t *testing.T) (int, *regexp.Regexp) {
	t.Helper()
	reps := 3
	if s := os.Getenv("DETGEMM_REPEATS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "DETGEMM_REPEATS")
		reps = max(n, 2)
	}
	only, err := regexp.Compile(os.Getenv("DETGEMM_REPEAT_CASES"))
	require.NoError(t, err, "DETGEMM_REPEAT_CASES")
	return reps, only
}

// requireRunsRepeat reads the rows × cols outputs of a kernel's runs and
// requires every run to equal the first, naming at most three differing
// elements; it returns the first run's bits.
func requireRunsRepeat(t *testing.T, eng interface{ Synchronize() error }, ctx *cudaload.Context, outs []cudaload.DevicePtr, d DType, rows, cols int, what string) []uint32 {
	t.Helper()
	first := readBits(t, eng, ctx, outs[0], d, rows*cols)
	bad := 0
	for i := 1; i < len(outs); i++ {
		got := readBits(t, eng, ctx, outs[i], d, rows*cols)
		for e := range got {
			if got[e] != first[e] {
				if bad < 3 {
					t.Errorf("%s: run %d element (%d,%d): %#x, first run %#x", what, i, e/cols, e%cols, got[e], first[e])
				}
				bad++
			}
		}
	}
	require.Zero(t, bad, fmt.Sprintf("%s: elements that differ from the first run over %d runs", what, len(outs)))
	return first
}
