package gemm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/stretchr/testify/require"
)

// TestSparse24KernelsRepeatTheirBits is TestTCKernelsRepeatTheirBits for
// the sparse forward: each sparse tile runs many times, back to back on the
// stream, on the same inputs, and every run must give the tile's first
// run's bits, and each tile's first run the first tile's (every sparse
// tile gives the same bits). A ring slot refilled while a warp still reads
// it shows here as a few differing rows. repeatSettings reads how many
// runs and which tiles.
func TestSparse24KernelsRepeatTheirBits(t *testing.T) {
	eng, ctx, _ := tcEngine(t)
	t.Cleanup(func() { sp24ForceTile, sp24NoStage = "", false })
	r := newRand(t)
	reps, only := repeatSettings(t)
	tiles := []string{"s", "m", "l"}
	if eng.hasWG {
		tiles = append(tiles, "r8", "r16", "r32", "w64", "w128", "w256", "w64x64")
	}
	// Few rows (the decode tiles' case, several row tiles for r8 and r16)
	// and a long K: many stages through every ring slot. Then enough rows
	// for the wgmma.sp tiles to stage their metadata (sp24StageMTiles row
	// tiles), against the same tiles unstaged ("/ns").
	for _, c := range []struct {
		M, N, K int
		tiles   []string
	}{{32, 2000, 4096, tiles}, {1100, 600, 4096, []string{"w64", "w64/ns", "w128", "w128/ns", "w256", "w256/ns", "w64x64", "w64x64/ns"}}} {
		if !eng.hasWG && c.M > 32 {
			continue
		}
		M, N, K, tiles := c.M, c.N, c.K, c.tiles
		for _, d := range []DType{BF16, F16} {
			x := upload(t, ctx, spfAdversarial(r, d, M*K, true))
			w := newSpfWeight(t, ctx, r, d, K, N, true)
			outs := make([]cudaload.DevicePtr, reps)
			for i := range outs {
				outs[i] = alloc(t, ctx, uint64(M*N*d.Size()))
			}
			var base []uint32
			baseTile := ""
			for _, tile := range tiles {
				if !only.MatchString(tile) {
					continue
				}
				sp24ForceTile, sp24NoStage = strings.CutSuffix(tile, "/ns")
				p, err := eng.PlanSparse24(Sparse24Desc{In: d, Out: d, M: M, N: N, K: K})
				sp24ForceTile, sp24NoStage = "", false
				require.NoError(t, err, tile)
				for _, o := range outs {
					require.NoError(t, ctx.MemsetD8(o, 0xFF, uint64(M*N*d.Size())))
				}
				for _, o := range outs {
					require.NoError(t, p.Run(Sparse24Args{X: x, Values: w.dv, Meta: w.dm, Y: o}), tile)
				}
				first := requireRunsRepeat(t, eng, ctx, outs, d, M, N, fmt.Sprintf("%v sparse tile %s (%v)", d, tile, p.Kernels()))
				if base == nil {
					base, baseTile = first, tile
				} else {
					requireSameBits(t, base, first, N, fmt.Sprintf("%v sparse tile %s vs tile %s", d, tile, baseTile))
				}
			}
		}
	}
}
