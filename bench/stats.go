package main

import "slices"

// stats summarises repeated timings of one quantity.
type stats struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// summarize returns the median (the mean of the middle two for an even
// count), min and max; all zero for no samples (JSON has no NaN). The input
// is not reordered.
func summarize(samples []float64) stats {
	if len(samples) == 0 {
		return stats{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return stats{Median: med, Min: s[0], Max: s[n-1], N: n}
}
