package gemm

import (
	"math"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/kernels"
	"github.com/stretchr/testify/require"
)

// TestUtilConversionKernelsMatchReference runs the prelude's conversions on
// the GPU (through the util family) against the CPU reference: narrowing on
// f32 patterns around every rounding boundary, widening on all 65536 codes.
func TestUtilConversionKernelsMatchReference(t *testing.T) {
	eng, ctx := gpuEngine(t)
	b, err := kernels.Build(eng.Arch())
	require.NoError(t, err)
	mod, err := ctx.LoadModule(b.Modules["util"].CUBIN)
	require.NoError(t, err)
	defer mod.Close()
	launch := func(name string, in, out cudaload.DevicePtr, n int) {
		fn, err := mod.Function(name)
		require.NoError(t, err)
		var a cudaload.Args
		a.Ptr(in).Ptr(out).Uint64(uint64(n))
		require.NoError(t, fn.Launch(cudaload.LaunchConfig{Grid: cudaload.Dim3{X: 256, Y: 1, Z: 1}, Block: cudaload.Dim3{X: 256, Y: 1, Z: 1}}, &a))
		require.NoError(t, ctx.Synchronize())
	}

	// Narrowing: every f32 exponent with mantissas at and around the bf16
	// and f16 rounding points, both signs, plus NaNs and infinities.
	var pats []uint32
	for e := uint32(0); e < 256; e++ {
		for _, m := range []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0x18000, 0xfff, 0x1000, 0x1001, 0x3000, 0x7fffff, 0x400000, 0x3fffff} {
			pats = append(pats, e<<23|m, 0x80000000|e<<23|m)
		}
	}
	in := make([]float32, len(pats))
	for i, p := range pats {
		in[i] = math.Float32frombits(p)
	}
	inP := upload(t, ctx, operand{d: F32, values: in})
	for _, c := range []struct {
		kernel string
		d      DType
	}{{"detgemm_f32_to_bf16_rne", BF16}, {"detgemm_f32_to_f16_rne", F16}} {
		outP := poisoned(t, ctx, uint64(2*len(in)))
		launch(c.kernel, inP, outP, len(in))
		got := make([]uint16, len(in))
		require.NoError(t, cudaload.CopyFromDevice(ctx, got, outP))
		for i, x := range in {
			require.Equal(t, c.d.FromF32(x), got[i], "%s(%#08x)", c.kernel, pats[i])
		}
	}

	// Widening: all codes. The GPU keeps a NaN's payload where the
	// reference canonicalises; both must be NaN.
	codes := make([]uint16, 1<<16)
	for i := range codes {
		codes[i] = uint16(i)
	}
	codesP := alloc(t, ctx, 2<<16)
	require.NoError(t, cudaload.CopyToDevice(ctx, codesP, codes))
	for _, c := range []struct {
		kernel string
		d      DType
	}{{"detgemm_bf16_to_f32", BF16}, {"detgemm_f16_to_f32", F16}} {
		outP := poisoned(t, ctx, 4<<16)
		launch(c.kernel, codesP, outP, len(codes))
		got := make([]float32, len(codes))
		require.NoError(t, cudaload.CopyFromDevice(ctx, got, outP))
		for i, h := range codes {
			want := c.d.ToF32(h)
			if want != want {
				require.True(t, got[i] != got[i], "%s(%#04x) is NaN", c.kernel, h)
				continue
			}
			require.Equal(t, math.Float32bits(want), math.Float32bits(got[i]), "%s(%#04x)", c.kernel, h)
		}
	}
}
