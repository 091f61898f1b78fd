//go:build linux

package gemm

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/require"
)

// TestMatmulEpilogueEnergy measures what a Matmul launch costs in energy
// beside what it costs in time: issue 21 asks a fused GeluAuxBias to cost
// at most 3 % over the plain product, and a card at its power cap (these
// products run at the H100's 700 W limit, bench/NOTES-matmul.md, thirteenth
// session) turns energy into time, whatever the schedule hides.
//
// Launches come in pairs, each pair followed by a pause (twice the pair's
// time for the longest request, at least 0.5 ms) that keeps the card's
// average power far under its cap, so every request runs at the same
// uncapped clock; the second launch of a pair is timed. The card's energy
// counter (NVML's nvmlDeviceGetTotalEnergyConsumption of the first GPU,
// loaded at run time as the engine loads libcuda: run it on a one-GPU
// machine) is read around each series of launches; a series of the same
// pauses with no launch gives the idle power, and a launch's energy is its
// series' energy less that idle power over the series' wall time. Rounds
// alternate the requests, so that drift (temperature) falls on all of
// them. It runs only with DETGEMM_MM_ENERGY=1; DETGEMM_MM_ENERGY_SHAPES
// keeps the shapes it names (MxKxN: 4096x4096x4096, 8192x8192x8192, and
// the gated projection 4096x4096x22016), DETGEMM_MM_ENERGY_ROUNDS sets
// the rounds (3) and DETGEMM_MM_ENERGY_SECONDS a series' length (4).
// DETGEMM_MATMUL_FUSED (read when the engine is made) forces the fused
// kernel for the plain product too, so that the activation's own cost can
// be told from the kernel's.
func TestMatmulEpilogueEnergy(t *testing.T) {
	eng, ctx := perfEngine(t, "DETGEMM_MM_ENERGY", "the Matmul epilogues' energy")
	meter, err := openEnergyMeter()
	require.NoError(t, err, "DETGEMM_MM_ENERGY asks for the card's energy counter (NVML)")
	r := newRand(t)
	start, end := mustEvent(t, ctx), mustEvent(t, ctx)
	rounds := envInt(t, "DETGEMM_MM_ENERGY_ROUNDS", 3)
	series := time.Duration(envInt(t, "DETGEMM_MM_ENERGY_SECONDS", 4)) * time.Second
	type probe struct {
		M, K, N int
		eps     []Epilogue
	}
	probes := []probe{
		{4096, 4096, 4096, []Epilogue{Default, Gelu, GeluAuxBias, DGelu, DGeluBgrad}},
		{8192, 8192, 8192, []Epilogue{Default, Gelu, GeluAuxBias, DGelu, DGeluBgrad}},
		{4096, 4096, 22016, []Epilogue{Default, GatedSwiGLU}},
	}
	shapes := strings.Fields(os.Getenv("DETGEMM_MM_ENERGY_SHAPES"))
	for _, pr := range probes {
		if len(shapes) > 0 && !slices.Contains(shapes, fmt.Sprintf("%dx%dx%d", pr.M, pr.K, pr.N)) {
			continue
		}
		bufs := newMMPerfBuffers(t, ctx, r, pr.M, pr.K, pr.N, pr.N)
		type req struct {
			ep     Epilogue
			run    func() error
			kernel string
			us     []float64 // each launch's time
			mj     []float64 // each series' energy a launch, idle power taken off
			watts  []float64 // the idle power beside it
		}
		reqs := make([]*req, len(pr.eps))
		var longest time.Duration
		for i, ep := range pr.eps {
			d, a := bufs.request(ep)
			p, err := eng.Plan(d)
			require.NoError(t, err, "%v", ep)
			reqs[i] = &req{ep: ep, run: func() error { return p.Run(a) }, kernel: fmt.Sprint(p.Kernels())}
			longest = max(longest, bestPerLaunch(t, eng, start, end, 5, func(int) error { return p.Run(a) }))
		}
		pause := max(500*time.Microsecond, 4*longest)
		pairs := max(20, int(series/(pause+2*longest)))
		// One series: pairs of launches of run (nil: none), the second of
		// each timed by events (queued while the first runs, so that its
		// time holds no launch latency), then synchronised and followed by
		// the pause; returns the energy in mJ, the wall time and the timed
		// launches' times in µs.
		one := func(run func() error) (float64, time.Duration, []float64) {
			us := make([]float64, 0, pairs)
			e0, err := meter.read()
			require.NoError(t, err)
			t0 := time.Now()
			for range pairs {
				if run != nil {
					require.NoError(t, run())
				}
				require.NoError(t, start.Record(eng.Stream()))
				if run != nil {
					require.NoError(t, run())
				}
				require.NoError(t, end.Record(eng.Stream()))
				require.NoError(t, end.Synchronize())
				el, err := cudaload.ElapsedTime(start, end)
				require.NoError(t, err)
				us = append(us, float64(el.Nanoseconds())/1e3)
				time.Sleep(pause)
			}
			wall := time.Since(t0)
			e1, err := meter.read()
			require.NoError(t, err)
			return e1 - e0, wall, us
		}
		for range rounds {
			idleMJ, idleWall, _ := one(nil)
			idleW := idleMJ / idleWall.Seconds() / 1e3
			for _, q := range reqs {
				mj, wall, us := one(q.run)
				q.mj = append(q.mj, (mj-idleW*1e3*wall.Seconds())/float64(2*pairs))
				q.watts = append(q.watts, idleW)
				q.us = append(q.us, us...)
			}
		}
		base := reqs[0]
		for _, q := range reqs {
			// A counter that did not move, or idle power that swallowed the
			// launches, leaves nothing to compare.
			require.Positive(t, median(q.mj), "%v: energy a launch (rounds %s mJ)", q.ep, fmtFloats(q.mj, "%.1f"))
			t.Logf("mmenergy %5dx%5dx%5d %-14v %8.1f us  %8.1f mJ a launch (rounds %s; idle %s W)  time %.3f×  energy %.3f×  %s",
				pr.M, pr.K, pr.N, q.ep, median(q.us), median(q.mj), fmtFloats(q.mj, "%.1f"), fmtFloats(q.watts, "%.0f"),
				median(q.us)/median(base.us), median(q.mj)/median(base.mj), q.kernel)
		}
		t.Logf("mmenergy %5dx%5dx%5d: %d pairs of launches a series, %v pauses, %d rounds", pr.M, pr.K, pr.N, pairs, pause, rounds)
	}
}

// energyMeter reads the first GPU's energy counter through NVML.
type energyMeter struct{ get, dev uintptr }

// openEnergyMeter loads libnvidia-ml (the driver's) and checks that the
// card reports its energy.
func openEnergyMeter() (*energyMeter, error) {
	lib, err := purego.Dlopen("libnvidia-ml.so.1", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, err
	}
	call := func(name string, args ...uintptr) (uintptr, error) {
		fn, err := purego.Dlsym(lib, name)
		if err != nil {
			return 0, err
		}
		if r, _, _ := purego.SyscallN(fn, args...); r != 0 {
			return fn, fmt.Errorf("%s: NVML error %d", name, r)
		}
		return fn, nil
	}
	if _, err := call("nvmlInit_v2"); err != nil {
		return nil, err
	}
	m := &energyMeter{}
	if _, err := call("nvmlDeviceGetHandleByIndex_v2", 0, uintptr(unsafe.Pointer(&m.dev))); err != nil {
		return nil, err
	}
	var mj uint64
	if m.get, err = call("nvmlDeviceGetTotalEnergyConsumption", m.dev, uintptr(unsafe.Pointer(&mj))); err != nil {
		return nil, err
	}
	return m, nil
}

// read is the counter in mJ (since the driver loaded).
func (m *energyMeter) read() (float64, error) {
	var mj uint64
	if r, _, _ := purego.SyscallN(m.get, m.dev, uintptr(unsafe.Pointer(&mj))); r != 0 {
		return 0, fmt.Errorf("nvmlDeviceGetTotalEnergyConsumption: NVML error %d", r)
	}
	return float64(mj), nil
}

// median of xs (not modified); NaN-free input.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// fmtFloats formats xs with format, slash-separated.
func fmtFloats(xs []float64, format string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, "/")
}
