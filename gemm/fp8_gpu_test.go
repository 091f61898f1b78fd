package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/detgemm/detgemm/internal/gputest"
	"github.com/detgemm/detgemm/kernels"
	"github.com/detgemm/detgemm/nvrtc"
	"github.com/stretchr/testify/require"
)

// fp8Codes draws n codes of type d: every finite code (zeros, subnormals,
// the largest), with NaN (and E5M2's ±Inf) where specials is set.
func fp8Codes(r *rand.Rand, d DType, n int, specials bool) []uint8 {
	c := make([]uint8, n)
	for i := range c {
		for {
			v := uint8(r.UintN(256))
			if r.IntN(9) == 0 {
				v = 0
			}
			x := ref.FP8Decode(d, v)
			if specials && r.IntN(503) == 0 {
				c[i] = v | 0x7c // NaN or ±Inf (E5M2), NaN-ish (E4M3: 0x7F/0xFF when the low bits are set)
				if d == E4M3 {
					c[i] = 0x7f | v&0x80
				}
				break
			}
			if x == x && !math.IsInf(float64(x), 0) {
				c[i] = v
				break
			}
		}
	}
	return c
}

// fp8Scales draws n positive scales over a few binades.
func fp8Scales(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.Ldexp(1+r.Float64(), r.IntN(17)-8))
	}
	return s
}

type fp8Case struct {
	M, N, K          int
	padA, padB, padD int
	a, b, out        DType
	scaling          FP8Scaling
	accum            FP8Accum
	ep               Epilogue
	specials         bool
}

func (c fp8Case) String() string {
	return fmt.Sprintf("%dx%dx%d %v×%v→%v %v %v %v pad %d/%d/%d", c.M, c.N, c.K, c.a, c.b, c.out, c.scaling, c.accum, c.ep, c.padA, c.padB, c.padD)
}

// fp8Inputs is one case's data on the host and the device.
type fp8Inputs struct {
	a, b             []uint8
	sa, sb, bias     []float32
	sd               float32
	dA, dB, dSA, dSB cudaload.DevicePtr
	dBias, dSD       cudaload.DevicePtr
	lda, ldb, ldd    int
	saLen, sbLen, kb int
}

func newFP8Inputs(t *testing.T, ctx *cudaload.Context, r *rand.Rand, c fp8Case) *fp8Inputs {
	t.Helper()
	in := &fp8Inputs{lda: c.K + c.padA, ldb: c.K + c.padB, ldd: c.N + c.padD, kb: (c.K + 127) / 128}
	in.a = fp8Codes(r, c.a, max(c.M, 1)*in.lda, c.specials)
	in.b = fp8Codes(r, c.b, c.N*in.ldb, c.specials)
	switch c.scaling {
	case ScaleTensor:
		in.saLen, in.sbLen = 1, 1
	case ScaleRow:
		in.saLen, in.sbLen = max(c.M, 1), c.N
	case ScaleBlock:
		in.saLen, in.sbLen = max(c.M, 1)*in.kb, (c.N+127)/128*in.kb
	}
	in.sa, in.sb = fp8Scales(r, in.saLen), fp8Scales(r, in.sbLen)
	in.bias = make([]float32, c.N)
	for i := range in.bias {
		in.bias[i] = float32(r.NormFloat64() * 4)
	}
	in.sd = float32(math.Ldexp(1+r.Float64(), r.IntN(5)-4))
	in.dA = alloc(t, ctx, uint64(len(in.a)))
	require.NoError(t, cudaload.CopyToDevice(ctx, in.dA, in.a))
	in.dB = alloc(t, ctx, uint64(len(in.b)))
	require.NoError(t, cudaload.CopyToDevice(ctx, in.dB, in.b))
	in.dSA = upload(t, ctx, operand{d: F32, values: in.sa})
	in.dSB = upload(t, ctx, operand{d: F32, values: in.sb})
	in.dBias = upload(t, ctx, operand{d: F32, values: in.bias})
	in.dSD = upload(t, ctx, operand{d: F32, values: []float32{in.sd}})
	return in
}

// fp8Want is gemm/ref's result of c on in for rows [lo, hi): D's bits (a
// byte, a 16-bit pattern or an f32 pattern an element, ldd apart) and the
// amax (fp8 outputs).
func fp8Want(t *testing.T, c fp8Case, in *fp8Inputs, lo, hi int) ([]uint32, uint32) {
	t.Helper()
	rows := hi - lo
	req := ref.FP8MatmulRequest{A: c.a, B: c.b, Out: c.out, M: c.M, N: c.N, K: c.K,
		AData: in.a, LDA: in.lda, BData: in.b, LDB: in.ldb, Scaling: c.scaling, ScaleA: in.sa, ScaleB: in.sb,
		Accum: c.accum, Epilogue: c.ep, LDD: c.N}
	if fp8Spec[c.ep].bias {
		req.Bias = in.bias
	}
	var amax float32
	var f32 []float32
	var h []uint16
	switch {
	case c.out.FP8():
		req.D8 = make([]uint8, rows*c.N)
		req.ScaleD, req.Amax = in.sd, &amax
	case c.out == F32:
		f32 = make([]float32, rows*c.N)
		req.D = ref.Values(f32)
	default:
		h = make([]uint16, rows*c.N)
		req.D = ref.Bits(h)
	}
	o := ref.Options{Rows: ref.Span{Lo: lo, Hi: hi}}
	if lo == 0 && hi == c.M {
		o.Rows = ref.Span{}
	}
	require.NoError(t, o.FP8Matmul(req), c.String())
	out := make([]uint32, rows*c.N)
	for i := range out {
		switch {
		case c.out.FP8():
			out[i] = uint32(req.D8[i])
		case c.out == F32:
			out[i] = math.Float32bits(f32[i])
		default:
			out[i] = uint32(h[i])
		}
	}
	return out, math.Float32bits(amax)
}

// fp8Run runs c on the GPU over rows [lo, hi) of in (D poisoned first) and
// returns D's bits, tight (N a row), and the amax bits.
func fp8Run(t *testing.T, eng *Engine, ctx *cudaload.Context, c fp8Case, in *fp8Inputs, lo, hi int) ([]uint32, uint32) {
	t.Helper()
	rows := hi - lo
	d := FP8Desc{A: c.a, B: c.b, Out: c.out, M: rows, N: c.N, K: c.K, LDA: in.lda, LDB: in.ldb, LDD: in.ldd,
		Scaling: c.scaling, Accum: c.accum, Epilogue: c.ep}
	osz := c.out.Size()
	dD := poisoned(t, ctx, uint64(max(rows, 1)*in.ldd*osz))
	args := FP8Args{A: in.dA + cudaload.DevicePtr(lo*in.lda), B: in.dB, D: dD, ScaleA: in.dSA, ScaleB: in.dSB}
	switch c.scaling {
	case ScaleRow:
		args.ScaleA += cudaload.DevicePtr(4 * lo)
	case ScaleBlock:
		args.ScaleA += cudaload.DevicePtr(4 * lo * in.kb)
	}
	if fp8Spec[c.ep].bias {
		args.Bias = in.dBias
	}
	var dAmax cudaload.DevicePtr
	if c.out.FP8() {
		dAmax = poisoned(t, ctx, 4)
		args.ScaleD, args.Amax = in.dSD, dAmax
	}
	require.NoError(t, eng.FP8Matmul(d, args), c.String())
	require.NoError(t, eng.Synchronize())
	got := make([]uint32, rows*c.N)
	raw := make([]uint8, max(rows, 1)*in.ldd*osz)
	require.NoError(t, cudaload.CopyFromDevice(ctx, raw, dD))
	for i := 0; i < rows; i++ {
		for j := 0; j < c.N; j++ {
			o := (i*in.ldd + j) * osz
			switch osz {
			case 1:
				got[i*c.N+j] = uint32(raw[o])
			case 2:
				got[i*c.N+j] = uint32(raw[o]) | uint32(raw[o+1])<<8
			default:
				got[i*c.N+j] = uint32(raw[o]) | uint32(raw[o+1])<<8 | uint32(raw[o+2])<<16 | uint32(raw[o+3])<<24
			}
		}
	}
	var amax uint32
	if c.out.FP8() {
		a := make([]uint32, 1)
		require.NoError(t, cudaload.CopyFromDevice(ctx, a, dAmax))
		amax = a[0]
	}
	return got, amax
}

// fp8Cases: every pair × output × accumulation × scaling on a small odd
// shape, every epilogue on another, and one combination each on larger
// and padded shapes.
func fp8Cases() []fp8Case {
	pairs := [][2]DType{{E4M3, E4M3}, {E4M3, E5M2}, {E5M2, E4M3}}
	outs := []DType{BF16, F16, F32, E4M3, E5M2}
	modes := []struct {
		s FP8Scaling
		a FP8Accum
	}{{ScaleTensor, AccumFast}, {ScaleRow, AccumFast}, {ScaleTensor, AccumPromoted}, {ScaleRow, AccumPromoted}, {ScaleBlock, AccumPromoted}}
	var cs []fp8Case
	i := 0
	for _, p := range pairs {
		for _, o := range outs {
			for _, m := range modes {
				ep := []Epilogue{Default, Bias, GeluBias, Relu}[i%4]
				cs = append(cs, fp8Case{M: 37, N: 70, K: 400, a: p[0], b: p[1], out: o, scaling: m.s, accum: m.a, ep: ep})
				i++
			}
		}
	}
	for k, ep := range []Epilogue{Default, Bias, Relu, ReluBias, Gelu, GeluBias} {
		cs = append(cs, fp8Case{M: 130, N: 257, K: 272, a: E4M3, b: E4M3, out: []DType{BF16, E4M3, F32}[k%3], scaling: ScaleRow, accum: AccumPromoted, ep: ep})
	}
	big := []fp8Case{
		{M: 1, N: 7, K: 16},
		{M: 3, N: 33, K: 48, padA: 16, padB: 32, padD: 3},
		{M: 129, N: 130, K: 160},
		{M: 300, N: 520, K: 1040, padD: 8},
		{M: 256, N: 384, K: 4096},
		{M: 17, N: 129, K: 4112, padA: 48},
	}
	for k, c := range big {
		p := pairs[k%3]
		m := modes[k%5]
		c.a, c.b, c.out, c.scaling, c.accum = p[0], p[1], outs[k%5], m.s, m.a
		c.ep = []Epilogue{GeluBias, Default, ReluBias}[k%3]
		cs = append(cs, c)
	}
	// Block scales past 128 rows (the consumers' own loads, not the
	// loader warp's), N and K not multiples of 128, padded.
	cs = append(cs, fp8Case{M: 333, N: 250, K: 656, padA: 16, padD: 5, a: E5M2, b: E4M3, out: F16, scaling: ScaleBlock, accum: AccumPromoted, ep: GeluBias},
		fp8Case{M: 200, N: 520, K: 1152, a: E4M3, b: E4M3, out: E4M3, scaling: ScaleBlock, accum: AccumPromoted, ep: ReluBias},
		// The 128-column ReLU kernels into bf16 keep promote_tile's loop
		// for their own loads (gemm_fp8.cu, AHEAD): 6 and 7 k-blocks, the
		// loop's two tails.
		fp8Case{M: 261, N: 300, K: 656, a: E4M3, b: E4M3, out: BF16, scaling: ScaleBlock, accum: AccumPromoted, ep: ReluBias},
		fp8Case{M: 150, N: 130, K: 784, a: E5M2, b: E4M3, out: BF16, scaling: ScaleBlock, accum: AccumPromoted, ep: Relu})
	// Specials: NaN codes, E5M2's infinities (Inf·0 and opposite infinities).
	cs = append(cs, fp8Case{M: 64, N: 96, K: 256, a: E5M2, b: E4M3, out: F32, scaling: ScaleRow, accum: AccumFast, ep: Default, specials: true},
		fp8Case{M: 64, N: 96, K: 256, a: E4M3, b: E5M2, out: BF16, scaling: ScaleBlock, accum: AccumPromoted, ep: Bias, specials: true})
	return cs
}

// TestFP8MatmulMatchesReference: the fp8 product equals gemm/ref's bit for
// bit for every operand pair, output, accumulation, scaling and epilogue,
// over odd and padded shapes, fresh random codes over every finite value,
// outputs poisoned; the fp8 outputs' amax too.
func TestFP8MatmulMatchesReference(t *testing.T) {
	eng, ctx := gpuEngine(t)
	if !wgArch(eng.arch) {
		t.Skipf("the fp8 product needs sm_90a; this GPU is %v", eng.arch)
	}
	r := newRand(t)
	defer func() { fp8ForceTile = 0 }()
	for _, c := range fp8Cases() {
		in := newFP8Inputs(t, ctx, r, c)
		want, wantAmax := fp8Want(t, c, in, 0, c.M)
		// Every tile the planner may choose (fp8TileFor), forced.
		for _, tile := range []int64{0, 32, 64, 128, 256} {
			fp8ForceTile = tile
			got, gotAmax := fp8Run(t, eng, ctx, c, in, 0, c.M)
			what := fmt.Sprintf("%v tile %d", c, tile)
			requireSameBits(t, want, got, c.N, what)
			if c.out.FP8() {
				require.Equal(t, wantAmax, gotAmax, "%s: amax %#x, want %#x", what, gotAmax, wantAmax)
			}
		}
		fp8ForceTile = 0
	}
}

// TestFP8MatmulManyTilesABlock: on a grid of three SMs' blocks each block
// runs several tiles in turn, whole and partial ones mixed, so the ring's
// slots and phases, the block-scale factors and the stores carry across
// tile boundaries inside one block (the other tests' grids give most
// blocks one tile); the bits equal gemm/ref's for every tile width, both
// accumulations and each way block scales arrive, 16-bit, f32 and fp8
// outputs, and a D whose rows are too short for whole 16-byte lines (padD
// 3: store_tile).
func TestFP8MatmulManyTilesABlock(t *testing.T) {
	eng, ctx := gpuEngine(t)
	if !wgArch(eng.arch) {
		t.Skipf("the fp8 product needs sm_90a; this GPU is %v", eng.arch)
	}
	old := eng.device.sms
	eng.device.sms = 3
	defer func() { eng.device.sms = old; fp8ForceTile = 0 }()
	r := newRand(t)
	for _, c := range []fp8Case{
		{M: 300, N: 600, K: 384, padD: 8, a: E4M3, b: E4M3, out: BF16, scaling: ScaleTensor, accum: AccumFast, ep: Default},
		{M: 520, N: 530, K: 272, a: E5M2, b: E4M3, out: F16, scaling: ScaleRow, accum: AccumFast, ep: GeluBias},
		{M: 260, N: 1030, K: 160, a: E4M3, b: E5M2, out: BF16, scaling: ScaleRow, accum: AccumFast, ep: Relu},
		{M: 300, N: 600, K: 384, padD: 3, a: E4M3, b: E4M3, out: BF16, scaling: ScaleTensor, accum: AccumFast, ep: Bias},
		{M: 300, N: 600, K: 256, a: E4M3, b: E4M3, out: F32, scaling: ScaleRow, accum: AccumFast, ep: Default},
		{M: 300, N: 600, K: 256, a: E4M3, b: E4M3, out: E4M3, scaling: ScaleTensor, accum: AccumFast, ep: Default},
		// The promoted chain: the consumers' own block-scale loads (M >
		// 128), the ReLU kernels into bf16 without the lookahead, GELU
		// without the overlapped partial sets, per-row scales, and the
		// loader warp's block scales (M <= 128).
		{M: 300, N: 600, K: 384, a: E4M3, b: E4M3, out: BF16, scaling: ScaleBlock, accum: AccumPromoted, ep: Bias},
		{M: 270, N: 520, K: 640, a: E5M2, b: E4M3, out: BF16, scaling: ScaleBlock, accum: AccumPromoted, ep: ReluBias},
		{M: 260, N: 530, K: 400, a: E4M3, b: E4M3, out: F16, scaling: ScaleTensor, accum: AccumPromoted, ep: GeluBias},
		{M: 390, N: 260, K: 272, a: E4M3, b: E5M2, out: BF16, scaling: ScaleRow, accum: AccumPromoted, ep: Default},
		{M: 100, N: 1100, K: 512, a: E4M3, b: E4M3, out: BF16, scaling: ScaleBlock, accum: AccumPromoted, ep: Default},
	} {
		in := newFP8Inputs(t, ctx, r, c)
		want, wantAmax := fp8Want(t, c, in, 0, c.M)
		for _, tile := range []int64{64, 128, 256} {
			fp8ForceTile = tile
			got, gotAmax := fp8Run(t, eng, ctx, c, in, 0, c.M)
			what := fmt.Sprintf("%v tile %d on 3 SMs", c, tile)
			requireSameBits(t, want, got, c.N, what)
			if c.out.FP8() {
				require.Equal(t, wantAmax, gotAmax, "%s: amax %#x, want %#x", what, gotAmax, wantAmax)
			}
		}
	}
}

// TestFP8MatmulBatchInvariance: with per-row and block scales of A, rows
// computed in batches of 1, 7, 64 and 129 equal the same rows of one
// 300-row call, in both accumulation modes.
func TestFP8MatmulBatchInvariance(t *testing.T) {
	eng, ctx := gpuEngine(t)
	if !wgArch(eng.arch) {
		t.Skipf("the fp8 product needs sm_90a; this GPU is %v", eng.arch)
	}
	r := newRand(t)
	for _, c := range []fp8Case{
		{M: 300, N: 200, K: 528, a: E4M3, b: E4M3, out: BF16, scaling: ScaleRow, accum: AccumFast, ep: GeluBias},
		{M: 300, N: 200, K: 528, a: E5M2, b: E4M3, out: E4M3, scaling: ScaleBlock, accum: AccumPromoted, ep: Bias},
	} {
		in := newFP8Inputs(t, ctx, r, c)
		whole, _ := fp8Run(t, eng, ctx, c, in, 0, c.M)
		for _, rows := range []int{1, 7, 64, 129} {
			for lo := 0; lo < c.M; lo += rows {
				hi := min(lo+rows, c.M)
				part, _ := fp8Run(t, eng, ctx, c, in, lo, hi)
				requireSameBits(t, whole[lo*c.N:hi*c.N], part, c.N, fmt.Sprintf("%v rows [%d,%d) in batches of %d", c, lo, hi, rows))
			}
		}
	}
}

// TestQuantizeFP8MatchesReference: the quantization equals gemm/ref's (the
// codes and the scales) for every input and output type, group and
// orientation, over odd shapes with NaN, ±Inf, zeros and a wide spread.
func TestQuantizeFP8MatchesReference(t *testing.T) {
	eng, ctx := gpuEngine(t)
	if !wgArch(eng.arch) {
		t.Skipf("the fp8 kernels need sm_90a; this GPU is %v", eng.arch)
	}
	r := newRand(t)
	shapes := [][2]int{{1, 1}, {3, 200}, {37, 129}, {130, 300}, {257, 1000}}
	k := 0
	for _, sh := range shapes {
		for _, in := range []DType{F32, BF16, F16} {
			for _, out := range []DType{E4M3, E5M2} {
				for _, g := range []FP8Groups{GroupTensor, GroupRow, Group1x128, Group128x128} {
					for _, tr := range []bool{false, true} {
						k++
						rows, cols := sh[0], sh[1]
						ldx := cols + k%3
						x := spfAdversarial(r, in, rows*ldx, k%4 == 0)
						if in == F32 {
							for i := range x.values {
								x.values[i] *= float32(math.Ldexp(1, r.IntN(40)-20))
							}
						}
						d := FP8QuantizeDesc{In: in, Out: out, Rows: rows, Cols: cols, LDX: ldx, Transpose: tr, Groups: g}
						qr, qc := d.qShape()
						d.LDQ = qc + 4*(k%2)
						req := ref.FP8QuantizeRequest{Out: out, Rows: rows, Cols: cols, In: in, LDX: ldx, Transpose: tr, Groups: g,
							Q: make([]uint8, qr*d.LDQ), LDQ: d.LDQ, Scales: make([]float32, d.ScaleCount())}
						if in == F32 {
							req.X = ref.Values(x.values)
						} else {
							req.X = ref.Bits(x.half)
						}
						what := fmt.Sprintf("%dx%d %v→%v %v transpose %v", rows, cols, in, out, g, tr)
						require.NoError(t, ref.FP8Quantize(req), what)
						dX := upload(t, ctx, x)
						dQ := poisoned(t, ctx, uint64(len(req.Q)))
						dS := poisoned(t, ctx, uint64(4*len(req.Scales)))
						require.NoError(t, eng.QuantizeFP8(d, FP8QuantizeArgs{X: dX, Q: dQ, Scales: dS}), what)
						require.NoError(t, eng.Synchronize())
						q := make([]uint8, len(req.Q))
						require.NoError(t, cudaload.CopyFromDevice(ctx, q, dQ))
						s := make([]float32, len(req.Scales))
						require.NoError(t, cudaload.CopyFromDevice(ctx, s, dS))
						for i := range s {
							require.Equal(t, math.Float32bits(req.Scales[i]), math.Float32bits(s[i]), "%s: scale %d", what, i)
						}
						for i := 0; i < qr; i++ {
							for j := 0; j < qc; j++ {
								if q[i*d.LDQ+j] != req.Q[i*d.LDQ+j] {
									t.Fatalf("%s: Q(%d,%d) = %#02x, want %#02x", what, i, j, q[i*d.LDQ+j], req.Q[i*d.LDQ+j])
								}
							}
						}
					}
				}
			}
		}
	}
}

// fp8EncodeCheck converts a range of f32 bit patterns with the hardware's
// satfinite conversion, both formats, as the fp8 kernels do.
const fp8EncodeCheck = `
extern "C" __global__ void dg_fp8_encode(unsigned long long base, unsigned char* e4, unsigned char* e5) {
    const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float x = __uint_as_float((unsigned)(base + i));
    unsigned short a, b;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(a) : "f"(0.0f), "f"(x));
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(b) : "f"(0.0f), "f"(x));
    e4[i] = (unsigned char)(a & 0xff);
    e5[i] = (unsigned char)(b & 0xff);
}
`

// TestGPUFP8EncodeMatchesReference: the hardware's conversion equals
// gemm/ref's FP8Encode on every one of the 2^32 f32 bit patterns, for
// E4M3 and E5M2 (rounding, ties, subnormals, saturation, NaN).
func TestGPUFP8EncodeMatchesReference(t *testing.T) {
	eng, ctx := gpuEngine(t)
	if !wgArch(eng.arch) {
		t.Skipf("sm_90a only; this GPU is %v", eng.arch)
	}
	fn := compileCheck(t, ctx, fp8EncodeCheck, "dg_fp8_encode")
	const chunk = 1 << 28
	d4, d5 := alloc(t, ctx, chunk), alloc(t, ctx, chunk)
	h4, h5 := make([]uint8, chunk), make([]uint8, chunk)
	for base := uint64(0); base < 1<<32; base += chunk {
		var args cudaload.Args
		args.Reset().Uint64(base).Ptr(d4).Ptr(d5)
		require.NoError(t, fn.Launch(cudaload.LaunchConfig{Grid: cudaload.Dim3{X: chunk / 256, Y: 1, Z: 1}, Block: cudaload.Dim3{X: 256, Y: 1, Z: 1}}, &args))
		require.NoError(t, ctx.Synchronize())
		require.NoError(t, cudaload.CopyFromDevice(ctx, h4, d4))
		require.NoError(t, cudaload.CopyFromDevice(ctx, h5, d5))
		bad := parallelFirstBad(chunk, func(i int) bool {
			x := math.Float32frombits(uint32(base) + uint32(i))
			return ref.FP8Encode(E4M3, x) != h4[i] || ref.FP8Encode(E5M2, x) != h5[i]
		})
		if bad >= 0 {
			x := math.Float32frombits(uint32(base) + uint32(bad))
			t.Fatalf("f32 %#08x (%g): GPU e4m3 %#02x e5m2 %#02x, ref %#02x %#02x", math.Float32bits(x), x, h4[bad], h5[bad],
				ref.FP8Encode(E4M3, x), ref.FP8Encode(E5M2, x))
		}
	}
}

// compileCheck compiles a self-contained check kernel for sm_90a with the
// engine's flags and returns its entry point.
func compileCheck(t *testing.T, ctx *cudaload.Context, src, name string) *cudaload.Function {
	t.Helper()
	comp, err := nvrtc.Open()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	res, err := comp.Compile(src, name+".cu", kernels.Flags(kernels.Arch{Major: 9, Minor: 0, Specific: true}))
	require.NoError(t, err)
	return gputest.Kernel(t, ctx, res.CUBIN, name)
}

// parallelFirstBad returns the smallest i < n with bad(i), or -1, checking
// on every CPU.
func parallelFirstBad(n int, bad func(i int) bool) int {
	workers := runtime.NumCPU()
	first := make([]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first[w] = -1
			lo, hi := n*w/workers, n*(w+1)/workers
			for i := lo; i < hi; i++ {
				if bad(i) {
					first[w] = i
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, f := range first {
		if f >= 0 {
			return f
		}
	}
	return -1
}

// TestFP8Throughput times the fp8 product's kernels on constant inputs
// (DETGEMM_FP8_PERF=1; the bench measures the engine for the record, with
// cuBLASLt beside it). DETGEMM_FP8_PERF_SHAPES names the shapes to run
// ("4096x4096x1024 64x4096x7168", M×N×K) in place of the default list;
// DETGEMM_FP8_PERF_MODES the modes (fp8PerfMode's names).
func TestFP8Throughput(t *testing.T) {
	eng, ctx := perfEngine(t, "DETGEMM_FP8_PERF", "the fp8 kernels")
	if !wgArch(eng.arch) {
		t.Skipf("sm_90a only; this GPU is %v", eng.arch)
	}
	// DETGEMM_FP8_TILE forces a tile width where the mode has one;
	// DETGEMM_FP8_RANDOM=1 draws the codes at random (E4M3 of magnitude
	// 2^-3 to 2^3, either sign), whose switching draws more power than
	// constant codes and so lowers the clocks, as the bench's data does.
	if w, err := strconv.ParseInt(os.Getenv("DETGEMM_FP8_TILE"), 10, 64); err == nil {
		fp8ForceTile = w
		defer func() { fp8ForceTile = 0 }()
	}
	random := os.Getenv("DETGEMM_FP8_RANDOM") != ""
	r := newRand(t)
	fill := func(p cudaload.DevicePtr, n int, c byte) {
		if !random {
			require.NoError(t, ctx.MemsetD8(p, c, uint64(n)))
			return
		}
		h := make([]byte, n)
		for i := range h {
			h[i] = byte(r.IntN(2))<<7 | byte(4+r.IntN(7))<<3 | byte(r.IntN(8))
		}
		require.NoError(t, cudaload.CopyToDevice(ctx, p, h))
	}
	start, end := mustEvent(t, ctx), mustEvent(t, ctx)
	shapes := [][3]int{{4096, 4096, 4096}, {8192, 8192, 8192}, {4096, 7168, 16384}, {128, 7168, 7168}, {64, 4096, 7168}, {128, 4096, 7168}, {64, 7168, 7168}, {64, 24576, 7168}, {128, 24576, 7168}}
	if only := os.Getenv("DETGEMM_FP8_PERF_SHAPES"); only != "" {
		shapes = nil
		for _, f := range strings.Fields(only) {
			M, N, K := perfDims(t, "DETGEMM_FP8_PERF_SHAPES", f)
			require.True(t, M > 0 && N > 0 && K > 0 && K%128 == 0, "DETGEMM_FP8_PERF_SHAPES: %q wants positive sizes and K a multiple of 128", f)
			shapes = append(shapes, [3]int{M, N, K})
		}
	}
	for _, s := range shapes {
		M, N, K := s[0], s[1], s[2]
		// B rotates over copies that together pass L2 (a decode product
		// reads B once; from L2 it would time a cache, not HBM).
		sets := max(1, min(6, (160<<20)/(N*K)))
		a := alloc(t, ctx, uint64(M*K))
		fill(a, M*K, 0x38)
		bs := make([]cudaload.DevicePtr, sets)
		for i := range bs {
			bs[i] = alloc(t, ctx, uint64(N*K))
			fill(bs[i], N*K, 0x30)
		}
		d := alloc(t, ctx, uint64(M*N*2))
		kb := (K + 127) / 128
		// Enough factors for block scales and for one a row and a column.
		sa := upload(t, ctx, operand{d: F32, values: fp8Ones(max(M*kb, M))})
		sb := upload(t, ctx, operand{d: F32, values: fp8Ones(max((N+127)/128*kb, N))})
		for _, m := range []struct {
			s FP8Scaling
			a FP8Accum
		}{{ScaleTensor, AccumFast}, {ScaleTensor, AccumPromoted}, {ScaleBlock, AccumPromoted}, {ScaleRow, AccumFast}, {ScaleRow, AccumPromoted}} {
			if !perfListed("DETGEMM_FP8_PERF_MODES", fp8PerfMode(m.s, m.a)) {
				continue // "tensor-fast tensor-prom block row-fast row-prom"
			}
			p, err := eng.PlanFP8(FP8Desc{A: E4M3, B: E4M3, Out: BF16, M: M, N: N, K: K, Scaling: m.s, Accum: m.a})
			require.NoError(t, err)
			best := bestPerLaunch(t, eng, start, end, 10, func(i int) error {
				return p.Run(FP8Args{A: a, B: bs[i%sets], D: d, ScaleA: sa, ScaleB: sb})
			})
			us := float64(best.Nanoseconds()) / 1e3
			t.Logf("fp8perf %5dx%5dx%5d %v %v %v %9.1f us %7.1f TFLOP/s %6.0f GB/s", M, N, K, m.s, m.a, p.Kernels(), us,
				2*float64(M)*float64(N)*float64(K)/us/1e6, float64(M*K+N*K+2*M*N)/us/1e3)
		}
	}
}

// fp8PerfMode names a probe mode for DETGEMM_FP8_PERF_MODES.
func fp8PerfMode(s FP8Scaling, a FP8Accum) string {
	switch {
	case s == ScaleBlock:
		return "block"
	case s == ScaleRow && a == AccumFast:
		return "row-fast"
	case s == ScaleRow:
		return "row-prom"
	case a == AccumFast:
		return "tensor-fast"
	}
	return "tensor-prom"
}

func fp8Ones(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}
