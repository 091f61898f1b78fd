package gemm

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/stretchr/testify/require"
)

// TestMatmulEpilogueThroughput times tensor-core Matmul requests with the
// activation epilogues beside the plain product (bf16, random inputs, one
// set), the figures the epilogue kernel is tuned with. It runs only with
// DETGEMM_MM_PERF=1 (DETGEMM_MM_PERF_BIG=1 adds 8192³, DETGEMM_MM_PERF_GATED=1
// issue 23's gated projections; DETGEMM_MM_PERF_EPS keeps the epilogues it
// names, comma-separated, and DETGEMM_MM_PERF_LAUNCHES sets the launches
// a timing (10), so that a run can be long enough to sample the card's
// power and clock beside it: each timing logs its UTC start and end;
// DETGEMM_MM_PERF_SHAPES keeps the shapes it names, DETGEMM_MM_PERF_PLAIN
// adds plain products); the
// bench measures the engine for the record, with cuBLASLt beside it.
func TestMatmulEpilogueThroughput(t *testing.T) {
	eng, ctx := perfEngine(t, "DETGEMM_MM_PERF", "the Matmul epilogues")
	r := newRand(t)
	start, end := mustEvent(t, ctx), mustEvent(t, ctx)
	type probe struct {
		M, K, N int
		eps     []Epilogue
		ldb     int // B's leading dimension (0: N)
	}
	plain := []Epilogue{Default, Gelu, GeluAuxBias, ReluAuxBias, DGelu, DGeluBgrad, DReluBgrad}
	probes := []probe{{4096, 4096, 4096, plain, 0}, {2048, 768, 3072, plain, 0}, {4096, 1536, 3072, plain, 0}}
	if os.Getenv("DETGEMM_MM_PERF_BIG") != "" {
		probes = append(probes, probe{8192, 8192, 8192, []Epilogue{Default, Gelu, GeluAuxBias, DGelu, DGeluBgrad}, 0})
	}
	if os.Getenv("DETGEMM_MM_PERF_GATED") != "" {
		// Issue 23's gate-up projection (n = 11008) and its backward's product.
		probes = append(probes,
			probe{4096, 4096, 22016, []Epilogue{Default, GatedSwiGLU, GatedSwiGLUAux, GatedGeGLUAux}, 0},
			probe{4096, 4096, 11008, []Epilogue{Default, DGatedSwiGLU, DGatedGeGLU}, 0})
	}
	// DETGEMM_MM_PERF_PLAIN adds products without an epilogue (MxKxN,
	// spaces between), e.g. to see where a tile falls behind as N grows;
	// MxKxN/L gives B (K × N) the leading dimension L, to tell a row pitch
	// from a grid.
	for _, sh := range strings.Fields(os.Getenv("DETGEMM_MM_PERF_PLAIN")) {
		var L int
		dims, pitch, padded := strings.Cut(sh, "/")
		M, K, N := perfDims(t, "DETGEMM_MM_PERF_PLAIN", dims)
		if padded {
			var err error
			L, err = strconv.Atoi(pitch)
			require.NoError(t, err, "DETGEMM_MM_PERF_PLAIN %q", sh)
			require.GreaterOrEqual(t, L, N, "DETGEMM_MM_PERF_PLAIN %q: the leading dimension is at least N", sh)
		}
		probes = append(probes, probe{M, K, N, []Epilogue{Default}, L})
	}
	launches := 10
	if v := os.Getenv("DETGEMM_MM_PERF_LAUNCHES"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "DETGEMM_MM_PERF_LAUNCHES")
		launches = max(n, 1)
	}
	var only []string // DETGEMM_MM_PERF_EPS's names; none: every epilogue
	if v := os.Getenv("DETGEMM_MM_PERF_EPS"); v != "" {
		only = strings.Split(v, ",")
	}
	keep := func(ep Epilogue) bool { return only == nil || slices.Contains(only, ep.String()) }
	// DETGEMM_MM_PERF_SHAPES keeps the probes it names (MxKxN, spaces
	// between), e.g. one shape under a profiler.
	shapes := strings.Fields(os.Getenv("DETGEMM_MM_PERF_SHAPES"))
	for _, pr := range probes {
		M, K, N := pr.M, pr.K, pr.N
		if !slices.ContainsFunc(pr.eps, keep) || len(shapes) > 0 && !slices.Contains(shapes, fmt.Sprintf("%dx%dx%d", M, K, N)) {
			continue
		}
		block := upload(t, ctx, randomOperand(r, BF16, 1<<20))
		fill := func(elems int) cudaload.DevicePtr { return tiledRandom(t, ctx, block, 1<<20, BF16, elems) }
		// D and the aux as wide as a gated backward's (2N).
		ldb := max(pr.ldb, N)
		A, B, D, aux := fill(M*K), fill(K*ldb), fill(2*M*N), fill(2*M*N)
		mask := alloc(t, ctx, uint64(M*N))
		require.NoError(t, ctx.MemsetD8(mask, 1, uint64(M*N)))
		bias := upload(t, ctx, randomOperand(r, F32, N))
		bgrad := upload(t, ctx, randomOperand(r, F32, N))
		for _, ep := range pr.eps {
			if !keep(ep) {
				continue
			}
			spec := specOf(ep)
			d := MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: M, N: N, K: K, LDB: ldb, Alpha: 1, Epilogue: ep}
			a := MatmulArgs{A: A, B: B, D: D}
			if spec.bias {
				a.Bias = bias
			}
			if spec.bgrad != 0 {
				a.BiasGrad = bgrad
			}
			switch {
			case spec.mask:
				a.Aux, d.LDAux = mask, N
			case ep.Gate() != 0 && spec.aux():
				_, auxCols := gatedCols(ep, N)
				a.Aux, d.LDAux = aux, auxCols
			case spec.auxOut || spec.auxIn:
				a.Aux, d.LDAux = aux, N
			}
			p, err := eng.Plan(d)
			require.NoError(t, err, "%v", ep)
			from := time.Now().UTC()
			best := bestPerLaunch(t, eng, start, end, launches, func(int) error { return p.Run(a) })
			t.Logf("mmperf %5dx%5dx%5d ldb %5d %-12v %9.1f us %v %s %s", M, K, N, ldb, ep, float64(best.Nanoseconds())/1e3, p.Kernels(),
				from.Format("15:04:05.000"), time.Now().UTC().Format("15:04:05.000"))
		}
	}
}
