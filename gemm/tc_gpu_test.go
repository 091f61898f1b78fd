package gemm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/detgemm/detgemm/kernels"
	"github.com/stretchr/testify/require"
)

// tcCase is one way the engine can run a tensor-core call: the
// dispatcher's choice, or one kernel forced. Each must give the model's
// bits; a new TC kernel is verified by adding one line here.
type tcCase struct {
	name string
	f    tcForce
}

var tcCases = []tcCase{
	{"auto", tcForce{}},
	{"tc256-vec", tcForce{tcTile256, tcPathVec}},
	{"tc128-vec", tcForce{tcTile128, tcPathVec}},
	{"tc128-any", tcForce{tcTile128, tcPathAny}},
	{"tc64-vec", tcForce{tcTile64, tcPathVec}},
	{"tc64-any", tcForce{tcTile64, tcPathAny}},
	{"wg128x256", tcForce{tcTileWG128x256, tcPathVec}},
	{"wg128x192", tcForce{tcTileWG128x192, tcPathVec}},
	{"wg128x128", tcForce{tcTileWG128x128, tcPathVec}},
	{"wg192x192", tcForce{tcTileWG192x192, tcPathVec}},
	{"wg128x96", tcForce{tcTileWG128x96, tcPathVec}},
	{"wg128x64", tcForce{tcTileWG128x64, tcPathVec}},
	{"wg128x128s", tcForce{tcTileWG128x128S, tcPathVec}},
	{"wg128x192s", tcForce{tcTileWG128x192S, tcPathVec}},
	{"wg128x256s", tcForce{tcTileWG128x256S, tcPathVec}},
	{"wg128x192r", tcForce{tcTileWG128x192R, tcPathVec}},
	{"tcrows8-vec", tcForce{tcTileRows8, tcPathVec}},
	{"tcrows16-vec", tcForce{tcTileRows16, tcPathVec}},
	{"tmarows8", tcForce{tcTileRowsTMA8, tcPathVec}},
	{"tmarows16", tcForce{tcTileRowsTMA16, tcPathVec}},
	{"tcdw64-vec", tcForce{tcTileDW64, tcPathVec}},
	{"tcdw64-any", tcForce{tcTileDW64, tcPathAny}},
}

// tcCombos is every (input, output) the tensor-core tier accepts.
var tcCombos = []struct{ in, out DType }{{BF16, BF16}, {BF16, F32}, {F16, F16}, {F16, F32}}

// tcEngine returns the engine and the tensor-core model its GPU is
// verified against, or skips: the model is verified for sm_90 only (the
// published Ampere model is not checked here).
func tcEngine(t *testing.T) (*Engine, *cudaload.Context, ref.TCModel) {
	t.Helper()
	eng, ctx := gpuEngine(t)
	if a := eng.Arch(); a.Major != 9 || a.Minor != 0 {
		t.Skipf("the tensor-core model is verified for sm_90; this GPU is %v", a)
	}
	return eng, ctx, ref.Hopper
}

// skipIfCannot skips t when a forced kernel cannot run the call (the
// 16-byte path on unaligned operands): the dispatcher never picks it there.
func skipIfCannot(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, errTCKernel) {
		t.Skip(err)
	}
	require.NoError(t, err)
}

// refused reports whether the forced kernel f refused a call (errTCKernel:
// gemm_tc_rows on dW, the 16-byte path on unaligned operands), where the
// suite skips that kernel; any other error fails t.
func refused(t *testing.T, f tcForce, err error) bool {
	t.Helper()
	if f != (tcForce{}) && errors.Is(err, errTCKernel) {
		return true
	}
	require.NoError(t, err)
	return false
}

// TestTCKernelsGiveIdenticalBitsOnLargeShapes runs shapes too large for a
// quick CPU check by every kernel and requires identical bits (the model
// checks the first kernel's rows on a sample).
func TestTCKernelsGiveIdenticalBitsOnLargeShapes(t *testing.T) {
	eng, ctx, m := tcEngine(t)
	r := newRand(t)
	for _, s := range [][3]int{
		{1024, 2000, 1280},
		// Cut reductions (2 slabs of 4352). 1200×1800 outputs: the
		// dispatcher keeps running sums (128×192), a forced 128×128 too
		// (150 tiles), a forced 128×192 or 128×256 writes planes (its
		// grid leaves SMs idle), gemm_tc always does. 2200×2000: every
		// forced wgmma variant keeps running sums (at least 144 tiles);
		// the dispatcher's REGSUM grid (198 tiles of 128×192) runs rows
		// 1536.. on planes (wgTail), so the model's rows are the tail's.
		{1200, 8200, 1800}, {2200, 8200, 2000},
	} {
		for _, d := range []DType{BF16, F16} {
			tcLargeShapeFamilies(t, eng, ctx, m, r, d, s[0], s[1], s[2])
		}
	}
	// dX, whose layout has tiles of its own (128×96): 1024×1280 outputs
	// are whole tiles but the last column of tiles.
	for _, d := range []DType{BF16, F16} {
		tcLargeShapeFamiliesDX(t, eng, ctx, m, r, d, 1024, 2000, 1280)
		// A cut dX (2 slabs of 4352) on planes: 128×96's slab variant, a
		// ragged last column of tiles (1000 = 10·96 + 40).
		tcLargeShapeFamiliesDX(t, eng, ctx, m, r, d, 256, 8200, 1000)
		// A cut dX whose REGSUM grid has a split tail (as Forward's above).
		tcLargeShapeFamiliesDX(t, eng, ctx, m, r, d, 2200, 8200, 2000)
	}
}

// tcLargeShapeFamiliesDX runs dX (dY [M,N] against W [K,N]) by every
// kernel and checks a sample of rows against the model.
func tcLargeShapeFamiliesDX(t *testing.T, eng *Engine, ctx *cudaload.Context, m ref.TCModel, r *rand.Rand, d DType, M, N, K int) {
	dy, w := randomOperand(r, d, M*N), randomOperand(r, d, K*N)
	dyP, wP := upload(t, ctx, dy), upload(t, ctx, w)
	var first []uint32
	firstName := ""
	for _, tc := range tcCases {
		eng := forced(eng, filter{tc: tc.f})
		dx := poisoned(t, ctx, uint64(M*K*d.Size()))
		err := eng.DX(DXArgs{Tier: TierTensorCore, M: M, N: N, K: K, DY: dyP, W: wP, DX: dx, In: d, Out: d})
		if refused(t, tc.f, err) {
			continue
		}
		got := readBits(t, eng, ctx, dx, d, M*K)
		if first == nil {
			first, firstName = got, tc.name
			rows := 24
			want := make([]float32, rows*K)
			require.NoError(t, refTC(m, d).DX(ref.Values(want), ref.Values(dy.values[(M-rows)*N:]), ref.Values(w.values), rows, N, K))
			requireSameBits(t, refBits(d, want), got[(M-rows)*K:], K, fmt.Sprintf("%v dX %s vs model", d, tc.name))
			continue
		}
		requireSameBits(t, first, got, K, fmt.Sprintf("%v dX %s vs %s", d, tc.name, firstName))
	}
}

// tcLargeShapeFamilies runs Forward on one M×K×N shape by every kernel and
// checks a sample of rows against the model.
func tcLargeShapeFamilies(t *testing.T, eng *Engine, ctx *cudaload.Context, m ref.TCModel, r *rand.Rand, d DType, M, K, N int) {
	x, w := randomOperand(r, d, M*K), randomOperand(r, d, K*N)
	bias := randomOperand(r, F32, N)
	xP, wP, bP := upload(t, ctx, x), upload(t, ctx, w), upload(t, ctx, bias)
	var first []uint32
	for _, tc := range tcCases {
		eng := forced(eng, filter{tc: tc.f})
		y := poisoned(t, ctx, uint64(M*N*d.Size()))
		err := eng.Forward(ForwardArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: xP, W: wP, Bias: bP, Y: y, In: d, Out: d})
		if refused(t, tc.f, err) {
			continue // gemm_tc_dw_stream: dW only
		}
		got := readBits(t, eng, ctx, y, d, M*N)
		if first == nil {
			first = got
			rows := 24 // the model on a sample of rows
			want := make([]float32, rows*N)
			require.NoError(t, refTC(m, d).Forward(ref.Values(want), ref.Values(x.values[(M-rows)*K:]), ref.Values(w.values), bias.values, rows, K, N))
			requireSameBits(t, refBits(d, want), got[(M-rows)*N:], N, fmt.Sprintf("%v %s vs model", d, tc.name))
			continue
		}
		requireSameBits(t, first, got, N, fmt.Sprintf("%v %s vs %s", d, tc.name, tcCases[0].name))
	}
}

// TestTCDWMicroBatchesAtMultiplesOf16: dW over 1000 rows in one call
// equals micro-batches split at multiples of 16 rows, applied in order,
// under every kernel, and the model.
func TestTCDWMicroBatchesAtMultiplesOf16(t *testing.T) {
	eng, ctx, m := tcEngine(t)
	r := newRand(t)
	const M, K, N = 1000, 72, 264
	for _, d := range []DType{BF16, F16} {
		x, dy, dw0 := randomOperand(r, d, M*K), randomOperand(r, d, M*N), randomOperand(r, F32, K*N)
		xP, dyP := upload(t, ctx, x), upload(t, ctx, dy)
		want := append([]float32(nil), dw0.values...)
		require.NoError(t, refTC(m, d).DW(want, ref.Values(x.values), ref.Values(dy.values), M, K, N))
		es := cudaload.DevicePtr(d.Size())
		for _, tc := range tcCases {
			eng := forced(eng, filter{tc: tc.f})
			one, split := upload(t, ctx, dw0), upload(t, ctx, dw0)
			if refused(t, tc.f, eng.DW(DWArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: xP, DY: dyP, DW: one, In: d})) {
				continue
			}
			for _, s := range [][2]int{{0, 16}, {16, 512}, {512, M}} {
				off := cudaload.DevicePtr(s[0])
				require.NoError(t, eng.DW(DWArgs{Tier: TierTensorCore, M: s[1] - s[0], K: K, N: N, X: xP + off*K*es, DY: dyP + off*N*es, DW: split, In: d}))
			}
			requireSameBits(t, refBits(F32, want), readBits(t, eng, ctx, one, F32, K*N), N, fmt.Sprintf("%v %s one call", d, tc.name))
			requireSameBits(t, refBits(F32, want), readBits(t, eng, ctx, split, F32, K*N), N, fmt.Sprintf("%v %s three calls", d, tc.name))
		}
	}
}

func TestTCRunToRunIdentical(t *testing.T) {
	eng, ctx, _ := tcEngine(t)
	r := newRand(t)
	const M, K, N = 2048, 1536, 2048
	for _, d := range []DType{BF16, F16} {
		x, w := upload(t, ctx, randomOperand(r, d, M*K)), upload(t, ctx, randomOperand(r, d, K*N))
		dw0 := randomOperand(r, F32, K*N)
		var first, firstDW []uint32
		for run := 0; run < 3; run++ {
			y := poisoned(t, ctx, uint64(M*N*d.Size()))
			require.NoError(t, eng.Forward(ForwardArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: x, W: w, Y: y, In: d, Out: d}))
			dw := upload(t, ctx, dw0)
			require.NoError(t, eng.DW(DWArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: x, DY: y, DW: dw, In: d}))
			got, gotDW := readBits(t, eng, ctx, y, d, M*N), readBits(t, eng, ctx, dw, F32, K*N)
			if first == nil {
				first, firstDW = got, gotDW
				continue
			}
			requireSameBits(t, first, got, N, fmt.Sprintf("%v forward run %d", d, run))
			requireSameBits(t, firstDW, gotDW, N, fmt.Sprintf("%v dW run %d", d, run))
		}
	}
}

// TestTCAccuracyAgainstFloat64Oracle bounds ‖y − y64‖/‖y64‖ at K = 4096 on
// N(0,1) inputs. Measured by the model (which the GPU equals): f32 output
// about 4.4e-6 (bf16 inputs) and 4.9e-6 (f16): every 16-wide step truncates
// to 25 bits below the step's largest addend and the chain rounds toward
// zero, about 15× the IEEE f32 plan's 3e-7; bf16 output about 1.7e-3, f16
// output about 2.1e-4 (the store's rounding dominates).
func TestTCAccuracyAgainstFloat64Oracle(t *testing.T) {
	eng, ctx := gpuEngine(t) // accuracy needs no bit model: any sm_80+ GPU
	r := newRand(t)
	const M, K, N = 64, 4096, 96
	bound := map[DType]float64{F32: 1e-5, BF16: 4e-3, F16: 5e-4}
	normal := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	for _, c := range tcCombos {
		x, w := fromValues(c.in, normal(M*K)), fromValues(c.in, normal(K*N))
		y := poisoned(t, ctx, uint64(M*N*c.out.Size()))
		require.NoError(t, eng.Forward(ForwardArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: upload(t, ctx, x), W: upload(t, ctx, w), Y: y, In: c.in, Out: c.out}))
		got := readBits(t, eng, ctx, y, c.out, M*N)
		gotF := make([]float32, len(got))
		for i, b := range got {
			if c.out.Half() {
				gotF[i] = c.out.ToF32(uint16(b))
			} else {
				gotF[i] = math.Float32frombits(b)
			}
		}
		want := make([]float64, M*N)
		require.NoError(t, ref.ForwardF64(want, x.values, w.values, nil, M, K, N))
		rel := ref.RelError(gotF, want)
		t.Logf("tensor-core %v->%v: relative error %.3g (bound %g)", c.in, c.out, rel, bound[c.out])
		require.LessOrEqual(t, rel, bound[c.out])
	}
}

// bitClass names what kind of value a bit pattern of d is, to describe a
// mismatch (NaN payloads, infinities, signed zeros).
func bitClass(d DType, b uint32) string {
	f := math.Float32frombits(b)
	if d.Half() {
		f = d.ToF32(uint16(b))
	}
	switch {
	case f != f:
		return "NaN"
	case math.IsInf(float64(f), 0):
		return "Inf"
	case f == 0 && math.Signbit(float64(f)):
		return "-0"
	case f == 0:
		return "+0"
	case math.Abs(float64(f)) == math.MaxFloat32:
		return "MaxFloat32"
	}
	return "finite"
}

// requireSameBitsClassified is requireSameBits that, on a mismatch, counts
// the (model, GPU) value classes, so a difference in a special-value rule
// reads as one line.
func requireSameBitsClassified(t *testing.T, d DType, want, got []uint32, cols int, what string) {
	t.Helper()
	classes := map[string]int{}
	for i := range want {
		if want[i] != got[i] {
			classes[fmt.Sprintf("model %s %#x / gpu %s %#x", bitClass(d, want[i]), want[i], bitClass(d, got[i]), got[i])]++
		}
	}
	if len(classes) > 0 {
		t.Errorf("%s: mismatches by class: %v", what, classes)
	}
	requireSameBits(t, want, got, cols, what)
}

// TestTCModelEdgeRulesOnGPU checks the model's rules for overflow and for
// the sign of an exactly zero sum against the GPU. Measured on the H200
// (2026-11-21): signed zeros follow IEEE's rules on the truncated addends,
// and a step whose exact sum reaches 2^128 gives ±Inf; the model now says
// both.
func TestTCModelEdgeRulesOnGPU(t *testing.T) {
	eng, ctx, m := tcEngine(t)
	const K, N = 32, 8
	big := float32(math.Ldexp(1, 127)) // bf16-exact
	rows := [][]float32{
		{big, big},   // 2^254: overflow
		{-big, -big}, // -2^254
		{big, 4},     // 2^127·(1+4): beyond 2^128 after the first step
		{float32(math.Copysign(0, -1)), 0},
		{1, -1},          // cancellation: +0
		{-1e-30, -1e-30}, // tiny negatives truncated to zero
		{float32(math.Ldexp(1, -100)), float32(math.Ldexp(-1, -100))},
		{3, 5},
	}
	M := len(rows)
	x := make([]float32, M*K)
	for i, row := range rows {
		copy(x[i*K:], row)
	}
	w := make([]float32, K*N)
	for i := range w {
		w[i] = 1
		if i%N == 1 {
			w[i] = -1
		}
		if i%N == 2 {
			w[i] = float32(math.Copysign(0, -1))
		}
	}
	xo, wo := fromValues(BF16, x), fromValues(BF16, w)
	want := make([]float32, M*N)
	require.NoError(t, refTC(m, BF16).Forward(ref.Values(want), ref.Values(xo.values), ref.Values(wo.values), nil, M, K, N))
	y := poisoned(t, ctx, uint64(M*N*4))
	require.NoError(t, eng.Forward(ForwardArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: upload(t, ctx, xo), W: upload(t, ctx, wo), Y: y, In: BF16, Out: F32}))
	got := readBits(t, eng, ctx, y, F32, M*N)
	for i := range M {
		t.Logf("row %v: model %v gpu %v", rows[i], want[i*N:i*N+3], func() []float32 {
			v := make([]float32, 3)
			for j := range v {
				v[j] = math.Float32frombits(got[i*N+j])
			}
			return v
		}())
	}
	requireSameBitsClassified(t, F32, refBits(F32, want), got, N, "edge rules (overflow to ±Inf, signed zeros)")
}

// TestTCAdversarialInputs: exponent spreads inside one 16-wide step,
// cancellation, subnormals of the input type, and bf16/f16 stores that land
// exactly on a rounding tie, for every op and kernel.
func TestTCAdversarialInputs(t *testing.T) {
	eng, ctx, m := tcEngine(t)
	r := newRand(t)
	const M, K, N = 96, 256, 80
	for _, d := range []DType{BF16, F16} {
		for _, kind := range []string{"spread", "cancel", "subnormal", "ties"} {
			x, w := adversarial(r, d, kind, M, K, true), adversarial(r, d, kind, K, N, false)
			xo, wo := fromValues(d, x), fromValues(d, w)
			xP, wP := upload(t, ctx, xo), upload(t, ctx, wo)
			out := F32
			if kind == "ties" {
				out = d // the store's rounding is what ties test
			}
			want := make([]float32, M*N)
			require.NoError(t, refTC(m, d).Forward(ref.Values(want), ref.Values(xo.values), ref.Values(wo.values), nil, M, K, N))
			// dX reads W as [K', N'] = [N, K] transposed: use x as dY [M, K]
			// and the transpose of w ([N, K]) as W.
			wt := make([]float32, N*K)
			for k := range K {
				for n := range N {
					wt[n*K+k] = wo.values[k*N+n]
				}
			}
			wto := fromValues(d, wt)
			wtP := upload(t, ctx, wto)
			wantDX := make([]float32, M*N)
			require.NoError(t, refTC(m, d).DX(ref.Values(wantDX), ref.Values(xo.values), ref.Values(wto.values), M, K, N))
			// dW: X' = x [M, K], dY' = a second adversarial [M, N].
			dy := fromValues(d, adversarial(r, d, kind, M, N, true))
			dyP := upload(t, ctx, dy)
			dw0 := randomOperand(r, F32, K*N)
			wantDW := append([]float32(nil), dw0.values...)
			require.NoError(t, refTC(m, d).DW(wantDW, ref.Values(xo.values), ref.Values(dy.values), M, K, N))
			for _, tc := range tcCases {
				eng := forced(eng, filter{tc: tc.f})
				y, dx, dw := poisoned(t, ctx, uint64(M*N*out.Size())), poisoned(t, ctx, uint64(M*N*out.Size())), upload(t, ctx, dw0)
				fwdRan := !refused(t, tc.f, eng.Forward(ForwardArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: xP, W: wP, Y: y, In: d, Out: out}))
				dxRan := !refused(t, tc.f, eng.DX(DXArgs{Tier: TierTensorCore, M: M, N: K, K: N, DY: xP, W: wtP, DX: dx, In: d, Out: out}))
				dwRan := !refused(t, tc.f, eng.DW(DWArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: xP, DY: dyP, DW: dw, In: d}))
				what := fmt.Sprintf("%v %s %s", d, kind, tc.name)
				if fwdRan {
					requireSameBitsClassified(t, out, refBits(out, want), readBits(t, eng, ctx, y, out, M*N), N, what+" forward")
				}
				if dxRan {
					requireSameBitsClassified(t, out, refBits(out, wantDX), readBits(t, eng, ctx, dx, out, M*N), N, what+" dX")
				}
				if dwRan {
					requireSameBitsClassified(t, F32, refBits(F32, wantDW), readBits(t, eng, ctx, dw, F32, K*N), N, what+" dW")
				}
			}
		}
	}
}

// adversarial draws a rows×cols operand of one kind. For "ties", the left
// operand's rows hold (v, ulp(v)/2, 0, ...) and the right operand is ones
// in its first two rows, so each output is v + ulp_d(v)/2 exactly: a tie
// of the output type, which must round to even.
func adversarial(r *rand.Rand, d DType, kind string, rows, cols int, left bool) []float32 {
	v := make([]float32, rows*cols)
	frac := 7 // bf16 fraction bits
	if d == F16 {
		frac = 10
	}
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
		case "subnormal": // the input format's subnormals mixed with normals
			e := -130
			if d == F16 {
				e = -20
			}
			v[i] = float32(math.Ldexp(u, e+r.IntN(8)))
		}
	}
	if kind == "ties" {
		clear(v)
		if left {
			for i := range rows {
				// v = ±(1 + j·2^-frac)·2^e, its half-ulp 2^(e-frac-1).
				e := r.IntN(8) - 4
				s := float64(1 - 2*r.IntN(2))
				v[i*cols] = float32(s * math.Ldexp(1+float64(r.IntN(1<<frac))*math.Ldexp(1, -frac), e))
				v[i*cols+1] = float32(s * math.Ldexp(1, e-frac-1))
			}
		} else {
			for j := range 2 * cols {
				v[j] = 1
			}
		}
	}
	return v
}

// TestTCThroughput times each tensor-core kernel on the bench's headline
// shapes (bf16), for tuning the dispatcher's relative costs. It runs only
// with DETGEMM_TC_PERF=1; bench measures the engine for the record.
func TestTCThroughput(t *testing.T) {
	eng, ctx := perfEngine(t, "DETGEMM_TC_PERF", "the tensor-core kernels")
	if b, err := kernels.Build(eng.Arch()); err == nil { // the cache: the engine's own build
		for _, r := range b.Modules[tcFamily].Resources {
			t.Logf("ptxas %s %s: %d registers, %d bytes stack, %d/%d bytes spilled", b.NVRTCVersion, r.Kernel, r.Registers, r.StackBytes, r.SpillStores, r.SpillLoads)
		}
	}
	start, end := mustEvent(t, ctx), mustEvent(t, ctx)
	for _, s := range [][3]int{{4096, 4096, 4096}, {8192, 8192, 8192}, {2048, 768, 3072}, {4096, 1536, 3072}, {128, 4096, 11008}, {2048, 768, 512}, {16, 4096, 4096}} {
		M, K, N := s[0], s[1], s[2]
		call := perfCall(t, ctx, TierTensorCore, BF16, M, K, N)
		for _, op := range []string{"fwd", "dx", "dw"} {
			for _, tc := range tcCases {
				if tc.f.path == tcPathAny && tc.f.tile != tcTile128 {
					continue
				}
				timed := call(forced(eng, filter{tc: tc.f}), op)
				launch := func() error { return timed(0) }
				if refused(t, tc.f, launch()) {
					continue
				}
				require.NoError(t, launch())
				best := bestPerLaunch(t, eng, start, end, 10, timed)
				tf := 2 * float64(M) * float64(N) * float64(K) / best.Seconds() / 1e12
				t.Logf("perf %5dx%5dx%5d %-3s %-10s %8.1f us %6.1f TFLOP/s", M, K, N, op, tc.name, float64(best.Nanoseconds())/1e3, tf)
			}
		}
	}
}

func mustEvent(t *testing.T, ctx *cudaload.Context) *cudaload.Event {
	t.Helper()
	e, err := ctx.NewEvent()
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// bestPerLaunch enqueues launch(1..reps) between two events on the
// engine's stream, three times, and returns the best time per launch (the
// perf tests' measure; the bench measures the engine for the record).
func bestPerLaunch(t *testing.T, eng interface{ Stream() *cudaload.Stream }, start, end *cudaload.Event, reps int, launch func(i int) error) time.Duration {
	t.Helper()
	best := time.Duration(math.MaxInt64)
	for range 3 {
		require.NoError(t, start.Record(eng.Stream()))
		for i := range reps {
			require.NoError(t, launch(i+1))
		}
		require.NoError(t, end.Record(eng.Stream()))
		require.NoError(t, end.Synchronize())
		d, err := cudaload.ElapsedTime(start, end)
		require.NoError(t, err)
		best = min(best, d/time.Duration(reps))
	}
	return best
}

// TestTCGoldenDigestsOnGPU runs every tensor-core golden case on the device
// (sm_90: the file holds the Hopper model's bits).
func TestTCGoldenDigestsOnGPU(t *testing.T) {
	eng, ctx, _ := tcEngine(t)
	file := readGolden(t, tcGoldenPath, "TestTCGoldenDigestsFromModel")
	require.NoError(t, file.Compare(goldenDigests(tcGoldenCases(), func(g goldenCase) []uint32 { return goldenOnDevice(t, eng, ctx, g) })))
}

// TestTCZeroResultsArePositive: a tensor-core step whose result is zero
// gives +0 whatever the signs of its addends (docs/contract.md, rule 7 of
// the tensor-core tier, measured on the H100): a -0 bias or master as the
// chain's start with every product -0, and products of -2^-155 whose sum
// truncates to zero below the subnormal grid. The reductions (80 for
// Forward, 272 for dX, 144 for dW) end one 16-wide step into a stage of
// four, so the steps that some kernels issue past the end are covered too.
// Every kernel, against the model.
func TestTCZeroResultsArePositive(t *testing.T) {
	eng, ctx, m := tcEngine(t)
	r := newRand(t)
	const M, K, N = 144, 80, 272
	nz := float32(math.Copysign(0, -1))
	values := func(d DType, n int, v float32) operand {
		s := make([]float32, n)
		for i := range s {
			s[i] = v
		}
		return fromValues(d, s)
	}
	positive := func(d DType, n int) operand {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(0.25 + r.Float64())
		}
		return fromValues(d, s)
	}
	type call struct {
		what string
		run  func(e forcedEngine, out cudaload.DevicePtr) error
		out  DType
		n    int
		cols int
		want []float32
		init *operand // dW's master
	}
	var calls []call
	for _, d := range []DType{BF16, F16} {
		negX, posW, negDY, posX := values(d, M*K, nz), positive(d, K*N), values(d, M*N, nz), positive(d, M*K)
		negBias, negMaster := values(F32, N, nz), values(F32, K*N, nz)
		xP, wP, bP, dyP, pxP := upload(t, ctx, negX), upload(t, ctx, posW), upload(t, ctx, negBias), upload(t, ctx, negDY), upload(t, ctx, posX)
		y := make([]float32, M*N)
		require.NoError(t, refTC(m, d).Forward(ref.Values(y), ref.Values(negX.values), ref.Values(posW.values), negBias.values, M, K, N))
		dx := make([]float32, M*K)
		require.NoError(t, refTC(m, d).DX(ref.Values(dx), ref.Values(negDY.values), ref.Values(posW.values), M, N, K))
		dw := append([]float32(nil), negMaster.values...)
		require.NoError(t, refTC(m, d).DW(dw, ref.Values(posX.values), ref.Values(negDY.values), M, K, N))
		calls = append(calls,
			call{fmt.Sprintf("%v Forward, -0 bias, -0 products", d), func(e forcedEngine, out cudaload.DevicePtr) error {
				return e.Forward(ForwardArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: xP, W: wP, Bias: bP, Y: out, In: d, Out: d})
			}, d, M * N, N, y, nil},
			call{fmt.Sprintf("%v dX, -0 products", d), func(e forcedEngine, out cudaload.DevicePtr) error {
				return e.DX(DXArgs{Tier: TierTensorCore, M: M, N: N, K: K, DY: dyP, W: wP, DX: out, In: d, Out: d})
			}, d, M * K, K, dx, nil},
			call{fmt.Sprintf("%v dW, -0 master, -0 products", d), func(e forcedEngine, out cudaload.DevicePtr) error {
				return e.DW(DWArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: pxP, DY: dyP, DW: out, In: d})
			}, F32, K * N, N, dw, &negMaster})
	}
	// bf16 reaches 2^-77 (f16 does not): sixteen products of -2^-155 sum
	// to -2^-151, which truncates to zero below float32's 2^-149 grid.
	tinyX, tinyW := values(BF16, M*K, -0x1p-77), values(BF16, K*N, 0x1p-78)
	txP, twP := upload(t, ctx, tinyX), upload(t, ctx, tinyW)
	ty := make([]float32, M*N)
	require.NoError(t, refTC(m, BF16).Forward(ref.Values(ty), ref.Values(tinyX.values), ref.Values(tinyW.values), nil, M, K, N))
	calls = append(calls, call{"bf16 Forward, a sum truncated to zero", func(e forcedEngine, out cudaload.DevicePtr) error {
		return e.Forward(ForwardArgs{Tier: TierTensorCore, M: M, K: K, N: N, X: txP, W: twP, Y: out, In: BF16, Out: F32})
	}, F32, M * N, N, ty, nil})
	for _, c := range calls {
		for _, v := range c.want {
			require.True(t, v == 0 && !math.Signbit(float64(v)), "%s: the model gives +0 everywhere", c.what)
		}
		for _, tc := range tcCases {
			e := forced(eng, filter{tc: tc.f})
			var out cudaload.DevicePtr
			if c.init != nil {
				out = upload(t, ctx, *c.init)
			} else {
				out = poisoned(t, ctx, uint64(c.n*c.out.Size()))
			}
			if refused(t, tc.f, c.run(e, out)) {
				continue
			}
			requireSameBits(t, refBits(c.out, c.want), readBits(t, eng, ctx, out, c.out, c.n), c.cols, fmt.Sprintf("%s, %s", c.what, tc.name))
		}
	}
}
