package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSummarizeMedianMinMax(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want stats
	}{
		{"odd count", []float64{5, 1, 3}, stats{Median: 3, Min: 1, Max: 5, N: 3}},
		{"even count averages the middle two", []float64{4, 1, 3, 2}, stats{Median: 2.5, Min: 1, Max: 4, N: 4}},
		{"one sample", []float64{7}, stats{Median: 7, Min: 7, Max: 7, N: 1}},
		{"outlier does not move the median", []float64{10, 10, 10, 10, 1e6}, stats{Median: 10, Min: 10, Max: 1e6, N: 5}},
		{"empty is all zero", nil, stats{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, summarize(tc.in))
		})
	}
}

func TestSummarizeLeavesSamplesInOrder(t *testing.T) {
	in := []float64{3, 1, 2}
	summarize(in)
	require.Equal(t, []float64{3, 1, 2}, in)
}
