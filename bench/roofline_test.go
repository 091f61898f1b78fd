package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRooflineMemoryBound(t *testing.T) {
	// 1x4096x4096 bf16 moves (4096 + 4096·4096 + 4096)·2 bytes; at 4 TB/s
	// that takes 8.3928 µs, far above 33.5 MFLOP at 989 TFLOP/s.
	s := shape{1, 4096, 4096}
	bytes := float64((4096 + 4096*4096 + 4096) * 2)
	require.Equal(t, int64(bytes), gemmBytes(s, bf16))
	r := rooflineOf(s, bf16, 16.7856, 4e12, 989, "bf16 tensor")
	require.InDelta(t, bytes/4e12*1e6, r.MemoryUS, 1e-9)
	require.Equal(t, "memory", r.Bound)
	require.Equal(t, r.MemoryUS, r.FloorUS)
	require.InDelta(t, 0.5, r.Fraction, 1e-4)
	require.InDelta(t, r.Fraction, r.MemoryFraction, 1e-12)
	require.Less(t, r.PeakFraction, r.MemoryFraction)
}

func TestRooflineComputeBound(t *testing.T) {
	s := shape{8192, 8192, 8192}
	flopUS := s.FLOPs() / 989e12 * 1e6 // about 1111.8 µs
	r := rooflineOf(s, bf16, 2*flopUS, 4e12, 989, "bf16 tensor")
	require.Equal(t, "bf16 tensor", r.Bound)
	require.InDelta(t, flopUS, r.ComputeUS, 1e-6)
	require.InDelta(t, 0.5, r.Fraction, 1e-9)
	require.InDelta(t, 0.5, r.PeakFraction, 1e-9)
}

func TestRooflineWithoutPeakUsesMemoryOnly(t *testing.T) {
	r := rooflineOf(shape{8192, 8192, 8192}, f32, 1e6, 4e12, 0, "")
	require.Zero(t, r.ComputeUS)
	require.Equal(t, "memory", r.Bound)
	require.Zero(t, r.PeakFraction)
	require.InDelta(t, r.MemoryUS/1e6, r.Fraction, 1e-12)
}

func TestTFLOPS(t *testing.T) {
	require.InDelta(t, 1.0, tflops(shape{1000, 1000, 500}, 1000), 1e-12) // 1e9 FLOP in 1 ms
	require.Zero(t, tflops(shape{1, 1, 1}, 0))
}

func TestLookupPeaksByDriverName(t *testing.T) {
	for _, tc := range []struct {
		name string
		gpu  string // "" for none
	}{
		{"NVIDIA H200", "H200 SXM"},
		{"NVIDIA H100 80GB HBM3", "H100 SXM"},
		{"NVIDIA H100 SXM5 80GB", "H100 SXM"},
		{"NVIDIA H100 PCIe", ""},
		{"NVIDIA H100 NVL", ""},
		{"NVIDIA H200 NVL", ""},
		{"NVIDIA GeForce RTX 4090", ""},
	} {
		p, ok := lookupPeaks(tc.name)
		require.Equal(t, tc.gpu != "", ok, tc.name)
		require.Equal(t, tc.gpu, p.GPU, tc.name)
	}
	p, _ := lookupPeaks("NVIDIA H200")
	require.Equal(t, peaks{GPU: "H200 SXM", BF16: 989, F16: 989, TF32: 494, F32: 67, FP8: 1979}, p)
}

func TestPeakForPicksTheUnitThatRuns(t *testing.T) {
	p := peaks{BF16: 1, F16: 2, TF32: 3, F32: 4}
	for _, tc := range []struct {
		dt   dtype
		mode string
		want float64
		unit string
	}{
		{bf16, modeDefault, 1, "bf16 tensor"},
		{bf16, modePedantic, 1, "bf16 tensor"},
		{f16, modeDefault, 2, "f16 tensor"},
		{f32, modeTF32, 3, "tf32 tensor"},
		{f32, modeDefault, 4, "f32 FMA"},
		{f32, modePedantic, 4, "f32 FMA"},
		{bf16, modeFwd, 4, "f32 FMA"},
		{bf16, modeTCFwd, 1, "bf16 tensor"},
		{f16, modeTCDW, 2, "f16 tensor"},
	} {
		got, unit := p.peakFor(tc.dt, tc.mode)
		require.Equal(t, tc.want, got, "%s %s", tc.dt, tc.mode)
		require.Equal(t, tc.unit, unit)
	}
}
