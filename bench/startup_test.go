package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/kernels"
	"github.com/detgemm/detgemm/nvrtc"
)

// TestColdBuildFillsCacheForWarmStart runs the start-up measurement's
// compile half, which needs NVRTC but no GPU: a cold build for Hopper
// compiles every family (util among them) into an empty cache, and a
// second build from that cache compiles nothing.
func TestColdBuildFillsCacheForWarmStart(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles every kernel family")
	}
	if _, err := nvrtc.Open(); err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	dir := t.TempDir()
	var st startup
	b, err := coldBuild(9, 0, 0, dir, &st)
	require.NoError(t, err)
	require.Equal(t, "sm_90a", st.Arch)
	require.Equal(t, len(kernels.FamiliesFor(b.Arch)), st.Families)
	require.Equal(t, st.Families, st.ColdMisses, "an empty cache compiles every family")
	require.Greater(t, st.ColdBuildMS, 0.0)
	if st.EmbeddedError == "" {
		require.Positive(t, st.EmbeddedModules, "the embedded set is timed beside the cold build")
	}
	util, ok := b.Modules[utilFamily]
	require.True(t, ok, "the bench narrows inputs with the util family")
	require.NotEmpty(t, util.CUBIN)

	warm, err := kernels.Build(b.Arch, kernels.WithCacheDir(dir), kernels.WithCache(true), kernels.WithMode(kernels.ModeNVRTC))
	require.NoError(t, err)
	require.Zero(t, warm.Misses)
	require.Equal(t, st.Families, warm.Hits)
}

func TestOneLineFoldsLibrarySearch(t *testing.T) {
	in := "CUDA driver (libcuda.so.1) not found; tried 2 candidate(s):\n  libcuda.so.1: no such file\n  /usr/lib64/libcuda.so.1: no such file\n(set DETGEMM_LIBCUDA)"
	require.Equal(t, "CUDA driver (libcuda.so.1) not found; tried 2 candidate(s): libcuda.so.1: no such file; /usr/lib64/libcuda.so.1: no such file; (set DETGEMM_LIBCUDA)", oneLine(in))
}
