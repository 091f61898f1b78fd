package main

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSetsForCoverThreeL2s(t *testing.T) {
	const l2 = 60 << 20
	for _, tc := range []struct {
		name        string
		set, budget int64
		want        int
	}{
		{"small sets rotate until 3×L2", 10 << 20, 0, 18},
		{"rounds up", 7 << 20, 0, 26},
		{"never fewer than two", 1 << 30, 0, 2},
		{"budget caps the count", 10 << 20, 50 << 20, 5},
		{"budget never drops below one", 1 << 30, 1 << 20, 1},
		{"budget that fits is no cap", 10 << 20, 1 << 40, 18},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, setsFor(tc.set, l2, tc.budget))
		})
	}
}

func TestPickLaunchesSpansMinTime(t *testing.T) {
	require.Equal(t, 200, pickLaunches(10e-6, 2*time.Millisecond, 1, 1<<16))
	require.Equal(t, 201, pickLaunches(9.99e-6, 2*time.Millisecond, 1, 1<<16), "rounds up")
	require.Equal(t, 4, pickLaunches(50e-3, 2*time.Millisecond, 4, 1<<16), "at least minLaunches")
	require.Equal(t, 1<<16, pickLaunches(1e-9, 2*time.Millisecond, 1, 1<<16), "at most maxLaunches")
	require.Equal(t, 1<<16, pickLaunches(0, 2*time.Millisecond, 1, 1<<16))
}

func TestCopyBytesIsLargeAgainstL2(t *testing.T) {
	require.Equal(t, uint64(960<<20), copyBytes(60<<20, 141<<30))
	require.Equal(t, uint64(1<<30), copyBytes(128<<20, 141<<30), "capped at 1 GiB")
	require.Equal(t, uint64(256<<20), copyBytes(4<<20, 141<<30), "at least 256 MiB")
	require.Equal(t, uint64(128<<20), copyBytes(60<<20, 1<<30), "at most 1/8 of the device")
}

// fakeBatcher models a GPU where every launch takes per seconds, and
// records the batch sizes asked for.
type fakeBatcher struct {
	per      float64
	batches  []int
	launches int
}

func (f *fakeBatcher) batch(n int, launch func() error) (float64, error) {
	f.batches = append(f.batches, n)
	for i := 0; i < n; i++ {
		if err := launch(); err != nil {
			return 0, err
		}
	}
	return f.per, nil
}

func TestMeasureWarmsUpThenTimesRepeatsOfMinTime(t *testing.T) {
	f := &fakeBatcher{per: 10e-6}
	cfg := measureConfig{Repeats: 5, MinTime: 2 * time.Millisecond, MaxLaunches: 1 << 16}
	m, err := measure(f, func() error { f.launches++; return nil }, 1, cfg)
	require.NoError(t, err)
	require.Equal(t, 200, m.Launches, "R spans MinTime: 2 ms / 10 µs")
	require.Equal(t, 1, f.batches[0], "a cold launch comes first")
	timed := f.batches[len(f.batches)-cfg.Repeats:]
	for _, n := range timed {
		require.Equal(t, 200, n)
	}
	require.Equal(t, 200, f.batches[len(f.batches)-cfg.Repeats-1], "one untimed measurement at full length")
	require.Len(t, m.SamplesUS, 5)
	require.InDelta(t, 10.0, m.Stats.Median, 1e-9)
	sum := 0
	for _, n := range f.batches {
		sum += n
	}
	require.Equal(t, sum, f.launches)
}

func TestMeasureSlowKernelUsesFewLaunches(t *testing.T) {
	f := &fakeBatcher{per: 25e-3}
	m, err := measure(f, func() error { return nil }, 2, measureConfig{Repeats: 3, MinTime: 2 * time.Millisecond, MaxLaunches: 1 << 16})
	require.NoError(t, err)
	require.Equal(t, 2, m.Launches, "never below minLaunches")
	require.Equal(t, []int{1, 4, 2, 2, 2, 2}, f.batches, "cold, one estimate, warm, 3 timed")
}

func TestMeasureStopsOnLaunchError(t *testing.T) {
	f := &fakeBatcher{per: 1e-6}
	boom := errors.New("launch failed")
	_, err := measure(f, func() error { return boom }, 1, measureConfig{Repeats: 3, MinTime: time.Millisecond, MaxLaunches: 100})
	require.ErrorIs(t, err, boom)
}

// driftBatcher models a GPU that slows down over the run: the k-th batch
// costs base·(1 + k/100) per launch for whichever function runs.
type driftBatcher struct {
	order []int // the function index of every timed batch, in order
	k     int
	which func() int
}

func (d *driftBatcher) batch(n int, launch func() error) (float64, error) {
	for i := 0; i < n; i++ {
		if err := launch(); err != nil {
			return 0, err
		}
	}
	d.k++
	d.order = append(d.order, d.which())
	return 10e-6 * (1 + float64(d.k)/100), nil
}

func TestMeasureTurnsInterleavesSoDriftFallsOnAllAlike(t *testing.T) {
	cur := -1
	d := &driftBatcher{which: func() int { return cur }}
	mk := func(i int) func() error { return func() error { cur = i; return nil } }
	cfg := measureConfig{Repeats: 4, MinTime: time.Millisecond, MaxLaunches: 1 << 16}
	ms, errs := measureTurns(d, []func() error{mk(0), mk(1), mk(2)}, 1, cfg)
	for i := range errs {
		require.NoError(t, errs[i])
		require.Len(t, ms[i].SamplesUS, 4)
	}
	timed := d.order[len(d.order)-12:]
	require.Equal(t, []int{0, 1, 2, 1, 2, 0, 2, 0, 1, 0, 1, 2}, timed, "rounds take every function in turn, each round starting one later")
	// Under a linear drift the three medians differ by one batch's drift
	// step each, not by a whole row's worth of batches.
	require.InDelta(t, ms[0].Stats.Median, ms[2].Stats.Median, 0.25)
}

func TestMeasureTurnsDropsAFailingFunctionAndKeepsTheRest(t *testing.T) {
	f := &fakeBatcher{per: 5e-6}
	boom := errors.New("launch failed")
	calls := 0
	flaky := func() error {
		calls++
		if calls > 40 { // fails in the timed rounds, after calibration
			return boom
		}
		return nil
	}
	ms, errs := measureTurns(f, []func() error{func() error { return nil }, flaky}, 1,
		measureConfig{Repeats: 3, MinTime: 50 * time.Microsecond, MaxLaunches: 1 << 16})
	require.NoError(t, errs[0])
	require.Len(t, ms[0].SamplesUS, 3)
	require.ErrorIs(t, errs[1], boom)
	require.Empty(t, ms[1].SamplesUS)
}
