package cublas_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/bench/cublas"
	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/internal/gputest"
)

// gpuHandle returns a handle on a new stream in device 0's primary context,
// with the context current on the test's (locked) thread, or skips.
func gpuHandle(t *testing.T) (*cudaload.Context, *cudaload.Stream, *cublas.Handle) {
	ctx := gputest.Context(t)
	lib, err := cublas.Open()
	if errors.Is(err, cublas.ErrNotFound) {
		t.Skipf("no cuBLAS: %v", err)
	}
	require.NoError(t, err)
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	require.NoError(t, ctx.Synchronize()) // leaves the context current on this thread
	stream, err := ctx.NewStream()
	require.NoError(t, err)
	t.Cleanup(func() { _ = stream.Close() })
	h, err := lib.Create()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Destroy()) }) // before the stream closes
	require.NoError(t, h.SetStream(stream.Handle()))

	v, err := h.Version()
	require.NoError(t, err)
	major, minor, _, err := lib.Version()
	if err == nil {
		require.Equal(t, major, v/10000, "handle and library agree on the version")
		require.Equal(t, minor, v%10000/100)
	}
	t.Logf("cuBLAS %d from %s", v, lib.Path())
	return ctx, stream, h
}

// product returns C = A·B (row-major) in float64 and, per element, Σ|a·b|,
// the scale that bounds the rounding error of any summation order.
func product(a, b []float64, m, k, n int) (c, scale []float64) {
	c, scale = make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			for p := 0; p < k; p++ {
				x := a[i*k+p] * b[p*n+j]
				c[i*n+j] += x
				scale[i*n+j] += math.Abs(x)
			}
		}
	}
	return c, scale
}

func randomMatrix(r *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = 2*r.Float32() - 1
	}
	return out
}

func widen(in []float32) []float64 {
	out := make([]float64, len(in))
	for i, v := range in {
		out[i] = float64(v)
	}
	return out
}

// TestRowMajorGemmF32PedanticMatchesCPU runs a non-square row-major GEMM
// (M, K and N all different, so a swapped operand or leading dimension
// shows) with pedantic f32 math into a NaN-poisoned output.
func TestRowMajorGemmF32PedanticMatchesCPU(t *testing.T) {
	ctx, stream, h := gpuHandle(t)
	const m, k, n = 64, 48, 80
	r := rand.New(rand.NewPCG(3, 4))
	a, b := randomMatrix(r, m*k), randomMatrix(r, k*n)

	dA, dB, dC := alloc(t, ctx, m*k*4), alloc(t, ctx, k*n*4), alloc(t, ctx, m*n*4)
	require.NoError(t, cudaload.CopyToDevice(ctx, dA, a))
	require.NoError(t, cudaload.CopyToDevice(ctx, dB, b))
	require.NoError(t, ctx.MemsetD32(dC, 0x7fc00000, m*n)) // NaN: an unwritten element shows
	require.NoError(t, ctx.Synchronize())                  // legacy-stream work done before the GEMM's stream starts

	require.NoError(t, h.SetMathMode(cublas.PedanticMath))
	require.NoError(t, h.RowMajorGemm(m, k, n, uintptr(dA), uintptr(dB), uintptr(dC), cublas.R32F, cublas.Compute32FPedantic, cublas.GemmDefault))
	require.NoError(t, stream.Synchronize())
	got := make([]float32, m*n)
	require.NoError(t, cudaload.CopyFromDevice(ctx, got, dC))

	want, scale := product(widen(a), widen(b), m, k, n)
	for i := range got {
		require.False(t, math.IsNaN(float64(got[i])), "element %d (row %d, col %d) was not written", i, i/n, i%n)
		require.LessOrEqual(t, math.Abs(float64(got[i])-want[i]), 1e-5*scale[i],
			"element %d (row %d, col %d): got %g, want %g", i, i/n, i%n, got[i], want[i])
	}
}

// TestRowMajorGemmBF16DefaultMatchesCPU checks the bf16 type codes and the
// default (tensor-core) path: the result, rounded once to bf16, is within
// half a bf16 ulp of the exact product plus f32 accumulation error.
func TestRowMajorGemmBF16DefaultMatchesCPU(t *testing.T) {
	ctx, stream, h := gpuHandle(t)
	const m, k, n = 40, 64, 24
	r := rand.New(rand.NewPCG(5, 6))
	a16, b16 := toBF16(randomMatrix(r, m*k)), toBF16(randomMatrix(r, k*n))

	dA, dB, dC := alloc(t, ctx, m*k*2), alloc(t, ctx, k*n*2), alloc(t, ctx, m*n*2)
	require.NoError(t, cudaload.CopyToDevice(ctx, dA, a16))
	require.NoError(t, cudaload.CopyToDevice(ctx, dB, b16))
	require.NoError(t, ctx.MemsetD8(dC, 0xff, m*n*2)) // NaN in bf16
	require.NoError(t, ctx.Synchronize())

	require.NoError(t, h.SetMathMode(cublas.DefaultMath))
	require.NoError(t, h.RowMajorGemm(m, k, n, uintptr(dA), uintptr(dB), uintptr(dC), cublas.R16BF, cublas.Compute32F, cublas.GemmDefault))
	require.NoError(t, stream.Synchronize())
	got := make([]uint16, m*n)
	require.NoError(t, cudaload.CopyFromDevice(ctx, got, dC))

	want, scale := product(fromBF16(a16), fromBF16(b16), m, k, n)
	for i, g := range fromBF16(got) {
		require.False(t, math.IsNaN(g), "element %d was not written", i)
		require.LessOrEqual(t, math.Abs(g-want[i]), math.Abs(want[i])/256+1e-5*scale[i],
			"element %d (row %d, col %d): got %g, want %g", i, i/n, i%n, g, want[i])
	}
}

func alloc(t *testing.T, ctx *cudaload.Context, bytes uint64) cudaload.DevicePtr {
	p, err := ctx.MemAlloc(bytes)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ctx.MemFree(p) })
	return p
}

// toBF16 rounds to nearest even (the inputs here are finite).
func toBF16(in []float32) []uint16 {
	out := make([]uint16, len(in))
	for i, v := range in {
		b := math.Float32bits(v)
		out[i] = uint16((b + 0x7fff + (b>>16)&1) >> 16)
	}
	return out
}

func fromBF16(in []uint16) []float64 {
	out := make([]float64, len(in))
	for i, v := range in {
		out[i] = float64(math.Float32frombits(uint32(v) << 16))
	}
	return out
}
