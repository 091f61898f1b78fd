package gemm

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/kernels"
)

// TestEngineFamiliesAreWhatItLoads: the families New builds are those
// loadModules loads on the architecture, every one exists there, and each
// shipped architecture serves them all from the embedded set.
func TestEngineFamiliesAreWhatItLoads(t *testing.T) {
	for _, tc := range []struct {
		arch kernels.Arch
		n    int
	}{
		{kernels.Arch{Major: 8}, 13},
		{kernels.Arch{Major: 8, Minor: 6}, 13},
		{kernels.Arch{Major: 8, Minor: 9}, 13},
		{kernels.Arch{Major: 9}, 13},
		{kernels.Arch{Major: 9, Specific: true}, 22},
	} {
		fams := engineFamilies(tc.arch)
		require.Len(t, fams, tc.n, "%s", tc.arch)
		avail := kernels.FamiliesFor(tc.arch)
		for _, f := range fams {
			require.Contains(t, avail, f, "%s", tc.arch)
		}
		require.NotContains(t, fams, "triad")
		require.NotContains(t, fams, "util")
		require.Equal(t, wgArch(tc.arch), slices.Contains(fams, wgFamily))
	}
	if len(kernels.EmbeddedArchs()) == 0 {
		return // built with -tags detgemm_noembed
	}
	for _, a := range kernels.EmbeddedArchs() {
		require.True(t, kernels.Embedded(a, engineFamilies(a)...), "%s: the engine's families are embedded", a)
	}
	require.True(t, kernels.Embedded(kernels.ArchFor(9, 0, 12), engineFamilies(kernels.ArchFor(9, 0, 12))...),
		"Hopper starts from the embedded sm_90a set")
}

func TestBuildReportSummarisesTheBundle(t *testing.T) {
	b := &kernels.Bundle{
		Arch: kernels.Arch{Major: 8, Minor: 6}, Mode: kernels.ModeAuto,
		Modules: map[string]*kernels.Module{
			"gemm_tc":   {Family: "gemm_tc", Origin: kernels.OriginCompiled},
			"gemm_fold": {Family: "gemm_fold", Origin: kernels.OriginEmbedded},
			"gemm_simt": {Family: "gemm_simt", Origin: kernels.OriginCache},
		},
		Embedded: 1, Hits: 1, Misses: 1, Rebuilt: 1, NVRTCVersion: "13.0", EmbeddedNVRTC: "12.4", EmbeddedVariant: "base", DriverVersion: 12040,
		Warnings: []string{"cache: x: corrupt cache entry: checksum mismatch; rebuilt and replaced"},
	}
	r := reportOf(b)
	require.Equal(t, []FamilyOrigin{
		{"gemm_fold", kernels.OriginEmbedded}, {"gemm_simt", kernels.OriginCache}, {"gemm_tc", kernels.OriginCompiled},
	}, r.Families)
	require.Equal(t, 1, r.Embedded)
	require.Equal(t, 1, r.CacheHits)
	require.Equal(t, 1, r.Compiled)
	require.Equal(t, 1, r.Rebuilt)
	require.Equal(t, "base", r.EmbeddedVariant)
	require.Equal(t, 12040, r.DriverVersion)
	require.True(t, r.Cold())
	require.Equal(t, b.Warnings, r.Warnings)
	b.Warnings[0] = "changed"
	require.NotEqual(t, "changed", r.Warnings[0], "the report owns its warnings")

	for _, tc := range []struct {
		r    BuildReport
		want string
	}{
		{BuildReport{Embedded: 12}, "embedded"},
		{BuildReport{Embedded: 10, CacheHits: 2}, "warm"},
		{BuildReport{CacheHits: 2, Compiled: 1}, "cold"},
		{BuildReport{Shared: true, Compiled: 1}, "shared"},
	} {
		require.Equal(t, tc.want, tc.r.Start())
	}
	s := r.String()
	for _, want := range []string{"kernels cold for sm_86 (mode auto)", "1 embedded (NVRTC 12.4, variant base)", "1 cached", "1 compiled (NVRTC 13.0)",
		"1 corrupt cache entries rebuilt", "1 warnings"} {
		require.Contains(t, s, want)
	}
	e := &Engine{report: r}
	got := e.BuildReport()
	got.Families[0].Family = "x"
	require.Equal(t, "gemm_fold", e.BuildReport().Families[0].Family, "BuildReport returns a copy")
}

// TestModulesAreSharedPerContextAndUnloadedByTheLast exercises the
// registry with a stand-in build: one build per key however many engines
// ask at once, a failed build is not kept, and the last release removes
// the entry.
func TestModulesAreSharedPerContextAndUnloadedByTheLast(t *testing.T) {
	ctxA, ctxB := new(cudaload.Context), new(cudaload.Context)
	before := sharedEngines()
	var builds atomic.Int32
	build := func() (*loaded, error) {
		builds.Add(1)
		time.Sleep(time.Millisecond)
		return &loaded{arch: kernels.Arch{Major: 8}, report: BuildReport{Embedded: 8}}, nil
	}
	keyA := shareKey{ctx: ctxA, mode: kernels.ModeAuto}
	const engines = 8
	got := make([]*loaded, engines)
	reused := make([]bool, engines)
	var wg sync.WaitGroup
	for i := range engines {
		wg.Go(func() {
			var err error
			got[i], reused[i], err = acquire(keyA, build)
			require.NoError(t, err)
		})
	}
	wg.Wait()
	require.EqualValues(t, 1, builds.Load(), "one build for one context")
	require.Equal(t, engines-1, count(reused, true))
	for _, l := range got {
		require.Same(t, got[0], l)
	}

	// Another context, or another mode, is another set.
	lB, reusedB, err := acquire(shareKey{ctx: ctxB, mode: kernels.ModeAuto}, build)
	require.NoError(t, err)
	require.False(t, reusedB)
	lN, reusedN, err := acquire(shareKey{ctx: ctxA, mode: kernels.ModeNVRTC}, build)
	require.NoError(t, err)
	require.False(t, reusedN)
	require.EqualValues(t, 3, builds.Load())
	require.Equal(t, before+3, sharedEngines())

	for i, l := range got {
		require.NoError(t, release(keyA, l))
		if i < engines-1 {
			require.True(t, l.ready, "still held")
		}
	}
	require.False(t, got[0].ready, "unloaded by the last release")
	require.NoError(t, release(shareKey{ctx: ctxB, mode: kernels.ModeAuto}, lB))
	require.NoError(t, release(shareKey{ctx: ctxA, mode: kernels.ModeNVRTC}, lN))
	require.Equal(t, before, sharedEngines())

	// A failed build leaves nothing behind; the next engine builds again.
	boom := errors.New("no kernels")
	_, _, err = acquire(keyA, func() (*loaded, error) { return nil, boom })
	require.ErrorIs(t, err, boom)
	require.Equal(t, before, sharedEngines())
	l, reusedAgain, err := acquire(keyA, build)
	require.NoError(t, err)
	require.False(t, reusedAgain)
	require.NoError(t, release(keyA, l))
	require.Equal(t, before, sharedEngines())
}

func count(bs []bool, v bool) int {
	n := 0
	for _, b := range bs {
		if b == v {
			n++
		}
	}
	return n
}
