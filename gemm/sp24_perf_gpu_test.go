package gemm

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/stretchr/testify/require"
)

// TestSparse24Throughput times the sparse forward beside the dense
// tensor-core Forward of the same shape (bf16, weights rotated over sets
// larger than the L2), the figures the sparse tiles are tuned with. It runs
// only with DETGEMM_SP24_PERF=1; bench measures the engine for the record.
func TestSparse24Throughput(t *testing.T) {
	eng, ctx := perfEngine(t, "DETGEMM_SP24_PERF", "the sparse forward")
	start, end := mustEvent(t, ctx), mustEvent(t, ctx)
	const d = BF16
	for _, s := range [][3]int{{1, 4096, 4096}, {16, 4096, 4096}, {128, 4096, 4096}, {1, 4096, 11008}, {16, 4096, 11008}, {128, 4096, 11008},
		{4096, 4096, 11008}, {8192, 8192, 8192}, {4096, 4096, 4096}, {32, 4096, 4096}, {64, 4096, 4096}, {64, 4096, 11008}, {8, 4096, 4096}, {32, 4096, 11008}} {
		M, K, N := s[0], s[1], s[2]
		if only := os.Getenv("DETGEMM_SP24_PERF_SHAPES"); only != "" && !strings.Contains(" "+only+" ", fmt.Sprintf(" %dx%dx%d ", M, K, N)) {
			continue // a narrow run names its shapes: "4096x4096x4096 1x4096x4096"
		}
		sets := max(1, min(6, (160<<20)/(K*N*2)))
		var ws, vs, ms []cudaload.DevicePtr
		for range sets {
			w := alloc(t, ctx, uint64(K*N*2))
			require.NoError(t, ctx.MemsetD8(w, 0x3c, uint64(K*N*2)))
			v := alloc(t, ctx, uint64(K*N))
			require.NoError(t, ctx.MemsetD8(v, 0x3c, uint64(K*N)))
			m := alloc(t, ctx, uint64(N*((K+31)/32)*4))
			require.NoError(t, ctx.MemsetD8(m, 0x44, uint64(N*((K+31)/32)*4)))
			ws, vs, ms = append(ws, w), append(vs, v), append(ms, m)
		}
		x, y := alloc(t, ctx, uint64(M*K*2)), alloc(t, ctx, uint64(M*N*2))
		require.NoError(t, ctx.MemsetD8(x, 0x3c, uint64(M*K*2)))
		reps := max(5, min(200, int(2e11/(2*float64(M)*float64(K)*float64(N)))))
		dense := bestPerLaunch(t, eng, start, end, reps, func(i int) error {
			return eng.Forward(ForwardArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: x, W: ws[i%sets], Y: y, In: d, Out: d})
		})
		tiles := []string{"", "s", "m", "l", "w64", "w128", "w256", "w64x64"}
		if env := os.Getenv("DETGEMM_SP24_PERF_TILES"); env != "" && env != "1" {
			tiles = append([]string{""}, strings.Fields(env)...) // a narrow run names its tiles: "w128 w256"
		}
		for _, tile := range tiles {
			if tile == "s" && M > 64 || tile != "" && os.Getenv("DETGEMM_SP24_PERF_TILES") == "" {
				continue
			}
			// "w256/ns": that tile with its metadata unstaged.
			sp24ForceTile, sp24NoStage = strings.CutSuffix(tile, "/ns")
			p, err := eng.PlanSparse24(Sparse24Desc{In: d, Out: d, M: M, N: N, K: K})
			sp24ForceTile, sp24NoStage = "", false
			require.NoError(t, err)
			sparse := bestPerLaunch(t, eng, start, end, reps, func(i int) error {
				return p.Run(Sparse24Args{X: x, Values: vs[i%sets], Meta: ms[i%sets], Y: y})
			})
			fl := 2 * float64(M) * float64(K) * float64(N)
			t.Logf("sp24 M=%-5d K=%-5d N=%-5d dense %8.2f us (%4.0f TF)  sparse %8.2f us (%4.0f TF dense-equiv)  x%.2f  %v",
				M, K, N, float64(dense.Nanoseconds())/1e3, fl/dense.Seconds()/1e12, float64(sparse.Nanoseconds())/1e3,
				fl/sparse.Seconds()/1e12, dense.Seconds()/sparse.Seconds(), p.Kernels())
		}
	}
}
