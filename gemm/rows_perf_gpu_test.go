package gemm

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/stretchr/testify/require"
)

// TestRowsPathThroughput times the rows strategy's two paths (one launch,
// and partials then fold) on few-row Forward and dX calls, the figures
// rowsOneLaunch's rule is drawn from, with the weights rotated over sets
// larger than the L2 so every launch reads them from memory. It runs only
// with DETGEMM_ROWS_PERF=1; bench measures the engine for the record.
func TestRowsPathThroughput(t *testing.T) {
	eng, ctx := perfEngine(t, "DETGEMM_ROWS_PERF", "the rows paths")
	start, end := mustEvent(t, ctx), mustEvent(t, ctx)
	const sets = 6 // 6 × 64 MiB of f32 weights at 4096²: beyond the 50 MiB L2
	for _, d := range []DType{F32, BF16} {
		tier := TierF32
		if d != F32 {
			tier = TierTyped
		}
		// (M, R, cols): the reduction R and the output's columns.
		for _, s := range [][3]int{{1, 4096, 4096}, {4, 4096, 4096}, {1, 4096, 11008}, {1, 11008, 4096}, {1, 4096, 1024}, {1, 4096, 2048}, {1, 8192, 4096}, {16, 4096, 4096}, {8, 4096, 4096}, {16, 4096, 11008}, {8, 4096, 11008}, {5, 4096, 4096}, {16, 4096, 1024}} {
			M, R, cols := s[0], s[1], s[2]
			if !perfShape(M, R, cols) {
				continue
			}
			var ws []cudaload.DevicePtr
			for range sets {
				p := alloc(t, ctx, uint64(R*cols*d.Size()))
				require.NoError(t, ctx.MemsetD8(p, 0x3c, uint64(R*cols*d.Size())))
				ws = append(ws, p)
			}
			x, y := alloc(t, ctx, uint64(M*R*d.Size())), alloc(t, ctx, uint64(M*cols*d.Size()))
			require.NoError(t, ctx.MemsetD8(x, 0x3c, uint64(M*R*d.Size())))
			for _, op := range []string{"fwd", "dx"} {
				launchOn := func(eng caller) func(int) error {
					return func(i int) error {
						w := ws[i%sets]
						if op == "fwd" {
							return eng.Forward(ForwardArgs{Tier: tier, M: M, K: R, N: cols, X: x, W: w, Y: y, In: d, Out: d})
						}
						// dY [M, R], W [cols, R]: the reduction is dX's N.
						return eng.DX(DXArgs{Tier: tier, M: M, N: R, K: cols, DY: x, W: w, DX: y, In: d, Out: d})
					}
				}
				for _, path := range []struct {
					name   string
					p      rowsPath
					serial bool
				}{{"auto", rowsPathAuto, false}, {"one", rowsPathOne, false}, {"two", rowsPathTwo, false}, {"tma", rowsPathTMA, false}, {"tma-serial", rowsPathTMA, true}} {
					if only := os.Getenv("DETGEMM_ROWS_PERF_PATHS"); only != "" && !strings.Contains(","+only+",", ","+path.name+",") {
						continue // a narrow A/B times only the paths it names ("auto,tma")
					}
					launch := launchOn(forced(eng, filter{strategy: StrategyRows, rowsPath: path.p, serial: path.serial}))
					require.NoError(t, launch(0))
					best := bestPerLaunch(t, eng, start, end, 30, launch)
					by := float64(d.Size()) * float64(R*cols+M*R+M*cols)
					t.Logf("rowspath %-3s %-4v M=%d R=%-5d cols=%-5d %-10s %7.2f us %5.2f TB/s", op, d, M, R, cols, path.name,
						float64(best.Nanoseconds())/1e3, by/best.Seconds()/1e12)
				}
			}
		}
	}
}

// TestOverlapThroughput times engine calls launched overlapped
// (programmatic dependent launch), as the engine does on sm_90, and
// plainly, back to back, on the bench's shapes in every tier. It runs only
// with DETGEMM_ROWS_PERF=1; bench measures the engine for the record.
func TestOverlapThroughput(t *testing.T) {
	eng, ctx := perfEngine(t, "DETGEMM_ROWS_PERF", "the overlapped launches")
	start, end := mustEvent(t, ctx), mustEvent(t, ctx)
	for _, c := range []struct {
		tier Tier
		d    DType
	}{{TierF32, F32}, {TierTyped, BF16}, {TierTensorCore, BF16}} {
		for _, s := range [][3]int{{1, 4096, 4096}, {16, 4096, 4096}, {2048, 768, 3072}, {2048, 768, 512}, {128, 4096, 11008}, {4096, 4096, 4096}} {
			M, K, N := s[0], s[1], s[2]
			d, tier := c.d, c.tier
			call := perfCall(t, ctx, tier, d, M, K, N)
			for _, op := range []string{"fwd", "dx", "dw"} {
				var us [2]float64
				for i, serial := range []bool{false, true} {
					launch := call(forced(eng, filter{serial: serial}), op)
					require.NoError(t, launch(0))
					us[i] = float64(bestPerLaunch(t, eng, start, end, 20, launch).Nanoseconds()) / 1e3
				}
				t.Logf("overlapperf %-4v %-5v %5dx%5dx%5d %-3s overlapped %8.2f us plain %8.2f us", tier, d, M, K, N, op, us[0], us[1])
			}
		}
	}
}

// TestStrategyThroughput times the IEEE tiers' tiled and split-slab
// strategies, each forced at both tile widths and every slab grouping G,
// against the dispatcher's choice on the bench shapes whose square grid
// underfills the GPU (the figures the time model in tiles.go is fitted
// to). It runs only with DETGEMM_STRATEGY_PERF=1; bench measures the
// engine for the record.
func TestStrategyThroughput(t *testing.T) {
	eng, ctx := perfEngine(t, "DETGEMM_STRATEGY_PERF", "the strategies")
	start, end := mustEvent(t, ctx), mustEvent(t, ctx)
	type shape struct {
		op      string
		M, K, N int
	}
	forces := []struct {
		name string
		f    filter
	}{{"auto", filter{}}, {"tiled", filter{strategy: StrategyTiled}}, {"tiled-narrow", filter{strategy: StrategyTiled, width: narrowWidth}}}
	for _, g := range []int64{1, 2, 3, 4, 6, 8, 12, 16} {
		forces = append(forces,
			struct {
				name string
				f    filter
			}{fmt.Sprintf("split-G%d", g), filter{strategy: StrategySplitSlab, perBlock: g}},
			struct {
				name string
				f    filter
			}{fmt.Sprintf("split-narrow-G%d", g), filter{strategy: StrategySplitSlab, perBlock: g, width: narrowWidth}})
	}
	for _, d := range []DType{F32, BF16} {
		tier := TierF32
		if d != F32 {
			tier = TierTyped
		}
		for _, s := range []shape{{"dx", 2048, 768, 3072}, {"dw", 2048, 768, 3072}, {"fwd", 2048, 768, 512}, {"dx", 2048, 768, 512}, {"dw", 2048, 768, 512}, {"fwd", 128, 4096, 11008}, {"dx", 128, 4096, 11008}, {"dw", 4096, 1536, 3072}, {"dx", 4096, 1536, 3072}, {"fwd", 64, 4096, 4096}, {"dx", 256, 4096, 4096}} {
			M, K, N := s.M, s.K, s.N
			call := perfCall(t, ctx, tier, d, M, K, N)
			for _, fc := range forces {
				launch := call(forced(eng, fc.f), s.op)
				if err := launch(0); err != nil {
					continue
				}
				best := bestPerLaunch(t, eng, start, end, 10, launch)
				t.Logf("strategyperf %-4v %-3s %5dx%5dx%5d %-17s %8.2f us", d, s.op, M, K, N, fc.name, float64(best.Nanoseconds())/1e3)
			}
		}
	}
}

// perfCall allocates the operands of an M×K×N call in type d — X, W, Y,
// dX, and an f32 dW — filled with a fixed non-zero pattern (timing only),
// and returns, for an engine and an op ("fwd", "dx" or "dw"), a launcher
// of that call in tier, for bestPerLaunch.
func perfCall(t *testing.T, ctx *cudaload.Context, tier Tier, d DType, M, K, N int) func(eng caller, op string) func(int) error {
	t.Helper()
	x, w := alloc(t, ctx, uint64(M*K*d.Size())), alloc(t, ctx, uint64(K*N*d.Size()))
	y, dw := alloc(t, ctx, uint64(M*N*d.Size())), alloc(t, ctx, uint64(K*N*4))
	dx := alloc(t, ctx, uint64(M*K*d.Size()))
	require.NoError(t, ctx.MemsetD8(x, 0x3c, uint64(M*K*d.Size())))
	require.NoError(t, ctx.MemsetD8(w, 0x3c, uint64(K*N*d.Size())))
	require.NoError(t, ctx.MemsetD8(y, 0x3c, uint64(M*N*d.Size())))
	require.NoError(t, ctx.MemsetD8(dw, 0, uint64(K*N*4)))
	return func(eng caller, op string) func(int) error {
		return func(int) error {
			switch op {
			case "fwd":
				return eng.Forward(ForwardArgs{Tier: tier, M: M, K: K, N: N, X: x, W: w, Y: y, In: d, Out: d})
			case "dx":
				return eng.DX(DXArgs{Tier: tier, M: M, N: N, K: K, DY: y, W: w, DX: dx, In: d, Out: d})
			}
			return eng.DW(DWArgs{Tier: tier, M: M, K: K, N: N, X: x, DY: y, DW: dw, In: d})
		}
	}
}
