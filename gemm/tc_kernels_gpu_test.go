package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/detgemm/detgemm/kernels"
	"github.com/stretchr/testify/require"
)

// tcTile describes one tensor-core tile family of gemm_tc.cu.
type tcTile struct {
	name           string // "tc128", "tc64"
	bm, bn, thread int
}

var tcTiles = []tcTile{{"tc128", 128, 128, 256}, {"tc64", 64, 64, 128}}

// tcSmemBytes mirrors tc::Tile::smem_bytes: four stages of A and B tiles of
// depth 32, each row padded by 8 halves.
func tcSmemBytes(t tcTile, l layout) uint32 {
	const bk, pad, stages = 32, 8, 4
	aRC, bJC := l != layoutTN, l != layoutNT
	a := bk * (t.bm + pad)
	if aRC {
		a = t.bm * (bk + pad)
	}
	b := t.bn * (bk + pad)
	if bJC {
		b = bk * (t.bn + pad)
	}
	return uint32(stages * (a + b) * 2)
}

// TestTCKernelsMatchHopperModel launches every tensor-core kernel directly
// (each tile family, layout, type and load path) and compares its bits with
// the CPU model of Hopper's tensor cores.
func TestTCKernelsMatchHopperModel(t *testing.T) {
	eng, ctx := gpuEngine(t)
	if eng.Arch().Major != 9 {
		t.Skipf("the tensor-core model is verified for sm_90; this GPU is %v", eng.Arch())
	}
	b, err := kernels.Build(eng.Arch())
	require.NoError(t, err)
	mod, err := ctx.LoadModule(b.Modules["gemm_tc"].CUBIN)
	require.NoError(t, err)
	defer mod.Close()
	r := newRand(t)

	shapes := [][3]int{{1, 16, 8}, {3, 17, 5}, {64, 64, 64}, {130, 200, 72}, {257, 1000, 129}, {16, 4096, 40}, {200, 33, 300}}
	for _, tile := range tcTiles {
		for _, l := range []layout{layoutNN, layoutNT, layoutTN} {
			for _, d := range []DType{BF16, F16} {
				outs := []DType{d, F32}
				if l == layoutTN {
					outs = []DType{F32}
				}
				for _, out := range outs {
					for _, vec := range []bool{true, false} {
						for _, s := range shapes {
							name := fmt.Sprintf("%s_%v_%v_%v_vec=%v/%dx%dx%d", tile.name, l, d, out, vec, s[0], s[1], s[2])
							t.Run(name, func(t *testing.T) {
								if vec && (s[1]%8 != 0 || s[2]%8 != 0) {
									t.Skip("the 16-byte path needs leading dimensions that are multiples of 8")
								}
								runTCKernel(t, ctx, mod, r, tile, l, d, out, vec, s)
							})
						}
					}
				}
			}
		}
	}
}

// runTCKernel: (a, r, b) is (M, K, N) for nn and tn (dW[K,N] += Xᵀ[K,M]·dY[M,N]
// reads a=M as the reduction) and (M, N, K) for nt, as in the sweep.
func runTCKernel(t *testing.T, ctx *cudaload.Context, mod *cudaload.Module, r *rand.Rand, tile tcTile, l layout, d, out DType, vec bool, s [3]int) {
	suffix := "any"
	if vec {
		suffix = "vec"
	}
	fn, err := mod.Function(fmt.Sprintf("detgemm_%s_%v_%v_%v_%s", tile.name, l, d, out, suffix))
	require.NoError(t, err)
	smem := tcSmemBytes(tile, l)
	require.NoError(t, fn.SetMaxDynamicSharedMemory(int(smem)))

	var p problem
	var want []float32
	var c cudaload.DevicePtr
	switch l {
	case layoutNN:
		M, K, N := s[0], s[1], s[2]
		x, w, bias := randomOperand(r, d, M*K), randomOperand(r, d, K*N), randomOperand(r, F32, N)
		c = poisoned(t, ctx, uint64(M*N*out.Size()))
		p = problem{rows: int64(M), cols: int64(N), red: int64(K), a: uintptr(upload(t, ctx, x)), b: uintptr(upload(t, ctx, w)),
			bias: uintptr(upload(t, ctx, bias)), lda: int64(K), ldb: int64(N), ldc: int64(N)}
		want = make([]float32, M*N)
		require.NoError(t, ref.TCForward(ref.Hopper, d, want, x.values, w.values, bias.values, M, K, N))
	case layoutNT:
		M, N, K := s[0], s[1], s[2]
		dy, w := randomOperand(r, d, M*N), randomOperand(r, d, K*N)
		c = poisoned(t, ctx, uint64(M*K*out.Size()))
		p = problem{rows: int64(M), cols: int64(K), red: int64(N), a: uintptr(upload(t, ctx, dy)), b: uintptr(upload(t, ctx, w)),
			lda: int64(N), ldb: int64(N), ldc: int64(K)}
		want = make([]float32, M*K)
		require.NoError(t, ref.TCDX(ref.Hopper, d, want, dy.values, w.values, M, N, K))
	default:
		M, K, N := s[0], s[1], s[2]
		x, dy, dw0 := randomOperand(r, d, M*K), randomOperand(r, d, M*N), randomOperand(r, F32, K*N)
		c = upload(t, ctx, dw0)
		p = problem{rows: int64(K), cols: int64(N), red: int64(M), a: uintptr(upload(t, ctx, x)), b: uintptr(upload(t, ctx, dy)),
			lda: int64(K), ldb: int64(N), ldc: int64(N)}
		want = append([]float32(nil), dw0.values...)
		require.NoError(t, ref.TCDW(ref.Hopper, d, want, x.values, dy.values, M, K, N))
	}
	var a cudaload.Args
	a.Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(c).Ptr(cudaload.DevicePtr(p.bias)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb).Int64(p.ldc)
	cfg := cudaload.LaunchConfig{
		Grid:           cudaload.Dim3{X: uint32((p.rows + int64(tile.bm) - 1) / int64(tile.bm)), Y: uint32((p.cols + int64(tile.bn) - 1) / int64(tile.bn)), Z: 1},
		Block:          cudaload.Dim3{X: uint32(tile.thread), Y: 1, Z: 1},
		SharedMemBytes: smem,
	}
	require.NoError(t, fn.Launch(cfg, &a))
	require.NoError(t, ctx.Synchronize())
	n := int(p.rows * p.cols)
	got := make([]uint32, n)
	if out.Half() {
		h := make([]uint16, n)
		require.NoError(t, cudaload.CopyFromDevice(ctx, h, c))
		for i, v := range h {
			got[i] = uint32(v)
		}
	} else {
		require.NoError(t, cudaload.CopyFromDevice(ctx, got, c))
	}
	requireSameBits(t, refBits(out, want), got, int(p.cols), t.Name())
}

// TestTCKernelsAdversarialInputs: wide exponent spreads inside one 16-wide
// step, cancellation, subnormals and store ties, on the 128 and 64 tiles.
func TestTCKernelsAdversarialInputs(t *testing.T) {
	eng, ctx := gpuEngine(t)
	if eng.Arch().Major != 9 {
		t.Skipf("the tensor-core model is verified for sm_90; this GPU is %v", eng.Arch())
	}
	b, err := kernels.Build(eng.Arch())
	require.NoError(t, err)
	mod, err := ctx.LoadModule(b.Modules["gemm_tc"].CUBIN)
	require.NoError(t, err)
	defer mod.Close()
	r := newRand(t)
	const M, K, N = 96, 256, 80
	for _, d := range []DType{BF16, F16} {
		for _, kind := range []string{"spread", "cancel", "subnormal"} {
			x, w := make([]float32, M*K), make([]float32, K*N)
			fill := func(v []float32) {
				for i := range v {
					u := r.Float64()*2 - 1
					switch kind {
					case "spread": // up to ±30 binades inside each step (f16 has fewer)
						span := 60
						if d == F16 {
							span = 24
						}
						v[i] = float32(math.Ldexp(u, r.IntN(span)-span/2))
					case "cancel": // pairs of nearly equal and opposite terms
						v[i] = float32(u)
						if i%2 == 1 {
							v[i] = -v[i-1] * float32(1+math.Ldexp(1, -8))
						}
					default: // the input format's subnormals mixed with normals
						e := -130
						if d == F16 {
							e = -20
						}
						v[i] = float32(math.Ldexp(u, e+r.IntN(8)))
					}
				}
			}
			fill(x)
			fill(w)
			xo, wo := fromValues(d, x), fromValues(d, w)
			want := make([]float32, M*N)
			require.NoError(t, ref.TCForward(ref.Hopper, d, want, xo.values, wo.values, nil, M, K, N))
			for _, tile := range tcTiles {
				fn, err := mod.Function(fmt.Sprintf("detgemm_%s_nn_%v_f32_vec", tile.name, d))
				require.NoError(t, err)
				smem := tcSmemBytes(tile, layoutNN)
				require.NoError(t, fn.SetMaxDynamicSharedMemory(int(smem)))
				y := poisoned(t, ctx, M*N*4)
				var a cudaload.Args
				a.Ptr(upload(t, ctx, xo)).Ptr(upload(t, ctx, wo)).Ptr(y).Ptr(0).Int64(M).Int64(N).Int64(K).Int64(K).Int64(N).Int64(N)
				require.NoError(t, fn.Launch(cudaload.LaunchConfig{
					Grid:  cudaload.Dim3{X: uint32((M + tile.bm - 1) / tile.bm), Y: uint32((N + tile.bn - 1) / tile.bn), Z: 1},
					Block: cudaload.Dim3{X: uint32(tile.thread), Y: 1, Z: 1}, SharedMemBytes: smem}, &a))
				require.NoError(t, ctx.Synchronize())
				got := make([]uint32, M*N)
				require.NoError(t, cudaload.CopyFromDevice(ctx, got, y))
				requireSameBits(t, refBits(F32, want), got, N, fmt.Sprintf("%s %v %s", tile.name, d, kind))
			}
		}
	}
}
