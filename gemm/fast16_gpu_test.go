package gemm

import (
	"math"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/stretchr/testify/require"
)

// fast16Stats is check_fast16.cu's stats block.
type fast16Stats struct {
	mismatches, undecided, typical, first, worst uint32
}

// runFast16Check runs one of check_fast16.cu's kernels over every f32 input
// and returns its stats.
func runFast16Check(t *testing.T, ctx *cudaload.Context, fn *cudaload.Function, args func(a *cudaload.Args)) fast16Stats {
	t.Helper()
	stats := alloc(t, ctx, 5*4)
	require.NoError(t, cudaload.CopyToDevice(ctx, stats, []uint32{0, 0, 0, math.MaxUint32, 0}))
	var a cudaload.Args
	args(&a)
	a.Ptr(stats)
	// 2^18 threads: a power of two, so every lane of a warp runs the same
	// number of iterations (fast16's votes take the whole warp).
	require.NoError(t, fn.Launch(cudaload.LaunchConfig{Grid: cudaload.Dim3{X: 1024, Y: 1, Z: 1}, Block: cudaload.Dim3{X: 256, Y: 1, Z: 1}}, &a))
	require.NoError(t, ctx.Synchronize())
	got := make([]uint32, 5)
	require.NoError(t, cudaload.CopyFromDevice(ctx, got, stats))
	return fast16Stats{got[0], got[1], got[2], got[3], got[4]}
}

// TestFast16RoundsAsTheContract: fast16.cuh's rounding-test shortcut (the
// GeGLU forward into bf16, gated.cu's vector path) stores the contract's
// bits. Over every f32 input: the GELU approximation stays within half the
// bound the rounding test assumes (so the test is sound with a factor of
// two to spare on this GPU's ex2.approx and rcp.approx), and the stored
// code equals the contract's fl(a·gelu(b)) for every b and a set of a
// (signed zeros, infinities, NaN, tiny and huge factors among them). It
// also logs how often the shortcut leaves a value to the contract's
// sequence in the typical range 2^-4 <= |b| <= 4.
func TestFast16RoundsAsTheContract(t *testing.T) {
	eng, ctx := gpuEngine(t)
	function := func(name string) *cudaload.Function { return checkFunction(t, eng, ctx, "check_fast16", name) }

	t.Run("bound", func(t *testing.T) {
		s := runFast16Check(t, ctx, function("detgemm_check_fast16_bound"), func(*cudaload.Args) {})
		t.Logf("GELU: largest error %.3f of the bound", math.Float32frombits(s.worst))
		require.Zero(t, s.mismatches, "GELU: inputs over half the bound (first %#08x)", s.first)
	})
	t.Run("geglu", func(t *testing.T) {
		as := []float32{1, -1, 0.70710677, 1.2345678, -3.0e-3, 17.5, 0x1p-80, 60000, 0,
			float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.NaN()), 0x1p-20, -1.5e30, 15.9, -16}
		asP := alloc(t, ctx, uint64(4*len(as)))
		require.NoError(t, cudaload.CopyToDevice(ctx, asP, as))
		s := runFast16Check(t, ctx, function("detgemm_check_fast16_geglu"), func(a *cudaload.Args) {
			a.Ptr(asP).Int32(int32(len(as)))
		})
		t.Logf("%d of %d typical (a, b) left to the contract's sequence (%.3f %%; a includes Inf, NaN, 0, 2^-80 and -1.5e30)",
			s.undecided, s.typical, 100*float64(s.undecided)/float64(s.typical))
		require.Zero(t, s.mismatches, "first mismatch at b = %#08x", s.first)
		// A shortcut that never decided would pass the bits above and cost
		// the whole contract's sequence plus its own. Of the 16 values of a,
		// Inf and NaN always go to the sequence (12.5 % of the pairs) and
		// -1.5e30 mostly (its products pass 2^100); 13.6 % measured in all
		// (H100, 2026-12-06).
		require.NotZero(t, s.typical)
		require.Less(t, float64(s.undecided), 0.25*float64(s.typical),
			"the shortcut left %d of %d typical pairs to the contract's sequence", s.undecided, s.typical)
	})
}
