package gemm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTiledTailCutsOnlyAShortLastRound(t *testing.T) {
	cases := []struct {
		name          string
		tx, ty, perSM int64
		cut           int
		k             int64
	}{
		// 2048×768×3072 forward on the H200: 384 tiles = 264 + 120.
		{"forward 2048x768x3072", 16, 24, 2, cutRows, 11},
		{"columns give the smaller tail", 24, 16, 2, cutCols, 11},
		{"4096³: last round 232 > 132 SMs", 32, 32, 2, cutNone, 0},
		{"4096x1536x3072: last round 240", 32, 24, 2, cutNone, 0},
		{"one round", 16, 6, 2, cutNone, 0},
		{"whole rounds", 24, 11, 2, cutNone, 0},
		{"one block an SM: nothing to double up", 16, 24, 1, cutNone, 0},
		{"narrow, three an SM: 400 = 396 + 4", 20, 20, 3, cutCols, 19},
		{"last round of 133 > 132 SMs", 397, 1, 2, cutNone, 0},
		{"only rows can cut", 390, 1, 2, cutRows, 264},
		{"row tiles too coarse", 2, 197, 2, cutCols, 132},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cut, k := tiledTail(c.tx, c.ty, c.perSM, h200SMs)
			require.Equal(t, c.cut, cut)
			require.Equal(t, c.k, k)
			if cut == cutNone {
				return
			}
			tiles, head := c.tx*c.ty, k*c.tx
			if cut == cutRows {
				head = k * c.ty
			}
			require.LessOrEqual(t, tiles-head, int64(h200SMs), "the tail runs one block an SM")
			require.LessOrEqual(t, head, tiles-tiles%(c.perSM*h200SMs), "the head fills whole rounds")
		})
	}
}

func TestLoneSharedKeepsOneBlockAnSM(t *testing.T) {
	const h200PerSM, h200Optin = 233472, 232448
	lone := loneShared(h200PerSM, h200Optin)
	require.Equal(t, int64(1), blocksPerSM(lone, simtRegBlocks, h200PerSM))
	require.Equal(t, int64(2), blocksPerSM(lone-1, simtRegBlocks, h200PerSM), "the least such size")
	require.Equal(t, simtRegBlocks, blocksPerSM(simtSharedBytes, simtRegBlocks, h200PerSM))
	require.Equal(t, simt64RegBlocks, blocksPerSM(simt64SharedBytes, simt64RegBlocks, h200PerSM))
	// sm_86: 100 KiB an SM, 99 KiB a block: the square tile is alone already.
	require.Equal(t, int64(1), blocksPerSM(simtSharedBytes, simtRegBlocks, 102400))
	require.Zero(t, loneShared(102400, 40000), "a block cannot take half the SM")
}

func TestSplitMovesPointersToTheTail(t *testing.T) {
	p := problem{layout: layoutNN, in: BF16, out: F32, rows: 300, cols: 500, red: 70,
		a: 1 << 20, b: 2 << 20, c: 3 << 20, bias: 4 << 20, lda: 70, ldb: 500, ldc: 500}
	head, tail := p.split(cutCols, 128)
	require.Equal(t, int64(128), head.cols)
	require.Equal(t, int64(372), tail.cols)
	require.Equal(t, p.a, tail.a)
	require.Equal(t, p.b+128*2, tail.b, "W[r, j]: column j is j elements in")
	require.Equal(t, p.c+128*4, tail.c)
	require.Equal(t, p.bias+128*4, tail.bias)

	head, tail = p.split(cutRows, 256)
	require.Equal(t, int64(256), head.rows)
	require.Equal(t, int64(44), tail.rows)
	require.Equal(t, p.a+256*70*2, tail.a, "X[i, r]: row i is i·lda elements in")
	require.Equal(t, p.b, tail.b)
	require.Equal(t, p.c+256*500*4, tail.c)
	require.Equal(t, p.bias, tail.bias)

	nt := p
	nt.layout, nt.ldb = layoutNT, 70
	_, tail = nt.split(cutCols, 128)
	require.Equal(t, p.b+128*70*2, tail.b, "W[j, r]: column j of B is row j of W")

	tn := p
	tn.layout, tn.lda, tn.bias = layoutTN, 300, 0
	_, tail = tn.split(cutRows, 128)
	require.Equal(t, p.a+128*2, tail.a, "X[r, i]: row i of A is column i of X")
	require.Zero(t, tail.bias)
}
