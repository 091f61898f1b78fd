package main

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/detgemm/detgemm/cudaload"
)

// measureConfig says how long and how often to time one problem.
type measureConfig struct {
	Repeats     int           // timed measurements; the median is reported
	MinTime     time.Duration // each measurement spans at least this much GPU time
	MaxLaunches int           // cap on launches per measurement
}

// measurement is the timing of one problem: per-launch times in µs, one per
// repeat, and how many back-to-back launches each repeat averaged over.
type measurement struct {
	SamplesUS []float64
	Stats     stats
	Launches  int
}

// timer brackets batches of launches with two CUDA events on one stream.
// One launch between two events would mostly measure the host's launch
// overhead (about 30 µs on the H200 machine), so every measurement times
// many launches back to back and divides.
type timer struct {
	stream     *cudaload.Stream
	start, end *cudaload.Event
}

func newTimer(ctx *cudaload.Context, stream *cudaload.Stream) (*timer, error) {
	start, err := ctx.NewEvent()
	if err != nil {
		return nil, err
	}
	end, err := ctx.NewEvent()
	if err != nil {
		_ = start.Close()
		return nil, err
	}
	return &timer{stream: stream, start: start, end: end}, nil
}

func (t *timer) close() error {
	return errors.Join(t.start.Close(), t.end.Close())
}

// batcher times n launches back to back and returns seconds per launch;
// *timer is the GPU one, tests use a model.
type batcher interface {
	batch(n int, launch func() error) (float64, error)
}

// batch enqueues n launches between the two events, waits for the end event
// and returns the GPU time per launch in seconds.
func (t *timer) batch(n int, launch func() error) (float64, error) {
	if err := t.start.Record(t.stream); err != nil {
		return 0, err
	}
	for i := 0; i < n; i++ {
		if err := launch(); err != nil {
			// Drain what was enqueued so the next problem starts clean.
			_ = t.stream.Synchronize()
			return 0, err
		}
	}
	if err := t.end.Record(t.stream); err != nil {
		return 0, err
	}
	if err := t.end.Synchronize(); err != nil {
		return 0, err
	}
	d, err := cudaload.ElapsedTime(t.start, t.end)
	if err != nil {
		return 0, err
	}
	return d.Seconds() / float64(n), nil
}

// measure times one launch function: calibrate, then cfg.Repeats timed
// measurements (measureTurns with a single entry).
func measure(t batcher, launch func() error, minLaunches int, cfg measureConfig) (measurement, error) {
	ms, errs := measureTurns(t, []func() error{launch}, minLaunches, cfg)
	return ms[0], errs[0]
}

// calibrate readies launch for timing: one cold launch (first-call costs
// such as library heuristics and module loads stay out of the figures), an
// estimate from growing batches, and one untimed batch at full length
// (clocks settle). It returns R, the launches one measurement takes so
// that it spans cfg.MinTime (at least minLaunches).
func calibrate(t batcher, launch func() error, minLaunches int, cfg measureConfig) (int, error) {
	minLaunches = max(1, minLaunches)
	maxLaunches := max(minLaunches, cfg.MaxLaunches)
	if _, err := t.batch(1, launch); err != nil {
		return 0, err
	}
	n := min(max(minLaunches, 4), maxLaunches)
	var per float64
	for {
		p, err := t.batch(n, launch)
		if err != nil {
			return 0, err
		}
		per = p
		if p*float64(n) >= cfg.MinTime.Seconds()/8 || n >= maxLaunches {
			break
		}
		n = min(n*4, maxLaunches)
	}
	r := pickLaunches(per, cfg.MinTime, minLaunches, maxLaunches)
	if _, err := t.batch(r, launch); err != nil {
		return 0, err
	}
	return r, nil
}

// measureTurns times several launch functions in turns: each is
// calibrated, then cfg.Repeats rounds each take one measurement of every
// function, round r starting at function r mod n. Drift over the run
// (clocks, temperature, the power drawn by the previous batch) then falls
// on every function alike, so the figures of one problem compare fairly.
// Measured one after the other, the f32 forward row at 4096³ read 3340-3396
// µs right after cuBLAS's TF32 row and 3165-3180 µs otherwise (H200). A
// function that fails gets its error and leaves the rounds; the others go
// on.
func measureTurns(t batcher, launches []func() error, minLaunches int, cfg measureConfig) ([]measurement, []error) {
	ms := make([]measurement, len(launches))
	errs := make([]error, len(launches))
	for i, l := range launches {
		r, err := calibrate(t, l, minLaunches, cfg)
		errs[i] = err
		ms[i] = measurement{Launches: r, SamplesUS: make([]float64, 0, max(1, cfg.Repeats))}
	}
	for rep := 0; rep < max(1, cfg.Repeats); rep++ {
		for j := range launches {
			// Round rep starts at function rep: over the rounds every
			// function follows every other one, so none always comes
			// right after the same (say, power-hungry) neighbour.
			i := (j + rep) % len(launches)
			l := launches[i]
			if errs[i] != nil {
				continue
			}
			p, err := t.batch(ms[i].Launches, l)
			if err != nil {
				errs[i] = err
				continue
			}
			ms[i].SamplesUS = append(ms[i].SamplesUS, p*1e6)
		}
	}
	for i := range ms {
		if errs[i] != nil {
			ms[i] = measurement{}
			continue
		}
		ms[i].Stats = summarize(ms[i].SamplesUS)
	}
	return ms, errs
}

// pickLaunches returns how many launches of perLaunch seconds span target,
// within [minLaunches, maxLaunches].
func pickLaunches(perLaunch float64, target time.Duration, minLaunches, maxLaunches int) int {
	if perLaunch <= 0 || math.IsNaN(perLaunch) {
		return maxLaunches
	}
	r := math.Ceil(target.Seconds() / perLaunch)
	if r > float64(maxLaunches) {
		return maxLaunches
	}
	return max(minLaunches, int(r))
}

// setsFor returns how many input sets to rotate so that together they are
// at least three times the L2 cache (then no launch finds its operands left
// in L2 by an earlier one): max(2, ceil(3·L2 / setBytes)), lowered to fit
// budget bytes but never below one.
func setsFor(setBytes, l2Bytes, budget int64) int {
	if setBytes <= 0 {
		return 2
	}
	n := max(2, int((3*l2Bytes+setBytes-1)/setBytes))
	if budget > 0 && int64(n)*setBytes > budget {
		n = max(1, int(budget/setBytes))
	}
	return n
}

// copyBandwidth is the measured device-to-device copy rate, the memory
// ceiling every row is judged against.
type copyBandwidth struct {
	Bytes       uint64  `json:"bytes_per_copy"`         // size of one copy (read once, written once)
	BytesPerSec float64 `json:"bytes_per_sec"`          // 2·Bytes / median time: bytes read + written
	TimeUS      stats   `json:"time_per_copy_us"`       // per copy
	Launches    int     `json:"copies_per_measurement"` //
}

// copyBytes picks the copy size: large against the L2 (16×) so the copy
// streams from memory, 256 MiB to 1 GiB, and at most 1/8 of the device.
func copyBytes(l2 int64, total uint64) uint64 {
	b := min(max(uint64(16*l2), 256<<20), 1<<30)
	return min(b, total/8) &^ 0xfff
}

// measureCopy times cuMemcpyDtoDAsync of one large buffer the same way the
// GEMMs are timed.
func measureCopy(ctx *cudaload.Context, t *timer, bytes uint64, cfg measureConfig) (copyBandwidth, error) {
	src, err := ctx.MemAlloc(bytes)
	if err != nil {
		return copyBandwidth{}, fmt.Errorf("copy bandwidth: %w", err)
	}
	defer ctx.MemFree(src)
	dst, err := ctx.MemAlloc(bytes)
	if err != nil {
		return copyBandwidth{}, fmt.Errorf("copy bandwidth: %w", err)
	}
	defer ctx.MemFree(dst)
	if err := ctx.MemsetD8(src, 0x5a, bytes); err != nil {
		return copyBandwidth{}, err
	}
	if err := ctx.Synchronize(); err != nil { // the memset ran on the legacy stream
		return copyBandwidth{}, err
	}
	m, err := measure(t, func() error { return t.stream.MemcpyDtoDAsync(dst, src, bytes) }, 1, cfg)
	if err != nil {
		return copyBandwidth{}, fmt.Errorf("copy bandwidth: %w", err)
	}
	cb := copyBandwidth{Bytes: bytes, TimeUS: m.Stats, Launches: m.Launches}
	if m.Stats.Median > 0 {
		cb.BytesPerSec = 2 * float64(bytes) / (m.Stats.Median * 1e-6)
	}
	return cb, nil
}
