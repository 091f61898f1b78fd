package gemm

import (
	"testing"

	"github.com/detgemm/detgemm/kernels"
	"github.com/stretchr/testify/require"
)

// TestTCRowsTMAEntriesHaveTheirTwins: each gemm_tc_rows_tma entry point
// has its one-slab twin, which the entry macro defines, and the family is
// built for sm_90a only (where the engine loads it, with gemm_wgmma).
func TestTCRowsTMAEntriesHaveTheirTwins(t *testing.T) {
	src, err := kernels.Source(tcRowsTMAFamily)
	require.NoError(t, err)
	keys := tcKeysOf(tcRowsTMAFamily)
	require.Len(t, keys, 16)
	for _, k := range keys {
		require.NotZero(t, tcOneIDs[k], k.name())
		require.Equal(t, k.oneSlabName(), tcOneIDs[k].entry().Name)
	}
	// Each entry macro defines the kernel and its one-slab twin.
	require.Contains(t, src, "DETGEMM_TMAROWS_KERNEL(NAME##_one, TILE, DTIN, DTOUT, BJC, INIT, false)")
	require.Equal(t, "detgemm_tmarows8_nn_f16_f32_vec_one", tcKey{tcTileRowsTMA8, layoutNN, F16, F32, true}.oneSlabName())
	targets, err := kernels.FamilyTargets(tcRowsTMAFamily)
	require.NoError(t, err)
	require.Equal(t, []kernels.Arch{{Major: 9, Minor: 0, Specific: true}}, targets)
}

// TestTCRowsTMAGeometry: the block size and shared memory the kernels
// expect (Rows::THREADS, Rows::SMEM), three blocks an SM on sm_90.
func TestTCRowsTMAGeometry(t *testing.T) {
	require.Equal(t, uint32(96), tcRowsGeometries[tcTileRowsTMA8].threads())
	require.Equal(t, uint32(160), tcRowsGeometries[tcTileRowsTMA16].threads())
	require.Equal(t, uint32(7*(8*128*2+128*32*2)+1024+2*7*8), tcRowsSharedBytes(tcTileRowsTMA8, layoutNN))
	require.Equal(t, uint32(6*(16*128*2+128*32*2)+1024+2*6*8), tcRowsSharedBytes(tcTileRowsTMA16, layoutNT))
	for _, k := range tcKeysOf(tcRowsTMAFamily) {
		require.LessOrEqual(t, 3*(tcRowsSharedBytes(k.tile, k.layout)+1024), uint32(228<<10), k.name())
	}
	require.Equal(t, "tmarows16", tcTileRowsTMA16.String())
	require.Equal(t, "detgemm_tmarows8_nt_bf16_f32_vec", tcKey{tcTileRowsTMA8, layoutNT, BF16, F32, true}.name())
}

// TestTCRowsOnHopper: with the family (sm_90a) Forward and dX calls of at
// most 32 rows on the 16-byte path take the TMA tiles (8 rows up to 8, 16
// rows above), before every other family; without it they take what
// gemm_tc_rows or gemm_tc would; a pinned kernel stays; a pinned TMA tile
// without the family is refused; more rows, dW and the element path never
// take it.
func TestTCRowsOnHopper(t *testing.T) {
	for _, c := range []struct {
		name string
		call Call
		want tcTile
	}{
		{"M = 1", ForwardArgs{Tier: TierTensorCore, M: 1, K: 4096, N: 4096, In: BF16, Out: BF16}, tcTileRowsTMA8},
		{"M = 8", ForwardArgs{Tier: TierTensorCore, M: 8, K: 4096, N: 11008, In: BF16, Out: F32}, tcTileRowsTMA8},
		{"M = 9", ForwardArgs{Tier: TierTensorCore, M: 9, K: 4096, N: 4096, In: F16, Out: F16}, tcTileRowsTMA16},
		{"M = 16 dX", DXArgs{Tier: TierTensorCore, M: 16, N: 4096, K: 11008, In: F16, Out: F16}, tcTileRowsTMA16},
		{"M = 32 dX", DXArgs{Tier: TierTensorCore, M: 32, N: 4096, K: 11008, In: BF16, Out: BF16}, tcTileRowsTMA16},
		{"M = 32", ForwardArgs{Tier: TierTensorCore, M: 32, K: 11008, N: 4096, In: BF16, Out: F32}, tcTileRowsTMA16},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := tcProblem(t, c.call)
			got, err := chooseTCKernel(p, 132, 227<<10, true, tcForce{})
			require.NoError(t, err)
			require.Equal(t, tcKey{c.want, p.layout, p.in, p.out, true}, got)
			without, err := chooseTCKernel(p, 132, 227<<10, false, tcForce{})
			require.NoError(t, err)
			require.False(t, isTCRowsTMA(without.tile), "no TMA rows tiles without sm_90a")
			pinned, err := chooseTCKernel(p, 132, 227<<10, true, tcForce{tile: without.tile, path: tcPathVec})
			require.NoError(t, err)
			require.Equal(t, without, pinned, "a pinned tile stays")
		})
	}
	p := tcProblem(t, ForwardArgs{Tier: TierTensorCore, M: 1, K: 4096, N: 4096, In: BF16, Out: BF16})
	_, err := chooseTCKernel(p, 132, 227<<10, false, tcForce{tile: tcTileRowsTMA8, path: tcPathVec})
	require.ErrorIs(t, err, errTCKernel)
	for _, c := range []Call{
		ForwardArgs{Tier: TierTensorCore, M: 33, K: 4096, N: 4096, In: BF16, Out: BF16},
		ForwardArgs{Tier: TierTensorCore, M: 4096, K: 4096, N: 4096, In: BF16, Out: BF16},
		DWArgs{Tier: TierTensorCore, M: 1, K: 4096, N: 4096, In: BF16},
	} {
		k, err := chooseTCKernel(tcProblem(t, c), 132, 227<<10, true, tcForce{})
		require.NoError(t, err)
		require.False(t, isTCRowsTMA(k.tile), "%v", k.name())
	}
	unaligned := tcProblem(t, ForwardArgs{Tier: TierTensorCore, M: 1, K: 4096, N: 4096, In: BF16, Out: BF16})
	unaligned.a++
	k, err := chooseTCKernel(unaligned, 132, 227<<10, true, tcForce{})
	require.NoError(t, err)
	require.False(t, isTCRowsTMA(k.tile), "TMA needs the 16-byte path")
}
