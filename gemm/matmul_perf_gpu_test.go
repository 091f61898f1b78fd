package gemm

import (
	"fmt"
	"math/rand/v2"
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
// adds plain products, DETGEMM_MM_PERF_LAYOUTS times each request in the
// layouts it names, comma-separated, of NN, NT, TN and TT (NN alone
// unless set); the
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
	launches := envInt(t, "DETGEMM_MM_PERF_LAUNCHES", 10)
	var only []string // DETGEMM_MM_PERF_EPS's names; none: every epilogue
	if v := os.Getenv("DETGEMM_MM_PERF_EPS"); v != "" {
		only = strings.Split(v, ",")
	}
	keep := func(ep Epilogue) bool { return only == nil || slices.Contains(only, ep.String()) }
	// DETGEMM_MM_PERF_SHAPES keeps the probes it names (MxKxN, spaces
	// between), e.g. one shape under a profiler.
	shapes := strings.Fields(os.Getenv("DETGEMM_MM_PERF_SHAPES"))
	layouts := []string{"NN"}
	if v := os.Getenv("DETGEMM_MM_PERF_LAYOUTS"); v != "" {
		layouts = strings.Split(v, ",")
		for _, l := range layouts {
			require.Contains(t, []string{"NN", "NT", "TN", "TT"}, l, "DETGEMM_MM_PERF_LAYOUTS")
		}
	}
	for _, pr := range probes {
		M, K, N := pr.M, pr.K, pr.N
		if !slices.ContainsFunc(pr.eps, keep) || len(shapes) > 0 && !slices.Contains(shapes, fmt.Sprintf("%dx%dx%d", M, K, N)) {
			continue
		}
		bufs := newMMPerfBuffers(t, ctx, r, M, K, N, max(pr.ldb, N))
		for _, ep := range pr.eps {
			if !keep(ep) {
				continue
			}
			for _, l := range layouts {
				d, a := bufs.request(ep)
				// The same buffers serve every layout: A holds M·K and B K·ldb
				// elements either way; a transposed B (N × K) takes K as its
				// leading dimension.
				d.TransA, d.TransB = l[0] == 'T', l[1] == 'T'
				ldb := bufs.ldb
				if d.TransB {
					d.LDB, ldb = 0, K
				}
				p, err := eng.Plan(d)
				require.NoError(t, err, "%v %s", ep, l)
				from := time.Now().UTC()
				best := bestPerLaunch(t, eng, start, end, launches, func(int) error { return p.Run(a) })
				t.Logf("mmperf %5dx%5dx%5d ldb %5d %-12v %s %9.1f us %v %s %s", M, K, N, ldb, ep, l, float64(best.Nanoseconds())/1e3, p.Kernels(),
					from.Format("15:04:05.000"), time.Now().UTC().Format("15:04:05.000"))
			}
		}
	}
}

// mmPerfBuffers are the operands of the Matmul probes' requests at one
// shape: random bf16 A, B (K × ldb), D and the aux (both as wide as a
// gated backward's 2N), a ReLU mask, a bias and a bias gradient.
type mmPerfBuffers struct {
	M, K, N, ldb                 int
	A, B, D, aux, mask, bias, bg cudaload.DevicePtr
}

func newMMPerfBuffers(t *testing.T, ctx *cudaload.Context, r *rand.Rand, M, K, N, ldb int) mmPerfBuffers {
	t.Helper()
	block := upload(t, ctx, randomOperand(r, BF16, 1<<20))
	fill := func(elems int) cudaload.DevicePtr { return tiledRandom(t, ctx, block, 1<<20, BF16, elems) }
	b := mmPerfBuffers{M: M, K: K, N: N, ldb: ldb, A: fill(M * K), B: fill(K * ldb), D: fill(2 * M * N), aux: fill(2 * M * N)}
	b.mask = alloc(t, ctx, uint64(M*N))
	require.NoError(t, ctx.MemsetD8(b.mask, 1, uint64(M*N)))
	b.bias = upload(t, ctx, randomOperand(r, F32, N))
	b.bg = upload(t, ctx, randomOperand(r, F32, N))
	return b
}

// request is the tensor-core bf16 request for ep on b, with the buffers
// its epilogue reads or writes.
func (b mmPerfBuffers) request(ep Epilogue) (MatmulDesc, MatmulArgs) {
	spec := specOf(ep)
	d := MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: b.M, N: b.N, K: b.K, LDB: b.ldb, Alpha: 1, Epilogue: ep}
	a := MatmulArgs{A: b.A, B: b.B, D: b.D}
	if spec.bias {
		a.Bias = b.bias
	}
	if spec.bgrad != 0 {
		a.BiasGrad = b.bg
	}
	switch {
	case spec.mask:
		a.Aux, d.LDAux = b.mask, b.N
	case ep.Gate() != 0 && spec.aux():
		_, auxCols := gatedCols(ep, b.N)
		a.Aux, d.LDAux = b.aux, auxCols
	case spec.auxOut || spec.auxIn:
		a.Aux, d.LDAux = b.aux, b.N
	}
	return d, a
}
