package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCopyHalfMovesTheRooflineBytes(t *testing.T) {
	for _, tc := range []struct {
		s    shape
		dt   dtype
		want uint64
	}{
		// 1×4096×4096 bf16: (4096 + 4096² + 4096)·2 bytes, half of them.
		{shape{M: 1, K: 4096, N: 4096}, bf16, (4096*4096 + 2*4096) + 0},
		{shape{M: 1, K: 1, N: 1}, f32, 256},
		{shape{M: 3, K: 5, N: 7}, f16, 256},
		{shape{M: 16, K: 4096, N: 4096}, f32, (16*4096*2 + 4096*4096) * 2},
	} {
		got := copyHalf(tc.s, tc.dt)
		require.Equal(t, tc.want, got, "%v %v", tc.s, tc.dt)
		require.Zero(t, got%256)
		require.GreaterOrEqual(t, 2*got, uint64(gemmBytes(tc.s, tc.dt)))
	}
}

func TestCopyBackendOffersBothFloorsForEveryType(t *testing.T) {
	for _, dt := range []dtype{f32, bf16, f16} {
		require.Equal(t, []string{modeCopy, modeRead}, (&copyBackend{}).Modes(dt))
	}
	_, err := (&copyBackend{}).Prepare(nil, nil, problem{Mode: modeFwd}, nil)
	require.Error(t, err)
	_, err = (&copyBackend{}).Prepare(nil, nil, problem{Mode: modeRead}, nil)
	require.ErrorContains(t, err, kernReadXOR, "no util module: the read floor says so")
}
