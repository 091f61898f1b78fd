package gemm

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/kernels"
)

// TestWGDispatchRule: on a GPU with the wgmma family the large aligned
// shapes take it, for every op; shapes TMA cannot read (unaligned bases,
// leading dimensions that are not multiples of 8) stay on gemm_tc; without
// the family nothing changes.
func TestWGDispatchRule(t *testing.T) {
	const sms = 132
	for _, c := range []struct {
		name string
		call Call
		want tcTile
	}{
		{"4096³ forward", ForwardArgs{Tier: TierTensorCore, M: 4096, K: 4096, N: 4096, In: BF16, Out: BF16}, tcTileWG128x256},
		{"8192³ dX", DXArgs{Tier: TierTensorCore, M: 8192, N: 8192, K: 8192, In: BF16, Out: BF16}, tcTileWG128x256},
		{"8192³ dW", DWArgs{Tier: TierTensorCore, M: 8192, K: 8192, N: 8192, In: F16}, tcTileWG128x256},
		{"4096×1536×3072 forward", ForwardArgs{Tier: TierTensorCore, M: 4096, K: 1536, N: 3072, In: BF16, Out: F32}, tcTileWG128x256},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := tcProblem(t, c.call)
			k, err := chooseTCKernel(p, sms, 227<<10, true, tcForce{})
			require.NoError(t, err)
			require.Equal(t, c.want, k.tile, "chose %s", k.name())
			without, err := chooseTCKernel(p, sms, 227<<10, false, tcForce{})
			require.NoError(t, err)
			mma, err := chooseTC(p, sms, 227<<10, tcForce{})
			require.NoError(t, err)
			require.Equal(t, mma, without, "no wgmma family: gemm_tc's choice")
		})
	}
	// Grids whose 128×128 tiles fit one round take the tile whose grid,
	// still one round, has the most blocks (128×96 for dX's layout only);
	// a cut plan takes the 128×128 slab variant.
	for _, c := range []struct {
		name string
		call Call
		want tcTile
	}{
		{"dX 128×4096 over 11008", DXArgs{Tier: TierTensorCore, M: 128, N: 11008, K: 4096, In: BF16, Out: BF16}, tcTileWG128x64},
		{"dX 2048×768 over 3072", DXArgs{Tier: TierTensorCore, M: 2048, N: 3072, K: 768, In: BF16, Out: BF16}, tcTileWG128x96},
		{"dX 1024×1024 over 4096", DXArgs{Tier: TierTensorCore, M: 1024, N: 4096, K: 1024, In: F16, Out: F32}, tcTileWG128x64},
		{"dW 768×512 over 2048", DWArgs{Tier: TierTensorCore, M: 2048, K: 768, N: 512, In: BF16}, tcTileWG128x64},
		{"forward 2048×512 over 768", ForwardArgs{Tier: TierTensorCore, M: 2048, K: 768, N: 512, In: F16, Out: F32}, tcTileWG128x64},
		{"forward 2048×768 over 768: no 128×96 for B along its columns", ForwardArgs{Tier: TierTensorCore, M: 2048, K: 768, N: 768, In: BF16, Out: BF16}, tcTileWG128x128},
		{"forward 1536×1536 over 1024: 128×128 is already one full round", ForwardArgs{Tier: TierTensorCore, M: 1536, K: 1024, N: 1408, In: BF16, Out: BF16}, tcTileWG128x128},
	} {
		k, err := chooseTCKernel(tcProblem(t, c.call), sms, 227<<10, true, tcForce{})
		require.NoError(t, err)
		want := []tcTile{c.want}
		if s, ok := wgSlabTiles[c.want]; ok {
			want = append(want, s)
		} else {
			want = append(want, tcTileWG128x128S)
		}
		require.Contains(t, want, k.tile, "%s: chose %s", c.name, k.name())
	}

	few := tcProblem(t, ForwardArgs{Tier: TierTensorCore, M: 1, K: 4096, N: 4096, In: BF16, Out: BF16})
	k, err := chooseTCKernel(few, sms, 227<<10, true, tcForce{})
	require.NoError(t, err)
	require.Equal(t, tcTileRowsTMA8, k.tile, "few rows take a rows family (gemm_tc_rows_tma on sm_90a), never a wgmma tile")

	p := tcProblem(t, ForwardArgs{Tier: TierTensorCore, M: 4096, K: 4096, N: 4096, In: BF16, Out: BF16})
	p.lda = 4095
	k, err = chooseTCKernel(p, sms, 227<<10, true, tcForce{})
	require.NoError(t, err)
	require.False(t, isWG(k.tile), "TMA needs leading dimensions that are multiples of 8")
	_, err = chooseTCKernel(p, sms, 227<<10, true, tcForce{tile: tcTileWG128x256})
	require.ErrorIs(t, err, errTCKernel)
}

func TestWGForcedTilesAreHonouredOrRefused(t *testing.T) {
	p := tcProblem(t, ForwardArgs{Tier: TierTensorCore, M: 5, K: 40, N: 16, In: F16, Out: F16})
	for _, tile := range wgTilesBySize {
		k, err := chooseTCKernel(p, 132, 227<<10, true, tcForce{tile: tile})
		require.NoError(t, err)
		require.Equal(t, tcKey{tile, layoutNN, F16, F16, true}, k)
		_, err = chooseTCKernel(p, 132, 227<<10, true, tcForce{tile: tile, path: tcPathAny})
		require.ErrorIs(t, err, errTCKernel, "no element path")
		_, err = chooseTCKernel(p, 132, 227<<10, false, tcForce{tile: tile})
		require.ErrorIs(t, err, errTCKernel, "sm_90a only")
		_, err = chooseTCKernel(p, 132, 99<<10, true, tcForce{tile: tile})
		require.ErrorIs(t, err, errTCKernel, "needs more than 99 KiB of shared memory")
	}
	for _, tile := range wgNarrowTiles {
		k, err := chooseTCKernel(tcProblem(t, DXArgs{Tier: TierTensorCore, M: 5, N: 40, K: 16, In: BF16, Out: BF16}), 132, 227<<10, true, tcForce{tile: tile})
		require.NoError(t, err)
		require.Equal(t, tile, k.tile)
	}
	_, err := chooseTCKernel(p, 132, 227<<10, true, tcForce{tile: tcTileWG128x96})
	require.ErrorIs(t, err, errTCKernel, "128×96 reads B along the reduction only")
	huge := p
	huge.red = 1 << 31
	_, err = chooseTCKernel(huge, 132, 227<<10, true, tcForce{tile: tcTileWG128x128})
	require.ErrorIs(t, err, errTCKernel, "TMA coordinates are 32-bit")
}

// TestWGSharedMemory: wgmma.cuh's Tile::SMEM, which fits an sm_90
// block (227 KiB).
func TestWGSharedMemory(t *testing.T) {
	require.Equal(t, uint32(4*(128*64+256*64)*2+1024+64+1024+128+8*2048), wgSharedBytes(tcTileWG128x256))
	require.Equal(t, uint32(5*(128*64+192*64)*2+1024+80+768+128+8*2048), wgSharedBytes(tcTileWG128x192))
	require.Equal(t, uint32(6*(128*64+128*64)*2+1024+96+512+128+8*2048), wgSharedBytes(tcTileWG128x128))
	require.Equal(t, uint32(4*(192*64+192*64)*2+1024+64+768+128+12*2048), wgSharedBytes(tcTileWG192x192))
	require.Equal(t, uint32(7*(128*64+96*64)*2+1024+112+384+128+8*2048), wgSharedBytes(tcTileWG128x96))
	require.Equal(t, uint32(8*(128*64+64*64)*2+1024+128+256+128+8*2048), wgSharedBytes(tcTileWG128x64))
	require.Equal(t, uint32(512), wgGeometries[tcTileWG192x192].threads())
	require.Equal(t, uint32(384), wgGeometries[tcTileWG128x256].threads())
	for _, tile := range append(wgNarrowTiles, wgTilesBySize...) {
		require.LessOrEqual(t, wgSharedBytes(tile), uint32(227<<10))
	}
	require.True(t, wgArch(kernels.Arch{Major: 9, Minor: 0, Specific: true}))
	require.False(t, wgArch(kernels.Arch{Major: 9, Minor: 0}))
	require.False(t, wgArch(kernels.Arch{Major: 8, Minor: 0}))
}

// TestWGRegsumTail: a REGSUM grid whose last round is short moves the
// rows of that round to planes (wgTail), and keeps whole rounds where the
// saving is small; the workspace is the tail's planes.
func TestWGRegsumTail(t *testing.T) {
	e, _ := fakeEngine(fakeDevices[0]) // 132 SMs, sm_90a
	for _, c := range []struct {
		name     string
		call     Call
		launches []string
		ws       uint64
	}{
		// 32 × 22 tiles of 128×192 (5.33 rounds): 30 rows of tiles in 5
		// rounds, the last 256 rows as 44 tiles × 3 slabs in one.
		{"mlp_down forward", ForwardArgs{Tier: TierTensorCore, M: 4096, K: 14336, N: 4096, In: BF16, Out: BF16},
			[]string{"detgemm_wg128x192r_nn_bf16_bf16 (132,1,1)", "detgemm_wg128x192s_nn_bf16_f32 (132,1,1)", "detgemm_fold_store_bf16"},
			3 * 256 * 4096 * 4},
		{"qkv dX", DXArgs{Tier: TierTensorCore, M: 4096, N: 12288, K: 4096, In: F16, Out: F32},
			[]string{"detgemm_wg128x192r_nt_f16_f32 (132,1,1)", "detgemm_wg128x192s_nt_f16_f32 (132,1,1)", "detgemm_fold_store_f32"},
			3 * 256 * 4096 * 4},
		// 64 × 22 tiles (10.67 rounds): the tail would save under 5 %.
		{"8192 rows", ForwardArgs{Tier: TierTensorCore, M: 8192, K: 14336, N: 4096, In: BF16, Out: BF16},
			[]string{"detgemm_wg128x192r_nn_bf16_bf16 (132,1,1)"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, err := e.Explain(c.call)
			require.NoError(t, err)
			require.Len(t, x.Launches, len(c.launches), "%v", x)
			for i, l := range x.Launches {
				require.Contains(t, fmt.Sprintf("%s (%d,%d,%d)", l.Kernel, l.Grid.X, l.Grid.Y, l.Grid.Z), c.launches[i])
			}
			require.Equal(t, c.ws, x.WorkspaceBytes)
			require.Equal(t, StrategyTiled, x.Strategy)
		})
	}
	// The forced variant takes a tail of one row of tiles wherever there
	// are two.
	for _, v := range variants {
		if v.name != "wg-regsum-tail" {
			continue
		}
		p, err := ForwardArgs{Tier: TierTensorCore, M: 300, K: 9000, N: 200, In: BF16, Out: BF16}.build(false)
		require.NoError(t, err)
		pl, err := e.choose(p, &v.f)
		require.NoError(t, err)
		require.True(t, v.fits(pl))
		require.Equal(t, int64(256), pl.tc.tailRow)
		require.Equal(t, uint64(pl.slabs)*(300-256)*200*4, pl.ws)
		return
	}
	t.Fatal("no variant wg-regsum-tail")
}
