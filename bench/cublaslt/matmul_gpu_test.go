package cublaslt_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/bench/cublaslt"
	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/detgemm/detgemm/internal/gputest"
)

// gpuHandle returns a handle, a stream and a workspace in device 0's
// primary context, with the context current on the test's (locked) thread,
// or skips (fails under DETGEMM_REQUIRE_GPU=1, through gputest).
func gpuHandle(t *testing.T) (*cudaload.Context, *cudaload.Stream, *cublaslt.Handle) {
	ctx := gputest.Context(t)
	lib, err := cublaslt.Open()
	if errors.Is(err, cublaslt.ErrNotFound) {
		t.Skipf("no cuBLASLt: %v", err)
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
	t.Cleanup(func() { require.NoError(t, h.Destroy()) })
	t.Logf("cuBLASLt %s from %s", lib.VersionString(), lib.Path())
	return ctx, stream, h
}

// TestGELUAuxBiasMatchesFloat64 runs one small non-square bf16 product
// (M, K and N all different, so a swapped operand or leading dimension
// shows) with GELU_BIAS and with GELU_AUX_BIAS: D must be gelu(A·B + bias)
// within bf16 rounding, bias must run along D's columns, and the aux
// output must be the pre-activation A·B + bias.
func TestGELUAuxBiasMatchesFloat64(t *testing.T) {
	ctx, stream, h := gpuHandle(t)
	const m, k, n = 40, 64, 48 // n a multiple of 8: the aux leading dimension must be
	r := rand.New(rand.NewPCG(7, 8))
	a16, b16, bias16 := toBF16(randomMatrix(r, m*k)), toBF16(randomMatrix(r, k*n)), toBF16(randomMatrix(r, n))

	dA, dB, dBias := alloc(t, ctx, m*k*2), alloc(t, ctx, k*n*2), alloc(t, ctx, n*2)
	dD, dAux, ws := alloc(t, ctx, m*n*2), alloc(t, ctx, m*n*2), alloc(t, ctx, 4<<20)
	require.NoError(t, cudaload.CopyToDevice(ctx, dA, a16))
	require.NoError(t, cudaload.CopyToDevice(ctx, dB, b16))
	require.NoError(t, cudaload.CopyToDevice(ctx, dBias, bias16))

	a, b, bias := fromBF16(a16), fromBF16(b16), fromBF16(bias16)
	pre, scale := make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := bias[j]
			sc := math.Abs(bias[j])
			for p := 0; p < k; p++ {
				x := a[i*k+p] * b[p*n+j]
				s += x
				sc += math.Abs(x)
			}
			pre[i*n+j], scale[i*n+j] = s, sc
		}
	}

	for _, epi := range []cublaslt.Epilogue{cublaslt.EpilogueGELUBias, cublaslt.EpilogueGELUAuxBias} {
		require.NoError(t, ctx.MemsetD8(dD, 0xff, m*n*2)) // NaN in bf16: an unwritten element shows
		require.NoError(t, ctx.MemsetD8(dAux, 0xff, m*n*2))
		require.NoError(t, ctx.Synchronize()) // legacy-stream work done before the product's stream starts
		args := &cublaslt.MatmulArgs{M: m, K: k, N: n, A: uintptr(dA), B: uintptr(dB), In: cublaslt.R16BF,
			D: uintptr(dD), Out: cublaslt.R16BF, Epilogue: epi, Bias: uintptr(dBias),
			Workspace: uintptr(ws), WorkspaceBytes: 4 << 20, Stream: stream.Handle()}
		if epi.NeedsAux() {
			args.Aux, args.AuxLD = uintptr(dAux), n
		}
		require.NoError(t, h.Matmul(args), "%v", epi)
		require.NoError(t, h.Matmul(args), "%v: the second call reuses the plan", epi)
		require.NoError(t, stream.Synchronize())
		got := make([]uint16, m*n)
		require.NoError(t, cudaload.CopyFromDevice(ctx, got, dD))
		for i, g := range fromBF16(got) {
			want := gelu(pre[i])
			// bf16 rounding of the result (half an ulp, 2⁻⁸ relative) plus
			// the f32 accumulation error carried through gelu (|gelu'| < 1.13).
			tol := math.Abs(want)/256 + 1.2*(1e-5*scale[i]+math.Abs(pre[i])/256) + 1e-3
			require.False(t, math.IsNaN(g), "%v: element %d was not written", epi, i)
			require.LessOrEqual(t, math.Abs(g-want), tol, "%v: element %d (row %d, col %d): got %g, want %g", epi, i, i/n, i%n, g, want)
		}
		if !epi.NeedsAux() {
			continue
		}
		aux := make([]uint16, m*n)
		require.NoError(t, cudaload.CopyFromDevice(ctx, aux, dAux))
		for i, g := range fromBF16(aux) {
			require.False(t, math.IsNaN(g), "aux element %d was not written", i)
			require.LessOrEqual(t, math.Abs(g-pre[i]), math.Abs(pre[i])/256+1e-5*scale[i],
				"aux element %d (row %d, col %d) is the pre-activation: got %g, want %g", i, i/n, i%n, g, pre[i])
		}
	}
}

// TestLayoutsAndStridesMatchFloat64 runs one small non-square bf16
// product in every layout (nn, nt, tn, tt), dense and with padded rows
// (a leading dimension 8 elements past the row, so rows stay 16-byte
// aligned): D must be op(A)·op(B) within bf16 rounding, and the padding
// of D must stay as it was.
func TestLayoutsAndStridesMatchFloat64(t *testing.T) {
	ctx, stream, h := gpuHandle(t)
	const m, k, n, pad = 24, 40, 32, 8
	r := rand.New(rand.NewPCG(9, 10))
	// op(A)[i,p] and op(B)[p,j] as values; stored below per layout.
	a16, b16 := toBF16(randomMatrix(r, m*k)), toBF16(randomMatrix(r, k*n))
	a, b := fromBF16(a16), fromBF16(b16)
	want, scale := make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			for p := 0; p < k; p++ {
				want[i*n+j] += a[i*k+p] * b[p*n+j]
				scale[i*n+j] += math.Abs(a[i*k+p] * b[p*n+j])
			}
		}
	}
	ws := alloc(t, ctx, 4<<20)
	for _, layout := range []struct{ transA, transB, padded bool }{
		{false, false, false}, {false, true, false}, {true, false, false}, {true, true, false},
		{false, false, true}, {false, true, true}, {true, false, true}, {true, true, true},
	} {
		name := fmt.Sprintf("transA=%v transB=%v padded=%v", layout.transA, layout.transB, layout.padded)
		// Stored shapes: A is m×k (k×m with TransA), B k×n (n×k with TransB).
		aRows, aCols, bRows, bCols := m, k, k, n
		if layout.transA {
			aRows, aCols = k, m
		}
		if layout.transB {
			bRows, bCols = n, k
		}
		lda, ldb, ldd := aCols, bCols, n
		if layout.padded {
			lda, ldb, ldd = aCols+pad, bCols+pad, n+pad
		}
		sa, sb := make([]uint16, aRows*lda), make([]uint16, bRows*ldb)
		for i := 0; i < m; i++ {
			for p := 0; p < k; p++ {
				if layout.transA {
					sa[p*lda+i] = a16[i*k+p]
				} else {
					sa[i*lda+p] = a16[i*k+p]
				}
			}
		}
		for p := 0; p < k; p++ {
			for j := 0; j < n; j++ {
				if layout.transB {
					sb[j*ldb+p] = b16[p*n+j]
				} else {
					sb[p*ldb+j] = b16[p*n+j]
				}
			}
		}
		dA, dB, dD := alloc(t, ctx, uint64(len(sa))*2), alloc(t, ctx, uint64(len(sb))*2), alloc(t, ctx, uint64(m*ldd)*2)
		require.NoError(t, cudaload.CopyToDevice(ctx, dA, sa))
		require.NoError(t, cudaload.CopyToDevice(ctx, dB, sb))
		require.NoError(t, ctx.MemsetD8(dD, 0xff, uint64(m*ldd)*2)) // NaN: an unwritten element shows
		require.NoError(t, ctx.Synchronize())
		args := &cublaslt.MatmulArgs{M: m, K: k, N: n, A: uintptr(dA), B: uintptr(dB), TransA: layout.transA, TransB: layout.transB,
			In: cublaslt.R16BF, D: uintptr(dD), Out: cublaslt.R16BF, Workspace: uintptr(ws), WorkspaceBytes: 4 << 20, Stream: stream.Handle()}
		if layout.padded {
			args.LDA, args.LDB, args.LDD = lda, ldb, ldd
		}
		require.NoError(t, h.Matmul(args), name)
		require.NoError(t, stream.Synchronize())
		got16 := make([]uint16, m*ldd)
		require.NoError(t, cudaload.CopyFromDevice(ctx, got16, dD))
		got := fromBF16(got16)
		for i := 0; i < m; i++ {
			for j := 0; j < ldd; j++ {
				g := got[i*ldd+j]
				if j >= n {
					require.Equal(t, uint16(0xffff), got16[i*ldd+j], "%s: padding (%d, %d) was written", name, i, j)
					continue
				}
				w := want[i*n+j]
				require.LessOrEqual(t, math.Abs(g-w), math.Abs(w)/256+1e-5*scale[i*n+j]+1e-6, "%s: (%d, %d): got %g, want %g", name, i, j, g, w)
			}
		}
	}
}

// TestFP8TNMatchesFloat64 runs one small non-square fp8 product (E4M3 ×
// E4M3 → bf16, M, K and N all different, so a swapped operand, leading
// dimension or layout shows) in the one form cuBLASLt's fp8 kernels take:
// A stored M×K, B stored N×K, D[M,N] = ScaleA·ScaleB·A·Bᵀ, with and
// without fast accumulation. The codes are exact small values, so the
// only error is the accumulation's and bf16's rounding of D.
func TestFP8TNMatchesFloat64(t *testing.T) {
	ctx, stream, h := gpuHandle(t)
	const m, k, n = 48, 96, 32 // multiples of 16: fp8 rows of whole 16-byte units
	const sa, sb = 0.5, 3.0
	r := rand.New(rand.NewPCG(11, 12))
	// E4M3 codes of ±2^e·(1 + f/8), e in [-3, 3]: exact, never NaN.
	code := func() uint8 {
		return uint8(r.IntN(2))<<7 | uint8(7-3+r.IntN(7))<<3 | uint8(r.IntN(8))
	}
	a8, b8 := make([]uint8, m*k), make([]uint8, n*k)
	for i := range a8 {
		a8[i] = code()
	}
	for i := range b8 {
		b8[i] = code()
	}
	want, scale := make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			for p := 0; p < k; p++ {
				x := float64(ref.FP8Decode(ref.E4M3, a8[i*k+p])) * float64(ref.FP8Decode(ref.E4M3, b8[j*k+p]))
				want[i*n+j] += sa * sb * x
				scale[i*n+j] += sa * sb * math.Abs(x)
			}
		}
	}
	dA, dB, dD := alloc(t, ctx, m*k), alloc(t, ctx, n*k), alloc(t, ctx, m*n*2)
	dSA, dSB, ws := alloc(t, ctx, 4), alloc(t, ctx, 4), alloc(t, ctx, 4<<20)
	require.NoError(t, cudaload.CopyToDevice(ctx, dA, a8))
	require.NoError(t, cudaload.CopyToDevice(ctx, dB, b8))
	require.NoError(t, cudaload.CopyToDevice(ctx, dSA, []float32{sa}))
	require.NoError(t, cudaload.CopyToDevice(ctx, dSB, []float32{sb}))
	for _, fast := range []bool{false, true} {
		require.NoError(t, ctx.MemsetD8(dD, 0xff, m*n*2)) // NaN in bf16: an unwritten element shows
		require.NoError(t, ctx.Synchronize())
		args := &cublaslt.MatmulArgs{M: m, K: k, N: n, A: uintptr(dA), B: uintptr(dB), TransB: true, In: cublaslt.R8FE4M3,
			D: uintptr(dD), Out: cublaslt.R16BF, ScaleA: uintptr(dSA), ScaleB: uintptr(dSB), FastAccum: fast,
			Workspace: uintptr(ws), WorkspaceBytes: 4 << 20, Stream: stream.Handle()}
		err := h.Matmul(args)
		if errors.Is(err, cublaslt.StatusNotSupported) {
			t.Skipf("this GPU or cuBLASLt has no fp8 product: %v", err)
		}
		require.NoError(t, err, "fast=%v", fast)
		require.NoError(t, stream.Synchronize())
		got16 := make([]uint16, m*n)
		require.NoError(t, cudaload.CopyFromDevice(ctx, got16, dD))
		for i, g := range fromBF16(got16) {
			// bf16 rounding of D, plus the accumulation's (fast: the
			// tensor cores' partial sums of about 14 significant bits).
			tol := math.Abs(want[i])/256 + scale[i]/2048 + 1e-6
			require.False(t, math.IsNaN(g), "fast=%v: element %d was not written", fast, i)
			require.LessOrEqual(t, math.Abs(g-want[i]), tol, "fast=%v: (%d, %d): got %g, want %g", fast, i/n, i%n, g, want[i])
		}
	}
	bad := &cublaslt.MatmulArgs{M: m, K: k, N: n, A: uintptr(dA), B: uintptr(dB), In: cublaslt.R8FE4M3, D: uintptr(dD), Out: cublaslt.R16BF,
		Workspace: uintptr(ws), WorkspaceBytes: 4 << 20, Stream: stream.Handle()}
	require.ErrorIs(t, h.Matmul(bad), cublaslt.ErrInvalidArgument, "NN is refused before cuBLASLt is called")
}

// gelu is the tanh approximation cuBLASLt's GELU epilogues compute.
func gelu(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

func alloc(t *testing.T, ctx *cudaload.Context, bytes uint64) cudaload.DevicePtr {
	p, err := ctx.MemAlloc(bytes)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ctx.MemFree(p) })
	return p
}

func randomMatrix(r *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = 2*r.Float32() - 1
	}
	return out
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
