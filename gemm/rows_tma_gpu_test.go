package gemm

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRowsTMAMatchesReferenceBitForBit drives gemm_rows_tma (sm_90a) through
// its edges: Forward (nn) and dX (nt, swizzled boxes); every IEEE combo;
// one to sixteen rows (MR = 1, 4 and 16; the padding rows of a block's
// group are computed and never stored); one slab to the 32 (16 at MR = 16)
// a block folds, last slabs shorter than the box and single-slab reductions shorter
// than one; a last strip of columns cut short and outputs narrower than
// one strip; bias on and off; each shape twice.
func TestRowsTMAMatchesReferenceBitForBit(t *testing.T) {
	base, ctx := gpuEngine(t)
	if !base.hasWG {
		t.Skipf("gemm_rows_tma is built for sm_90a only; this GPU is %v", base.Arch())
	}
	r := newRand(t)
	eng := forced(base, filter{strategy: StrategyRows, rowsPath: rowsPathTMA})
	// (M, reduction, output columns): both multiples of 8, so the rows of
	// x (dY) and W are 16-byte aligned for every input type, as TMA needs.
	shapes := [][3]int{
		{1, 4096, 4096}, {4, 256, 40}, {3, 264, 1000}, {2, 8, 8}, {1, 248, 72},
		{4, 8192, 104}, {1, 4104, 296}, {3, 1032, 32},
		{16, 4096, 4096}, {5, 264, 1000}, {13, 4096, 40}, {9, 248, 72},
		// MR = 16 stages half slabs: a last slab of 64 steps (no second
		// half) after 15 whole ones, and last slabs of 136 (a second half
		// of 8 steps).
		{16, 3904, 96}, {11, 2440, 64}, {7, 1416, 200},
		// One row over more strips than the H200's 132 SMs: 16-bit calls
		// take the many-wave ring (rowsTMAWaves).
		{1, 520, 4328}, {1, 264, 4232},
	}
	for _, op := range []string{"Forward", "DX"} {
		for _, c := range ieeeCombos {
			for i, s := range shapes {
				for rep := 0; rep < 2; rep++ {
					name := fmt.Sprintf("%s/%v/%v-%v/%dx%dx%d/%d", op, c.tier, c.in, c.out, s[0], s[1], s[2], rep)
					t.Run(name, func(t *testing.T) {
						// s = (M, reduction, output columns) for both ops.
						p, err := ForwardArgs{Tier: c.tier, M: s[0], K: s[1], N: s[2], In: c.in, Out: c.out}.build(false)
						if op == "DX" {
							p, err = DXArgs{Tier: c.tier, M: s[0], N: s[1], K: s[2], In: c.in, Out: c.out}.build(false)
						}
						require.NoError(t, err)
						p.a, p.b = 256, 512 // upload's buffers are 256-byte aligned
						require.True(t, eng.rowsTMA(p, rowsMR(int64(s[0])), &eng.f))
						want, got, cols := runOp(t, eng, ctx, r, op, c.tier, c.in, c.out, s[0], s[1], s[2], (i+rep)%2 == 0)
						requireSameBits(t, want, got, cols, name)
					})
				}
			}
		}
	}
}
