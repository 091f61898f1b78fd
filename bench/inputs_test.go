package main

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRandomFillIsSeededAndIndependentOfWorkers(t *testing.T) {
	n := 3*fillChunk + 12345
	a := make([]float32, n)
	randomFill(a, 7, 42)

	prev := runtime.GOMAXPROCS(1)
	b := make([]float32, n)
	randomFill(b, 7, 42)
	runtime.GOMAXPROCS(prev)
	require.Equal(t, a, b, "the values depend on seed and stream only")

	c := make([]float32, n)
	randomFill(c, 8, 42)
	require.NotEqual(t, a[:100], c[:100], "another seed gives other values")
	randomFill(c, 7, 43)
	require.NotEqual(t, a[:100], c[:100], "another stream gives other values")
	require.NotEqual(t, a[:100], a[fillChunk:fillChunk+100], "chunks are not copies of each other")

	zeros, outside := 0, 0
	for _, v := range a {
		if v < -1 || v >= 1 {
			outside++
		}
		if v == 0 {
			zeros++
		}
	}
	require.Zero(t, outside, "values outside [-1, 1)")
	require.Less(t, zeros, 4, "inputs are random, not zeros")
}

func TestRandomFillAllEqualsOneByOne(t *testing.T) {
	a, b := make([]float32, fillChunk+5), make([]float32, 77)
	randomFillAll([]fillJob{{a, 1}, {b, 2}}, 9)
	a1, b1 := make([]float32, len(a)), make([]float32, len(b))
	randomFill(a1, 9, 1)
	randomFill(b1, 9, 2)
	require.Equal(t, a1, a)
	require.Equal(t, b1, b)
}

func TestStreamIDSeparatesOperandsSetsAndShapes(t *testing.T) {
	s := shape{128, 4096, 11008}
	ids := map[uint64]string{}
	for _, sh := range []shape{s, {4096, 128, 11008}, {128, 11008, 4096}} {
		for set := 0; set < 4; set++ {
			for _, op := range []byte{'A', 'B'} {
				id := streamID(sh, set, op)
				_, dup := ids[id]
				require.False(t, dup, "stream id collision")
				ids[id] = ""
			}
		}
	}
}

func TestSetBytesCountsAllThreeOperands(t *testing.T) {
	require.Equal(t, int64((2*3+3*5+2*5)*4), setBytes(shape{2, 3, 5}, f32))
	require.Equal(t, int64((2*3+3*5+2*5)*2), setBytes(shape{2, 3, 5}, bf16))
}
