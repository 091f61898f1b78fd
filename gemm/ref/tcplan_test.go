package ref

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// modelTCForward, modelTCDX and modelTCDW are the tensor-core plans written
// as plainly as possible: one chain of Step per output element, the
// reduction gathered 16 terms at a time (Step zero-fills a short tail).
func modelTCForward(m TCModel, d DType, x, w, bias []float32, M, K, N int) []float32 {
	y := make([]float32, M*N)
	for i := range M {
		for j := range N {
			var c float32
			if bias != nil {
				c = bias[j]
			}
			for k0 := 0; k0 < K; k0 += 16 {
				var a, b []float32
				for k := k0; k < min(k0+16, K); k++ {
					a, b = append(a, x[i*K+k]), append(b, w[k*N+j])
				}
				c = m.Step(d, c, a, b)
			}
			y[i*N+j] = c
		}
	}
	return y
}

func modelTCDX(m TCModel, d DType, dy, w []float32, M, N, K int) []float32 {
	dx := make([]float32, M*K)
	for i := range M {
		for j := range K {
			var c float32
			for n0 := 0; n0 < N; n0 += 16 {
				var a, b []float32
				for n := n0; n < min(n0+16, N); n++ {
					a, b = append(a, dy[i*N+n]), append(b, w[j*N+n])
				}
				c = m.Step(d, c, a, b)
			}
			dx[i*K+j] = c
		}
	}
	return dx
}

func modelTCDW(m TCModel, d DType, dw0, x, dy []float32, M, K, N int) []float32 {
	dw := append([]float32(nil), dw0...)
	for k := range K {
		for n := range N {
			c := dw[k*N+n]
			for m0 := 0; m0 < M; m0 += 16 {
				var a, b []float32
				for r := m0; r < min(m0+16, M); r++ {
					a, b = append(a, x[r*K+k]), append(b, dy[r*N+n])
				}
				c = m.Step(d, c, a, b)
			}
			dw[k*N+n] = c
		}
	}
	return dw
}

// randTCInputs returns n values of type d as float32: normals scaled by
// 2^scale, a few zeros, and NaNs and infinities when specials.
func randTCInputs(rng *rand.Rand, d DType, n int, scale int, specials bool) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = halfVal(d, math.Ldexp(rng.NormFloat64(), scale))
		if rng.IntN(50) == 0 {
			v[i] = 0
		}
		if specials && rng.IntN(400) == 0 {
			v[i] = []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}[rng.IntN(3)]
		}
	}
	return v
}

var tcShapes = []struct{ M, K, N int }{
	{1, 1, 1}, {3, 15, 5}, {2, 16, 7}, {4, 17, 3}, {5, 255, 2}, {2, 257, 3},
	{7, 40, 130},  // N spans three column tiles
	{33, 600, 9},  // several row tiles, chunks of the reduction
	{100, 33, 70}, // dW reduction over 100 rows: a partial last step
}

// TestTCPlansFollowTheModelLiterally compares the optimized, parallel plans
// with the chain of Step written element by element, for both models and
// both input types, with and without NaN and Inf among the inputs.
func TestTCPlansFollowTheModelLiterally(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, m := range []TCModel{Hopper, Ampere} {
		for _, d := range []DType{BF16, F16} {
			for si, s := range tcShapes {
				M, K, N := s.M, s.K, s.N
				specials := si%3 == 2
				x, w := randTCInputs(rng, d, M*K, 0, specials), randTCInputs(rng, d, K*N, -2, specials)
				bias := randNormal(rng, N)
				if specials {
					bias[0] = float32(math.Inf(-1))
				}
				y := make([]float32, M*N)
				if err := tc32(m, d).Forward(Values(y), Values(x), Values(w), bias, M, K, N); err != nil {
					t.Fatal(err)
				}
				sameBits(t, m.Name+" TC Forward+bias", y, modelTCForward(m, d, x, w, bias, M, K, N))
				if err := tc32(m, d).Forward(Values(y), Values(x), Values(w), nil, M, K, N); err != nil {
					t.Fatal(err)
				}
				sameBits(t, m.Name+" TC Forward", y, modelTCForward(m, d, x, w, nil, M, K, N))

				dy := randTCInputs(rng, d, M*N, 0, specials)
				dx := make([]float32, M*K)
				if err := tc32(m, d).DX(Values(dx), Values(dy), Values(w), M, N, K); err != nil {
					t.Fatal(err)
				}
				sameBits(t, m.Name+" TC DX", dx, modelTCDX(m, d, dy, w, M, N, K))

				dw0 := randNormal(rng, K*N)
				if specials {
					dw0[K*N-1] = float32(math.NaN())
				}
				dw := append([]float32(nil), dw0...)
				if err := tc32(m, d).DW(dw, Values(x), Values(dy), M, K, N); err != nil {
					t.Fatal(err)
				}
				sameBits(t, m.Name+" TC DW", dw, modelTCDW(m, d, dw0, x, dy, M, K, N))
			}
		}
	}
}

// TestTCRowsAreInvariantToBatch: a row of the forward and dX results has the
// same bits computed alone, in a small batch, or inside the full batch.
func TestTCRowsAreInvariantToBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	const M, K, N = 37, 70, 90
	for _, d := range []DType{BF16, F16} {
		x, w, dy := randTCInputs(rng, d, M*K, 0, false), randTCInputs(rng, d, K*N, 0, false), randTCInputs(rng, d, M*N, 0, false)
		bias := randNormal(rng, N)
		y, dx := make([]float32, M*N), make([]float32, M*K)
		if err := tc32(Hopper, d).Forward(Values(y), Values(x), Values(w), bias, M, K, N); err != nil {
			t.Fatal(err)
		}
		if err := tc32(Hopper, d).DX(Values(dx), Values(dy), Values(w), M, N, K); err != nil {
			t.Fatal(err)
		}
		for _, rows := range [][2]int{{0, 1}, {5, 6}, {36, 37}, {3, 20}, {17, 37}} {
			r0, r1 := rows[0], rows[1]
			ys, dxs := make([]float32, (r1-r0)*N), make([]float32, (r1-r0)*K)
			if err := tc32(Hopper, d).Forward(Values(ys), Values(x[r0*K:r1*K]), Values(w), bias, r1-r0, K, N); err != nil {
				t.Fatal(err)
			}
			sameBits(t, "TC Forward rows", ys, y[r0*N:r1*N])
			if err := tc32(Hopper, d).DX(Values(dxs), Values(dy[r0*N:r1*N]), Values(w), r1-r0, N, K); err != nil {
				t.Fatal(err)
			}
			sameBits(t, "TC DX rows", dxs, dx[r0*K:r1*K])
		}
	}
}

// TestTCWorkerCountDoesNotChangeBits: 1, 2, 3 or all workers, same bits.
func TestTCWorkerCountDoesNotChangeBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	const M, K, N = 40, 300, 150
	x, w := randTCInputs(rng, BF16, M*K, 0, false), randTCInputs(rng, BF16, K*N, 0, false)
	want := make([]float32, M*N)
	if err := (Options{Tier: TensorCore, In: BF16, Out: F32, Model: Hopper, Workers: 1}).Forward(Values(want), Values(x), Values(w), nil, M, K, N); err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{2, 3, 0} {
		got := make([]float32, M*N)
		if err := (Options{Tier: TensorCore, In: BF16, Out: F32, Model: Hopper, Workers: workers}).Forward(Values(got), Values(x), Values(w), nil, M, K, N); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "workers", got, want)
	}
}

// TestTCDWMicroBatchesOnMultiplesOf16MatchOneCall: dW's chain starts at the
// current dW value and steps 16 rows at a time, so micro-batches whose
// boundaries are multiples of 16 rows, applied in order, give the bits of
// one call.
func TestTCDWMicroBatchesOnMultiplesOf16MatchOneCall(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	const M, K, N = 100, 20, 30
	for _, m := range []TCModel{Hopper, Ampere} {
		for _, d := range []DType{BF16, F16} {
			x, dy := randTCInputs(rng, d, M*K, 0, false), randTCInputs(rng, d, M*N, 0, false)
			dw0 := randNormal(rng, K*N)
			one := append([]float32(nil), dw0...)
			if err := tc32(m, d).DW(one, Values(x), Values(dy), M, K, N); err != nil {
				t.Fatal(err)
			}
			for _, cuts := range [][]int{{16}, {32, 48}, {16, 32, 48, 64, 80, 96}, {96}} {
				dw := append([]float32(nil), dw0...)
				lo := 0
				for _, hi := range append(cuts, M) {
					if err := tc32(m, d).DW(dw, Values(x[lo*K:hi*K]), Values(dy[lo*N:hi*N]), hi-lo, K, N); err != nil {
						t.Fatal(err)
					}
					lo = hi
				}
				sameBits(t, "micro-batches", dw, one)
			}
		}
	}
}

// TestTCDWSplitOffMultipleOf16CanDiffer: a micro-batch boundary inside a
// 16-row step zero-fills a partial step and changes the chain; on random
// data some element's bits change.
func TestTCDWSplitOffMultipleOf16CanDiffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 40))
	const M, K, N = 64, 16, 16
	x, dy := randTCInputs(rng, BF16, M*K, 0, false), randTCInputs(rng, BF16, M*N, 0, false)
	one, split := make([]float32, K*N), make([]float32, K*N)
	if err := tc32(Hopper, BF16).DW(one, Values(x), Values(dy), M, K, N); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{0, 10}, {10, M}} {
		if err := tc32(Hopper, BF16).DW(split, Values(x[r[0]*K:r[1]*K]), Values(dy[r[0]*N:r[1]*N]), r[1]-r[0], K, N); err != nil {
			t.Fatal(err)
		}
	}
	diff := 0
	for i := range one {
		if math.Float32bits(one[i]) != math.Float32bits(split[i]) {
			diff++
		}
	}
	if diff == 0 {
		t.Fatal("a split at row 10 gave the bits of one call on every element")
	}
	t.Logf("split at row 10: %d of %d elements differ", diff, len(one))
}

// TestTCZeroFillEqualsExplicitZeroPadding: a reduction whose length is not a
// multiple of 16 gives the bits of the same reduction padded with +0 on both
// operands to the next multiple: the zero products change no alignment and
// add nothing.
func TestTCZeroFillEqualsExplicitZeroPadding(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	const M, K, N, KP = 6, 37, 11, 48
	x, w := randTCInputs(rng, F16, M*K, 0, false), randTCInputs(rng, F16, K*N, 0, false)
	xp, wp := make([]float32, M*KP), make([]float32, KP*N)
	for i := range M {
		copy(xp[i*KP:], x[i*K:(i+1)*K])
	}
	copy(wp, w)
	bias := randNormal(rng, N)
	y, yp := make([]float32, M*N), make([]float32, M*N)
	if err := tc32(Hopper, F16).Forward(Values(y), Values(x), Values(w), bias, M, K, N); err != nil {
		t.Fatal(err)
	}
	if err := tc32(Hopper, F16).Forward(Values(yp), Values(xp), Values(wp), bias, M, KP, N); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "zero-filled tail", y, yp)
}

// TestTCTypedEqualsUpcastTCRound: the typed wrappers are "widen exactly, run
// the tensor-core plan, round once to nearest even at the store".
func TestTCTypedEqualsUpcastTCRound(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	const M, K, N = 9, 50, 21
	for _, d := range []DType{BF16, F16} {
		x, w, dy := randHalf(rng, d, M*K, true), randHalf(rng, d, K*N, true), randHalf(rng, d, M*N, true)
		xf, wf, dyf := make([]float32, M*K), make([]float32, K*N), make([]float32, M*N)
		_ = Upcast(d, xf, x)
		_ = Upcast(d, wf, w)
		_ = Upcast(d, dyf, dy)
		bias := randNormal(rng, N)

		yh, yf, want := make([]uint16, M*N), make([]float32, M*N), make([]uint16, M*N)
		if err := tcTyped(Hopper, d).Forward(Bits(yh), Bits(x), Bits(w), bias, M, K, N); err != nil {
			t.Fatal(err)
		}
		if err := tc32(Hopper, d).Forward(Values(yf), Values(xf), Values(wf), bias, M, K, N); err != nil {
			t.Fatal(err)
		}
		_ = Round(d, want, yf)
		sameHalf(t, "TC Forward typed", yh, want)

		dxh, dxf, wantDX := make([]uint16, M*K), make([]float32, M*K), make([]uint16, M*K)
		if err := tcTyped(Hopper, d).DX(Bits(dxh), Bits(dy), Bits(w), M, N, K); err != nil {
			t.Fatal(err)
		}
		if err := tc32(Hopper, d).DX(Values(dxf), Values(dyf), Values(wf), M, N, K); err != nil {
			t.Fatal(err)
		}
		_ = Round(d, wantDX, dxf)
		sameHalf(t, "TC DX typed", dxh, wantDX)

		dw0 := randNormal(rng, K*N)
		dwh, dwf := append([]float32(nil), dw0...), append([]float32(nil), dw0...)
		if err := tcTyped(Hopper, d).DW(dwh, Bits(x), Bits(dy), M, K, N); err != nil {
			t.Fatal(err)
		}
		if err := tc32(Hopper, d).DW(dwf, Values(xf), Values(dyf), M, K, N); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "TC DW typed", dwh, dwf)
	}
}

func sameHalf(t *testing.T, what string, got, want []uint16) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: element %d = %#04x, want %#04x", what, i, got[i], want[i])
		}
	}
}

// TestTCInvalidArgumentsReturnTypedErrors: a bad model, dtype, value,
// dimension or length is an *ArgError matching its sentinel.
func TestTCInvalidArgumentsReturnTypedErrors(t *testing.T) {
	one := []float32{1}
	h := []uint16{0x3F80}
	badModel := TCModel{Name: "bad", BlockTerms: 5, ExtraBits: 2, MinAlignExp: -133}
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"model", tc32(badModel, BF16).Forward(Values(one), Values(one), Values(one), nil, 1, 1, 1), ErrTCModel},
		{"dtype f32", tc32(Hopper, F32).Forward(Values(one), Values(one), Values(one), nil, 1, 1, 1), ErrDType},
		{"dtype zero", tc32(Hopper, 0).DX(Values(one), Values(one), Values(one), 1, 1, 1), ErrDType},
		{"inexact x", tc32(Hopper, BF16).Forward(Values(one), Values([]float32{1 + 0x1p-10}), Values(one), nil, 1, 1, 1), ErrInexact},
		{"inexact w (f16 overflow)", tc32(Hopper, F16).Forward(Values(one), Values(one), Values([]float32{1e5}), nil, 1, 1, 1), ErrInexact},
		{"inexact dy", tc32(Hopper, F16).DX(Values(one), Values([]float32{0x1p-30}), Values(one), 1, 1, 1), ErrInexact},
		{"inexact dW x", tc32(Hopper, BF16).DW(one, Values([]float32{0.1}), Values(one), 1, 1, 1), ErrInexact},
		{"dim", tc32(Hopper, BF16).Forward(Values(one), Values(one), Values(one), nil, 0, 1, 1), ErrDim},
		{"length", tc32(Hopper, BF16).DW(one, Values(one), Values(one), 1, 2, 1), ErrLength},
		{"typed model", tcTyped(badModel, BF16).Forward(Bits(h), Bits(h), Bits(h), nil, 1, 1, 1), ErrTCModel},
		{"typed dtype", tcTyped(Hopper, F32).DX(Bits(h), Bits(h), Bits(h), 1, 1, 1), ErrDType},
		{"typed length", tcTyped(Hopper, BF16).DW(one, Bits(h), Bits(h), 2, 1, 1), ErrLength},
	}
	for _, c := range cases {
		var ae *ArgError
		if !errors.Is(c.err, c.want) || !errors.As(c.err, &ae) {
			t.Errorf("%s: got %v, want an *ArgError matching %v", c.name, c.err, c.want)
		}
	}
	// NaN and Inf are values of every type; a NaN is accepted whatever its
	// payload.
	nan := []float32{math.Float32frombits(0x7FC01234)}
	if err := tc32(Hopper, F16).Forward(Values(one), Values(nan), Values([]float32{float32(math.Inf(1))}), nil, 1, 1, 1); err != nil {
		t.Errorf("NaN and Inf inputs: %v", err)
	}
}

func benchmarkTCForward(b *testing.B, m TCModel, workers int) {
	rng := rand.New(rand.NewPCG(45, 46))
	const M, K, N = 64, 1024, 128
	x, w := randTCInputs(rng, BF16, M*K, 0, false), randTCInputs(rng, BF16, K*N, 0, false)
	y := make([]float32, M*N)
	o := Options{Tier: TensorCore, In: BF16, Out: F32, Model: m, Workers: workers}
	b.ResetTimer()
	for range b.N {
		if err := o.Forward(Values(y), Values(x), Values(w), nil, M, K, N); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*M*N*(K/16)/b.Elapsed().Seconds()/1e6, "Msteps/s")
}

func BenchmarkTCForwardHopper1Worker(b *testing.B)    { benchmarkTCForward(b, Hopper, 1) }
func BenchmarkTCForwardHopperAllWorkers(b *testing.B) { benchmarkTCForward(b, Hopper, 0) }
func BenchmarkTCForwardAmpere1Worker(b *testing.B)    { benchmarkTCForward(b, Ampere, 1) }

func ExampleOptions_Forward_tensorCore() {
	// bf16 values, a float32 bias, the float32 result: the f32 tier rounds
	// 1.5·3 + 2·0.25 + 0.0011 to nearest; the tensor-core tier cuts the
	// bias to the step's grid 2^-24 (emax = 1, from 1.5·3) and truncates
	// the sum to float32.
	x := []float32{1.5, 2}
	w := []float32{3, 0.25}
	bias := []float32{0.0011}
	ieee, tc := make([]float32, 1), make([]float32, 1)
	if err := (Options{Tier: IEEE, In: BF16, Out: F32}).Forward(Values(ieee), Values(x), Values(w), bias, 1, 2, 1); err != nil {
		fmt.Println(err)
		return
	}
	o := Options{Tier: TensorCore, In: BF16, Out: F32, Model: Hopper}
	if err := o.Forward(Values(tc), Values(x), Values(w), bias, 1, 2, 1); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("f32 %.9g, tc %.9g, one ulp apart: %v\n", ieee[0], tc[0], math.Float32bits(ieee[0])-math.Float32bits(tc[0]) == 1)
	// Stored as bf16 (round to nearest even), both are 5.
	y := make([]uint16, 1)
	xh, wh := make([]uint16, 2), make([]uint16, 2)
	_ = Round(BF16, xh, x)
	_ = Round(BF16, wh, w)
	o.Out = BF16
	if err := o.Forward(Bits(y), Bits(xh), Bits(wh), bias, 1, 2, 1); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(F32FromBF16(y[0]))
	// Output:
	// f32 5.00110006, tc 5.00109959, one ulp apart: true
	// 5
}

func TestTCSlabsCutOnlyLongReductionsOfNarrowOutputs(t *testing.T) {
	for _, c := range []struct{ r, other, slabs, slabLen int }{
		{1, 1, 1, 1},
		{4096, 4096, 1, 4096},
		{8191, 16, 1, 8191},     // below 8192: one slab
		{8192, 4097, 1, 8192},   // under twice the other dimension
		{8192, 8192, 1, 8192},   // the 8192³ shape
		{8192, 4096, 2, 4096},   // min(12288/4096, 8192/3072) = 2
		{11008, 4096, 3, 3840},  // 3 slabs of 3840, the last 3328
		{14336, 4096, 3, 4864},  // the last 4608
		{8200, 40, 2, 4352},     // the slabs' length rounds up: 4352 + 3848
		{20000, 2000, 6, 3584},  // min(6, 6); the last 2080
		{20000, 6000, 2, 10240}, // 12288/6000 = 2
		{20000, 9000, 1, 20000}, // 12288/9000 = 1
		{1 << 20, 1, 316, 3328}, // 341 slabs asked, 316 after rounding the length up
	} {
		s, l := TCSlabs(c.r, c.other)
		if s != c.slabs || l != c.slabLen {
			t.Errorf("TCSlabs(%d, %d) = %d, %d; want %d, %d", c.r, c.other, s, l, c.slabs, c.slabLen)
		}
		if s > 1 && ((s-1)*l >= c.r || s*l < c.r || l%256 != 0) {
			t.Errorf("TCSlabs(%d, %d) = %d, %d: not a cut into slabs of whole 256-term chunks", c.r, c.other, s, l)
		}
	}
	for _, c := range []struct{ m, k, n, slabs, slabLen int }{
		{1023, 8, 8, 1, 1023},       // a short batch: one slab
		{2048, 768, 512, 4, 512},    // 2^21/393216 = 5, 2048/512 = 4
		{2048, 1024, 1025, 1, 2048}, // a master over 2^20 elements
		{2100, 70, 300, 3, 768},
		{65536, 4096, 4096, 1, 65536},
		{1 << 30, 1 << 20, 1 << 20, 1, 1 << 30}, // k·n would overflow 32 bits
	} {
		s, l := TCDWSlabs(c.m, c.k, c.n)
		if s != c.slabs || l != c.slabLen {
			t.Errorf("TCDWSlabs(%d, %d, %d) = %d, %d; want %d, %d", c.m, c.k, c.n, s, l, c.slabs, c.slabLen)
		}
	}
}

// TestTCSlabbedPlansFoldSlabChainsInOrder: where the plan cuts the
// reduction, each element is slab 0's chain from the start value, the later
// slabs' chains from +0, added in ascending order with Add32 — written here
// from the literal models over sub-ranges of the reduction.
func TestTCSlabbedPlansFoldSlabChainsInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	fold := func(parts [][]float32) []float32 {
		v := append([]float32(nil), parts[0]...)
		for _, p := range parts[1:] {
			for i := range v {
				v[i] = Add32(v[i], p[i])
			}
		}
		return v
	}
	for _, d := range []DType{BF16, F16} {
		// Forward and dX: 3×8200×40 (forward 2 slabs of 4352), dX over
		// N = 8200 into K = 40 columns, the same cut.
		const M, K, N = 3, 8200, 40
		S, L := TCSlabs(K, N)
		if S < 2 {
			t.Fatalf("TCSlabs(%d, %d) = %d: the test needs a cut", K, N, S)
		}
		x, w := randTCInputs(rng, d, M*K, 0, false), randTCInputs(rng, d, K*N, -3, false)
		bias := randNormal(rng, N)
		var parts [][]float32
		for s := range S {
			r0, r1 := s*L, min((s+1)*L, K)
			xs := make([]float32, 0, M*(r1-r0))
			for i := range M {
				xs = append(xs, x[i*K+r0:i*K+r1]...)
			}
			b := bias
			if s > 0 {
				b = nil
			}
			parts = append(parts, modelTCForward(Hopper, d, xs, w[r0*N:r1*N], b, M, r1-r0, N))
		}
		y := make([]float32, M*N)
		if err := tc32(Hopper, d).Forward(Values(y), Values(x), Values(w), bias, M, K, N); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "slabbed TC Forward", y, fold(parts))

		// dX: dY[M, 8200] @ W2[40, 8200]ᵀ.
		const K2, N2 = 40, 8200
		dy, w2 := randTCInputs(rng, d, M*N2, 0, false), randTCInputs(rng, d, K2*N2, -3, false)
		parts = parts[:0]
		for s := range S {
			r0, r1 := s*L, min((s+1)*L, N2)
			dys, ws := make([]float32, 0, M*(r1-r0)), make([]float32, 0, K2*(r1-r0))
			for i := range M {
				dys = append(dys, dy[i*N2+r0:i*N2+r1]...)
			}
			for k := range K2 {
				ws = append(ws, w2[k*N2+r0:k*N2+r1]...)
			}
			parts = append(parts, modelTCDX(Hopper, d, dys, ws, M, r1-r0, K2))
		}
		dx := make([]float32, M*K2)
		if err := tc32(Hopper, d).DX(Values(dx), Values(dy), Values(w2), M, N2, K2); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "slabbed TC DX", dx, fold(parts))

		// dW: 2100 batch rows into a 7×30 master: 3 slabs of 768, slab 0
		// chained onto the master.
		const MW, KW, NW = 2100, 7, 30
		SW, LW := TCDWSlabs(MW, KW, NW)
		if SW < 2 {
			t.Fatalf("TCDWSlabs(%d, %d, %d) = %d: the test needs a cut", MW, KW, NW, SW)
		}
		xw, dyw := randTCInputs(rng, d, MW*KW, 0, false), randTCInputs(rng, d, MW*NW, 0, false)
		dw0 := randNormal(rng, KW*NW)
		parts = parts[:0]
		for s := range SW {
			r0, r1 := s*LW, min((s+1)*LW, MW)
			start := make([]float32, KW*NW)
			if s == 0 {
				copy(start, dw0)
			}
			parts = append(parts, modelTCDW(Hopper, d, start, xw[r0*KW:r1*KW], dyw[r0*NW:r1*NW], r1-r0, KW, NW))
		}
		dw := append([]float32(nil), dw0...)
		if err := tc32(Hopper, d).DW(dw, Values(xw), Values(dyw), MW, KW, NW); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "slabbed TC DW", dw, fold(parts))
	}
}
