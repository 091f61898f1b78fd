package gemm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTCDWSharedMemory: gemm_tc_dw_stream.cu's Tile::SMEM, and the blocks
// per SM it leaves on an H200.
func TestTCDWSharedMemory(t *testing.T) {
	require.Equal(t, uint32(64*136*4+3*32*(72+136)*2), tcDWSharedBytes(tcTileDW64))
	// Three blocks per H200 SM (228 KiB, 1 KiB reserved per block); one
	// within an sm_86/89 block's 99 KiB.
	require.LessOrEqual(t, 3*(tcDWSharedBytes(tcTileDW64)+1024), uint32(228<<10))
	require.LessOrEqual(t, tcDWSharedBytes(tcTileDW64), uint32(99<<10))
}

// TestTCDWDispatchRule: short dW calls take tcdw64 (on the element path
// when X, dY or dW is unaligned), with or without gemm_wgmma; longer ones
// and Forward and dX never do.
func TestTCDWDispatchRule(t *testing.T) {
	for _, hasWG := range []bool{false, true} {
		for _, M := range []int{1, 16, 100, tcDWMaxRed} {
			for _, kn := range [][2]int{{4096, 4096}, {4096, 11008}, {7, 1}} {
				p := tcProblem(t, DWArgs{Tier: TierTensorCore, M: M, K: kn[0], N: kn[1], In: BF16})
				k, err := chooseTCKernel(p, 132, 227<<10, hasWG, tcForce{})
				require.NoError(t, err)
				require.Equal(t, tcKey{tcTileDW64, layoutTN, BF16, F32, tcVecOK(p) && p.ldc%4 == 0}, k, "M %d %v", M, kn)
			}
		}
		long := tcProblem(t, DWArgs{Tier: TierTensorCore, M: tcDWMaxRed + 1, K: 4096, N: 4096, In: F16})
		k, err := chooseTCKernel(long, 132, 227<<10, hasWG, tcForce{})
		require.NoError(t, err)
		require.False(t, isTCDW(k.tile), "M = %d takes %v", tcDWMaxRed+1, k.tile)
		for _, c := range []Call{
			ForwardArgs{Tier: TierTensorCore, M: 1, K: 4096, N: 4096, In: BF16, Out: BF16},
			DXArgs{Tier: TierTensorCore, M: 64, N: 4096, K: 4096, In: F16, Out: F32},
		} {
			k, err := chooseTCKernel(tcProblem(t, c), 132, 227<<10, hasWG, tcForce{})
			require.NoError(t, err)
			require.False(t, isTCDW(k.tile))
		}
	}
	base := tcProblem(t, DWArgs{Tier: TierTensorCore, M: 16, K: 4096, N: 4096, In: BF16})
	for _, c := range []struct {
		name string
		edit func(p *problem)
	}{
		{"X off 16 bytes", func(p *problem) { p.a += 2 }},
		{"dY off 16 bytes", func(p *problem) { p.b += 8 }},
		{"dW off 16 bytes", func(p *problem) { p.c += 8 }},
		{"odd ldc", func(p *problem) { p.ldc, p.cols = 4095, 4095 }},
		{"ldc not a multiple of 4", func(p *problem) { p.ldc, p.cols = 4094, 4094 }},
		{"lda not a multiple of 8", func(p *problem) { p.lda, p.rows = 4092, 4092 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := base
			c.edit(&p)
			k, err := chooseTCKernel(p, 132, 227<<10, true, tcForce{})
			require.NoError(t, err)
			require.Equal(t, tcKey{tcTileDW64, layoutTN, BF16, F32, false}, k)
			_, err = chooseTC(p, 132, 227<<10, tcForce{tile: tcTileDW64, path: tcPathVec})
			require.ErrorIs(t, err, errTCKernel)
			k, err = chooseTC(p, 132, 227<<10, tcForce{tile: tcTileDW64, path: tcPathAny})
			require.NoError(t, err)
			require.Equal(t, tcKey{tcTileDW64, layoutTN, BF16, F32, false}, k)
		})
	}
}

// TestTCDWForcedOnlyWhereItRuns: a forced stream tile runs dW of any
// length whose plan has one slab, on either path, and refuses Forward, dX
// and cut plans.
func TestTCDWForcedOnlyWhereItRuns(t *testing.T) {
	for _, tile := range tcDWTiles {
		cut := tcProblem(t, DWArgs{Tier: TierTensorCore, M: 8192, K: 40, N: 16, In: F16})
		_, err := chooseTCKernel(cut, 132, 227<<10, true, tcForce{tile: tile})
		require.ErrorIs(t, err, errTCKernel, "the stream runs one slab")
		dw := tcProblem(t, DWArgs{Tier: TierTensorCore, M: 1000, K: 40, N: 16, In: F16})
		for _, path := range []tcPath{0, tcPathVec, tcPathAny} {
			k, err := chooseTCKernel(dw, 132, 227<<10, true, tcForce{tile: tile, path: path})
			require.NoError(t, err)
			require.Equal(t, tcKey{tile, layoutTN, F16, F32, path != tcPathAny}, k)
		}
		for _, c := range []Call{
			ForwardArgs{Tier: TierTensorCore, M: 5, K: 40, N: 16, In: F16, Out: F16},
			DXArgs{Tier: TierTensorCore, M: 1, N: 40, K: 17, In: BF16, Out: F32},
		} {
			_, err := chooseTCKernel(tcProblem(t, c), 132, 227<<10, true, tcForce{tile: tile})
			require.ErrorIs(t, err, errTCKernel)
		}
		_, err = chooseTC(dw, 132, 32<<10, tcForce{tile: tile})
		require.ErrorIs(t, err, errTCKernel, "shared memory beyond the block's")
	}
}
